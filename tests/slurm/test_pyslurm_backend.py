"""The pyslurm backend on a fake with pyslurm 25.11's attribute names and value shapes."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

from slurmrl.errors import SlurmError
from slurmrl.slurm.elastic import GpuAsk
from slurmrl.slurm.run import CommandResult


def _load_fake():
    spec = importlib.util.spec_from_file_location("pyslurm", Path(__file__).with_name("fake_pyslurm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch):
    mod = _load_fake()
    mod.Nodes.items = [
        mod.Node(
            name="node01",
            node_state="MIXED",
            partitions="gpu,debug",
            gres="gpu:v100:8",
            cpus=64,
            alloc_cpus=6,
            real_memory=256000,
            alloc_memory=10240,
            features="fast,node01",
            features_act="fast,node01",
            # Typed and untyped gres/gpu tracked: pyslurm's allocated_gres lists 3 GPUs twice.
            alloc_tres_fmt_str="cpu=6,mem=10G,node=1,gres/gpu=3,gres/gpu:v100=3",
        ),
        mod.Node(
            name="node02",
            node_state="IDLE+DRAIN",
            partitions="gpu",
            gres="gpu:v100:8",
            cpus=64,
            real_memory=256000,
            reason="maint",
            features="slow",
        ),
    ]
    mod.Jobs.items = [
        mod.Job(
            job_id=4,
            name="run",
            job_state="RUNNING",
            nodes="node01",
            tres_per_node="gres/gpu:3",
            submit_time=10,
            start_time=20,
            time_limit=60,
            tres_alloc_str="cpu=6,gres/gpu=3",
            gres_detail={"node01": "gpu:v100:3(IDX:0-2)"},
            restart_cnt=2,
        ),
        # --gpus=2: tres_per_job is lost by pyslurm; requested_tres has it (gres/gpu tracked).
        mod.Job(
            job_id=5,
            name="gpus",
            tres_per_job="gres/gpu:2",
            tres_req_str="cpu=1,mem=1G,node=1,gres/gpu=2",
            submit_time=30,
            exc_nodes="node02",
            features="fast&big",
            prefer="fast",
            shared=0,
            pn_min_cpus=4,
            num_cpus=4,
            pn_min_memory=8192,
            mem_per_cpu=False,
            num_nodes=1,
            max_nodes=3,
            partition="gpu,debug",
        ),
        mod.Job(
            job_id=6,
            name="dep",
            tres_per_node="gres/gpu:v100:1",
            submit_time=31,
            dependency="afterok:4?afterany:5(unfulfilled)?singleton",
            state_reason="Dependency",
        ),
        # Array 7: task 0 split off and running as job 8; tasks 1-2 still pending in the record 7.
        mod.Job(job_id=7, array_job_id=7, array_task_str="1-2%1", tres_per_node="gres/gpu:1", submit_time=40),
        mod.Job(
            job_id=8,
            array_job_id=7,
            array_task_id=0,
            job_state="RUNNING",
            nodes="node01",
            tres_per_node="gres/gpu:1",
            submit_time=40,
            start_time=41,
            gres_detail={"node01": "gpu:v100:1(IDX:3)"},
        ),
    ]
    monkeypatch.setitem(sys.modules, "pyslurm", mod)
    return mod


def _snapshot():
    from slurmrl.slurm.pyslurm_backend import PyslurmBackend

    return PyslurmBackend(conf="/nonexistent/slurm.conf").snapshot()


def test_fake_mirrors_pyslurm_shapes(fake) -> None:
    job5 = next(j for j in fake.Jobs.items if j.id == 5)
    assert job5.tres_per_job is None  # "gres/gpu:2" is not key=value
    assert job5.requested_tres.gres["gpu"].count == 2
    job8 = next(j for j in fake.Jobs.items if j.id == 8)
    assert job8.array_task_id is None and job8.array_id == 7  # task 0 reads as unset
    assert next(j for j in fake.Jobs.items if j.id == 4).gres_per_node == {"gres/gpu": 3}
    assert fake.Nodes.items[0].allocated_gres == {"gpu": 3, "gpu:v100": 3}
    with pytest.raises(AttributeError):
        _ = job5.tres_per_node_text  # no invented attributes


def test_restart_counts_as_pyslurm_gives_them(fake) -> None:
    jobs = {j.job_id: j for j in _snapshot().jobs}
    assert (jobs["4"].restarts, jobs["5"].restarts) == (2, 0)
    fake.Jobs.items.append(fake.Job(job_id=9, restart_cnt=fake.NO_VAL16, submit_time=50))
    assert {j.job_id: j for j in _snapshot().jobs}["9"].restarts == 0  # NO_VAL16 reads as 0 (u16_parse)


def test_gpus_per_job_and_gpu_use_from_layouts(fake) -> None:
    snap = _snapshot()
    jobs = {j.job_id: j for j in snap.jobs}
    assert (jobs["5"].gpus.total, jobs["5"].gpus.source) == (2, "tres_req_str")
    node01 = next(n for n in snap.nodes if n.name == "node01")
    assert node01.used_indices == (0, 1, 2, 3)  # from the jobs, not the doubled allocated_gres
    view = snap.to_view()
    assert view.pool.free_gpus(0) == [4, 5, 6, 7] and view.pool.free_gpus(1) == []
    assert not snap.warnings or all("AccountingStorageTRES" not in w for w in snap.warnings)


def test_untracked_gpus_warn(fake) -> None:
    fake.Nodes.items[0]._raw["alloc_tres_fmt_str"] = "cpu=6,mem=10G,node=1"
    assert any("AccountingStorageTRES" in w for w in _snapshot().warnings)


def test_array_task_zero_and_dependencies(fake) -> None:
    jobs = {j.job_id: j for j in _snapshot().jobs}
    assert "7_0" in jobs and jobs["7_0"].array_task == "0" and jobs["7_0"].is_running
    assert jobs["7_[1-2]"].task_ids() == ["7_1", "7_2"]
    assert jobs["6"].dependency == "afterany:5(unfulfilled)?afterok:4?singleton"  # in pyslurm's kind order
    assert jobs["6"].eligible is False
    assert jobs["4"].dependency == "" and jobs["4"].time_limit == 3600


def test_limits(fake) -> None:
    snap = _snapshot()
    job = next(j for j in snap.jobs if j.job_id == "5")
    assert job.partitions == ("gpu", "debug") and job.excluded_nodes == ("node02",)
    assert (job.constraint, job.prefer, job.exclusive) == ("fast&big", "fast", True)
    assert (job.cpus_per_node, job.memory_per_node_mb, job.num_nodes, job.max_nodes) == (4, 8192, 1, 3)
    assert job.min_cpus == 4  # NumCPUs, given back after an elastic resize
    node01 = next(n for n in snap.nodes if n.name == "node01")
    assert node01.features == frozenset({"fast", "node01"})
    assert (node01.cpus_alloc, node01.memory_alloc_mb) == (6, 10240)
    assert snap.pin_support.prefer and not snap.pin_support.node_name_features


def test_writes_use_configured_conf(fake, tmp_path: Path) -> None:
    from slurmrl.slurm.pyslurm_backend import PyslurmBackend

    seen: list[tuple[list[str], dict | None]] = []

    def runner(cmd, *, timeout=30, env=None):
        seen.append((list(cmd), env))
        return CommandResult(tuple(cmd), 0, "", "", 0.0)

    backend = PyslurmBackend(conf=tmp_path / "slurm.conf")
    backend._writer._run = runner
    backend.set_site_factor("5", 10)
    backend.set_nice("5", 50)
    backend.set_prefer("5", "node01")
    backend.update_many(["5", "6"], "site_factor", 0)
    backend.set_gpus("5", GpuAsk(4, 2, "v100", 2), ("prefer", "node03|node04"))
    env = {"SLURM_CONF": str(tmp_path / "slurm.conf")}
    assert seen == [
        (["scontrol", "update", "JobId=5", "SiteFactor=10"], env),
        (["scontrol", "update", "JobId=5", "Nice=50"], env),
        (["scontrol", "update", "JobId=5", "Prefer=node01"], env),
        (["scontrol", "update", "JobId=5,6", "SiteFactor=0"], env),
        (["scontrol", "update", "JobId=5", "Gres=gpu:v100:4", "NumNodes=2-2", "Prefer=node03|node04"], env),
    ]


def test_pyslurm_loads_are_counted_with_the_runners_calls(fake) -> None:
    from slurmrl.slurm.run import STATS

    def calls(label: str) -> tuple[int, int]:
        one = STATS.by_command.get(label)
        return (one.calls, one.failures) if one else (0, 0)

    before = calls("pyslurm Jobs.load"), calls("pyslurm Nodes.load")
    _snapshot()
    after = calls("pyslurm Jobs.load"), calls("pyslurm Nodes.load")
    assert after == ((before[0][0] + 1, before[0][1]), (before[1][0] + 1, before[1][1]))
    fake.Jobs.fail = True
    with pytest.raises(SlurmError):
        _snapshot()
    assert calls("pyslurm Jobs.load") == (before[0][0] + 2, before[0][1] + 1)


def test_load_failure_is_reported(fake) -> None:
    fake.Jobs.fail = True
    with pytest.raises(SlurmError, match="pyslurm could not load"):
        _snapshot()


# Accounting: ended jobs read back through pyslurm.db, as the cli backend reads them through sacct.
T0 = 1_795_000_000  # mid-November 2026, away from any daylight-saving change
SINCE, UNTIL = T0, T0 + 7200


@pytest.fixture()
def accounting(fake):
    """slurmdbd records in and around the window [T0, T0 + 2h]."""
    db, f = fake.db, fake
    fake.TRES_IDS[1003] = ("gres", "gpu:nv:a100")  # a GPU name pyslurm's GPU.from_tres cannot split
    db.Jobs.items = [
        db.Job(
            jobid=101,
            jobname="train model=resnet50",
            account="vision",
            partition="gpu",
            submit=T0,
            start=T0 + 300,
            end=T0 + 3900,
            timelimit=120,
            tres_alloc_str="1=2,2=2048,4=1,5=2,1001=2",
            derived_es="gpus=1-4",
            admin_comment="slurmrl: placed",
        ),
        # Only gres/gpu:a100 tracked: the count comes from the typed entry alone.
        db.Job(
            jobid=102,
            uid=1001,
            state=f.JOB_TIMEOUT,
            submit=T0,
            start=T0 + 60,
            end=T0 + 1800,
            timelimit=30,
            tres_alloc_str="1=8,4=2,1002=4",
        ),
        db.Job(jobid=103, state=f.JOB_CANCELLED, submit=T0, end=T0 + 600),  # cancelled while pending
        db.Job(jobid=104, state=f.JOB_RUNNING, submit=T0, start=T0 + 100, tres_alloc_str="4=1,1001=1"),
        db.Job(jobid=105, state=f.JOB_REQUEUE, submit=T0, start=T0 + 200, end=T0 + 900, tres_alloc_str="4=1"),
        # Array task 0 (pyslurm reads the task id as None), both gres/gpu and gres/gpu:a100 tracked.
        db.Job(
            jobid=107,
            array_job_id=106,
            array_task_id=0,
            submit=T0,
            start=T0 + 10,
            end=T0 + 1800,
            timelimit=f.INFINITE,
            tres_alloc_str="1=1,4=1,1001=1,1002=1",
        ),
        db.Job(jobid=108, submit=T0, start=T0 + 10, end=T0 + 10_000, tres_alloc_str="4=1"),  # after until
        # Ended before since: slurmdbd does not pick it for the window.
        db.Job(jobid=109, submit=T0 - 900, start=T0 - 800, end=T0 - 100, tres_alloc_str="4=1"),
        db.Job(
            jobid=110,
            het_job_id=110,
            het_job_offset=0,
            state=f.JOB_FAILED,
            submit=T0,
            start=T0 + 5,
            end=T0 + 2000,
            tres_alloc_str="4=1",
        ),
        db.Job(
            jobid=111,
            het_job_id=110,
            het_job_offset=1,
            state=f.JOB_FAILED,
            submit=T0,
            start=T0 + 5,
            end=T0 + 2000,
            tres_alloc_str="4=3,1001=6",
        ),
    ]
    return fake


def test_fake_db_mirrors_pyslurm_shapes(accounting) -> None:
    db, f = accounting.db, accounting
    task0 = db.Job(jobid=107, array_job_id=106, array_task_id=0)
    assert (task0.array_id, task0.array_task_id, task0.heterogeneous_offset) == (106, None, f.NO_VAL)
    bare = db.Job(jobid=1, timelimit=f.NO_VAL)
    assert (bare.time_limit, bare.start_time, bare.allocated_tres, bare.num_nodes) == (
        "PartitionLimit",
        None,
        None,
        0,
    )
    assert db.Job(jobid=2, timelimit=f.INFINITE, uid=4242).time_limit is None
    assert db.Job(jobid=2, uid=4242).user_name == "4242"
    assert db.Job(jobid=3, state=f.JOB_REQUEUE).state == "REQUEUED"
    assert sorted(db.Job(jobid=4, tres_alloc_str="1=2,1001=2,1002=2").allocated_tres.gres) == [
        "gpu",
        "gpu:a100",
    ]
    with pytest.raises(AttributeError):
        db.JobFilter(start=1)  # no invented filter fields
    with pytest.raises(ValueError):
        db.Jobs.load(db.JobFilter(start_time=1.5))  # a float is not a timestamp to pyslurm
    assert f.slurmctld.Config.load().accounting_storage_tres[-1] == "gres/gpu"


def _finished(since: float = SINCE, until: float = UNTIL):
    from slurmrl.slurm.pyslurm_backend import PyslurmBackend

    return PyslurmBackend(conf="/nonexistent/slurm.conf").finished_jobs(since, until)


def test_ended_jobs_come_back_oldest_end_first_with_sacct_fields(accounting) -> None:
    read = _finished()
    assert [j.job_id for j in read.jobs] == ["102", "106_0", "110+0", "110+1", "101"]
    assert read.unreadable == 0 and read.gpus_tracked
    job = read.jobs[-1]
    assert (job.name, job.user, job.account, job.partition, job.state) == (
        "train model=resnet50",
        "alice",
        "vision",
        "gpu",
        "COMPLETED",
    )
    assert (job.submit_time, job.start_time, job.end_time) == (T0, T0 + 300, T0 + 3900)
    assert (job.time_limit, job.num_nodes, job.gpus.total, job.gpus.gpu_type) == (7200.0, 1, 2, "")
    assert (job.comment, job.admin_comment, job.model) == ("gpus=1-4", "slurmrl: placed", "resnet50")
    by_id = {j.job_id: j for j in read.jobs}
    assert by_id["102"].user == "bob" and by_id["102"].state == "TIMEOUT" and by_id["102"].num_nodes == 2
    assert by_id["106_0"].time_limit is None  # unlimited
    assert by_id["110+1"].state == "FAILED" and by_id["110+1"].gpus.total == 6


def test_jobs_that_did_not_run_and_end_are_left_out(accounting) -> None:
    ids = {j.job_id for j in _finished().jobs}
    assert not ids & {"103", "104", "105"}  # cancelled before it started, running, requeued
    assert not ids & {"108", "109"}  # ended after until / before since


@pytest.mark.parametrize(
    ("tres", "total", "kind"),
    [
        ("1=4,4=1,1001=4", 4, ""),  # gres/gpu
        ("1=4,4=1,1002=2", 2, "a100"),  # only gres/gpu:a100
        ("1=4,4=1,1001=2,1002=2", 2, "a100"),  # both: counted once
        ("1=4,2=4096,4=1", 0, ""),
        ("", 0, ""),
    ],
)
def test_gpu_counts_come_from_the_allocated_tres(accounting, tres: str, total: int, kind: str) -> None:
    accounting.db.Jobs.items = [
        accounting.db.Job(jobid=1, submit=T0, start=T0, end=T0 + 60, tres_alloc_str=tres)
    ]
    (job,) = _finished().jobs
    assert (job.gpus.total, job.gpus.gpu_type) == (total, kind)


def test_gpus_are_tracked_only_where_accounting_storage_tres_lists_gres_gpu(accounting) -> None:
    accounting.slurmctld.Config.raw["accounting_storage_tres"] = (
        "cpu,mem,energy,node,billing,fs/disk,vmem,pages"
    )
    assert _finished().gpus_tracked is False
    accounting.slurmctld.Config.raw["accounting_storage_tres"] = "cpu,mem,node,gres/gpu:a100"
    assert _finished().gpus_tracked is True


def test_the_filter_asks_for_the_window_in_whole_seconds_for_every_user(accounting) -> None:
    _finished(SINCE + 0.7, UNTIL + 0.2)
    cond = accounting.db.Jobs.last_filter
    assert (cond.start_time, cond.end_time) == (SINCE, UNTIL)
    assert cond.users is None and cond.clusters is None  # every user, the local cluster


def test_a_record_pyslurm_cannot_convert_is_counted(accounting) -> None:
    db = accounting.db
    db.Jobs.items.append(db.Job(jobid=120, submit=T0, start=T0, end=T0 + 60, tres_alloc_str="4=1,1003=1"))
    read = _finished()
    assert read.unreadable == 1 and "120" not in {j.job_id for j in read.jobs} and len(read.jobs) == 5


def test_accounting_failures_are_reported_and_counted(accounting) -> None:
    from slurmrl.slurm.run import STATS

    accounting.db.Jobs.fail = True
    before = STATS.by_command.get("pyslurm db.Jobs.load")
    failures = before.failures if before else 0
    with pytest.raises(SlurmError, match="pyslurm could not read accounting"):
        _finished()
    assert STATS.by_command["pyslurm db.Jobs.load"].failures == failures + 1
    accounting.db.Jobs.fail, accounting.slurmctld.Config.fail = False, True
    with pytest.raises(SlurmError, match="slurmctld.Config.load"):
        _finished()


def _sacct_line(fake, j) -> str:
    """One db record as ``sacct -a -X -P`` prints it in SACCT_FIELDS order (print.c, slurmdb_get_job_id_str)."""
    from slurmrl.slurm.accounting import DELIMITER, SACCT_FIELDS

    r = j._raw

    def when(t: int) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) if t else "Unknown"

    if r["array_task_id"] != fake.NO_VAL:
        job_id = f"{r['array_job_id']}_{r['array_task_id']}"
    elif r["het_job_id"]:
        job_id = f"{r['het_job_id']}+{r['het_job_offset']}"
    else:
        job_id = str(r["jobid"])
    state = fake.job_state_string(r["state"])
    limit = {fake.NO_VAL: "Partition_Limit", fake.INFINITE: "UNLIMITED"}.get(
        r["timelimit"], str(r["timelimit"])
    )
    tres = []
    for key, count in (part.split("=") for part in (r["tres_alloc_str"] or "").split(",") if part):
        typ, name = fake.TRES_IDS[int(key)]
        tres.append(f"{typ}/{name}={count}" if name else f"{typ}={count}{'M' if typ == 'mem' else ''}")
    fields = {
        "JobID": job_id,
        "User": fake.PASSWD.get(r["uid"], str(r["uid"])),
        "Account": r["account"] or "",
        "Partition": r["partition"] or "",
        "State": f"{state} by 0" if state == "CANCELLED" else state,
        "Submit": when(r["submit"]),
        "Start": when(r["start"]),
        "End": when(r["end"]),
        "TimelimitRaw": limit,
        "NNodes": str(fake._tres_count(r["tres_alloc_str"], 4)),
        "AllocTRES": ",".join(tres),
        "JobName": r["jobname"] or "",
        "Comment": r["derived_es"] or "",
        "AdminComment": r["admin_comment"] or "",
    }
    return DELIMITER.join(fields[f] for f in SACCT_FIELDS)


def test_cli_and_pyslurm_backends_read_the_same_accounting(accounting) -> None:
    from slurmrl.slurm.cli_backend import CliBackend

    db = accounting.db
    # sacct sees the records slurmdbd picks for the same window.
    picked = db.Jobs.load(db.JobFilter(start_time=SINCE, end_time=UNTIL)).values()
    sacct = "\n".join(_sacct_line(accounting, j) for j in picked) + "\n"
    config = "AccountingStorageTRES   = " + accounting.slurmctld.Config.raw["accounting_storage_tres"] + "\n"

    def runner(cmd, *, timeout=30, env=None):
        out = config if cmd[:3] == ["scontrol", "show", "config"] else sacct
        assert cmd[0] in ("scontrol", "sacct"), cmd
        return CommandResult(tuple(cmd), 0, out, "", 0.0)

    cli = CliBackend(runner=runner).finished_jobs(SINCE, UNTIL)
    assert len(cli.jobs) == 5
    assert _finished() == cli
