"""The pyslurm backend on a fake with pyslurm 25.11's attribute names and value shapes."""

from __future__ import annotations

import importlib.util
import sys
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
