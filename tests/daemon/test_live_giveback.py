"""Exact give-backs, against the local Slurm 22.05 test cluster (contrib/testcluster).

Each test sets up what an admin, a user or a job_submit plugin would have set, lets
the daemon change the job, gives everything back and reads Slurm to see that the
job is as it was. Run with ``eval "$(contrib/testcluster/testcluster env)";
pytest -m slurm tests/daemon/test_live_giveback.py`` under the cluster's lock.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import live_slurm  # loaded by tests/conftest.py
import pytest
from live_slurm import cancel, daemon_config, every_node, fill_nodes, site, slurm

from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.loop import Daemon, make_backend
from slurmrl.daemon.metrics import DaemonMetrics

pytestmark = pytest.mark.slurm
ACCOUNT = f"slurmrl-g{os.getpid()}"
FILL = f"{ACCOUNT}-fill"


def sbatch(*args: str, account: str = ACCOUNT) -> str:
    return live_slurm.sbatch(*args, account=account)


@pytest.fixture(scope="module", autouse=True)
def cleanup():
    live_slurm.clean_up(heal=True)  # GPUs an earlier module's controller crash left counted
    yield
    live_slurm.clean_up(heal=True)


def make_config(tmp: Path, **kw) -> DaemonConfig:
    return daemon_config(tmp, ACCOUNT, **kw)


def task_ids(array: str) -> dict[str, str]:
    """Array task id (``A_T``) -> its numeric job id, as ``squeue`` prints them."""
    out = slurm("squeue", "-h", "-r", "-j", array, "-o", "%i %A")
    assert out.returncode == 0, out.stderr
    return dict(line.split() for line in out.stdout.splitlines() if line.strip())


def test_array_tasks_get_an_admins_site_factor_back(tmp_path: Path) -> None:
    fill = fill_nodes(every_node(), FILL)
    array = sbatch("--array=1-3", "-N1", "--gres=gpu:8", "-t", "30")
    tasks = [f"{array}_{t}" for t in (1, 2, 3)]
    for k, task in enumerate(tasks):  # an admin's (or a job_submit plugin's) values, split off the array
        update = slurm("scontrol", "update", f"JobId={task}", f"SiteFactor={700 + k}")
        assert update.returncode == 0, update.stderr
    ids = task_ids(array)
    assert set(ids) == set(tasks) and any(ids[t] != array for t in tasks), ids
    live_slurm.wait_for(lambda: all(site(ids[t]) != -1 for t in tasks), 30, "sprio to list tasks")
    before = {t: site(ids[t]) for t in tasks}
    assert before == {t: 700 + k for k, t in enumerate(tasks)}, before
    cfg = make_config(tmp_path)
    d = Daemon(cfg, make_backend(cfg), metrics=DaemonMetrics())
    assert d.cycle().error is None
    changed = {t: site(ids[t]) for t in tasks}
    assert changed != before, changed  # the daemon reordered the tasks
    assert {t: d.record.get(t).orig_site_factor for t in tasks if d.record.get(t)} == {
        t: before[t] for t in tasks if d.record.get(t)
    }
    assert d.revert().remaining == 0
    d.close()
    assert {t: site(ids[t]) for t in tasks} == before
    cancel(fill + [ids[t] for t in tasks])


class Counting:
    """A backend that notes each ``update_many`` call and whether Slurm took it."""

    def __init__(self, inner) -> None:
        self.inner, self.batches = inner, []

    def update_many(self, job_ids, name, value) -> None:
        try:
            self.inner.update_many(job_ids, name, value)
        except Exception as exc:
            self.batches.append((name, len(job_ids), type(exc).__name__))
            raise
        self.batches.append((name, len(job_ids), "ok"))

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def test_node_lists_are_given_back_one_job_per_call_and_other_fields_in_lists(tmp_path: Path) -> None:
    from slurmrl.daemon.apply import BATCH, apply_changes
    from slurmrl.daemon.plan import restore_changes
    from slurmrl.daemon.record import Record, Touched

    jobs = [sbatch("-H", "-N1", "--gres=gpu:8", "-t", "30") for _ in range(3)]
    record = Record()
    for jid in jobs:  # as the daemon leaves them: a pin and a SiteFactor
        update = slurm("scontrol", "update", f"JobId={jid}", "ReqNodeList=node01", "SiteFactor=5")
        assert update.returncode == 0, update.stderr
        record.put(Touched(jid, 0.0, site_factor=5, nodes=("node01",), nodes_since=0.0))
    cfg = make_config(tmp_path)
    backend = Counting(make_backend(cfg))
    changes = [ch for jid in jobs for ch in restore_changes(record.get(jid), None, "test")]
    result = apply_changes(backend, changes, record, time.time(), batch=BATCH)
    assert result.failed == () and result.vanished == () and record.jobs == {}, result
    assert backend.batches == [("site_factor", 3, "ok")], backend.batches
    assert [live_slurm.show(j)["ReqNodeList"] for j in jobs] == ["(null)"] * 3
    cancel(jobs)


def test_priority_mode_gives_the_priority_back_without_a_hold(tmp_path: Path) -> None:
    fill = fill_nodes(every_node(), FILL)
    jobs = [sbatch("-N1", "--gres=gpu:8", "-t", "30"), sbatch("-N1", "--gres=gpu:8", "-t", "30", "--nice=40")]
    live_slurm.wait_for(lambda: all(site(j) is not None for j in jobs), 30, "sprio to list the jobs")

    def aged() -> bool:
        fields = [live_slurm.show(j) for j in jobs]
        return all(f["EligibleTime"] != "Unknown" and f["AccrueTime"] != "Unknown" for f in fields)

    live_slurm.wait_for(aged, 60, "the jobs' eligible and accrue times")
    before = {j: live_slurm.show(j) for j in jobs}
    cfg = make_config(tmp_path, mode="priority", max_site_factor=100, priority_base=50_000)
    d = Daemon(cfg, make_backend(cfg), metrics=DaemonMetrics())
    assert d.cycle().error is None
    assert all(int(live_slurm.show(j)["Priority"]) >= 50_000 for j in jobs)
    time.sleep(1.5)  # a hold would now move EligibleTime to a later second
    assert d.revert().remaining == 0
    d.close()
    after = {j: live_slurm.show(j) for j in jobs}
    for j in jobs:
        # A hold resets the job's begin time (and its accrue time where limits are enforced):
        # _hold_job_rec in src/slurmctld/job_mgr.c. The job's age must survive the give-back.
        assert after[j]["EligibleTime"] == before[j]["EligibleTime"], (before[j], after[j])
        assert after[j]["AccrueTime"] == before[j]["AccrueTime"], (before[j], after[j])
        assert after[j]["Nice"] == before[j]["Nice"] and int(after[j]["Priority"]) < 50_000, after[j]
    cancel(fill + jobs)


LAYOUT = ("TresPerNode", "NumNodes", "NumCPUs", "NumTasks", "NtasksPerN:B:S:C", "ReqNodeList")


def layout(jid: str) -> dict[str, str]:
    """A job's request and task layout as ``scontrol -o show job`` prints them."""
    out = slurm("scontrol", "-o", "show", "job", jid)
    assert out.returncode == 0, out.stderr
    fields = {k: v for k, v in (w.split("=", 1) for w in out.stdout.split() if "=" in w) if k in LAYOUT}
    if "TresPerNode" in fields:  # 22.05 spells the GPU request gres:gpu:8; 23.02 and later gres/gpu:8
        fields["TresPerNode"] = fields["TresPerNode"].replace("gres/", "gres:", 1)
    return fields


class Recorded:
    """A backend whose ``scontrol update`` command lines are kept, in order."""

    def __init__(self, inner) -> None:
        self.inner, self.updates = inner, []
        run = inner._run

        def runner(cmd, **kw):
            if list(cmd[:2]) == ["scontrol", "update"]:
                self.updates.append(list(cmd[2:]))
            return run(cmd, **kw)

        inner._run = runner

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def resize(tmp_path: Path, job: str, nodes: tuple[str, ...], per_node: int) -> Recorded:
    """One daemon cycle that starts ``job`` (held, shown to the daemon as waiting) on ``per_node``
    free GPUs of each of ``nodes``; the backend that sent it."""
    cfg = make_config(tmp_path)
    total = live_slurm.node_gpus()
    reader = make_backend(cfg)

    def free() -> bool:
        # An earlier test's fillers may still be releasing them: Slurm frees a job's GPUs
        # (AllocTRES) while the job still shows COMPLETING on its node, which the daemon's
        # view counts as busy until the job is gone.
        view = reader.snapshot().to_view()
        index = view.cluster.node_index
        return all(
            total[n] - live_slurm.gpus_used(n) >= per_node and view.pool.free_count[index[n]] >= per_node
            for n in nodes
        )

    live_slurm.wait_for(free, 60, f"{per_node} free GPUs on each of {', '.join(nodes)}")
    backend = Recorded(make_backend(cfg))
    policy = live_slurm.StartOnFree({job: nodes}, per_node)
    d = Daemon(cfg, live_slurm.Released(backend, {job}), policy=policy, metrics=DaemonMetrics())
    out = d.cycle()
    d.close()
    assert out.error is None and not out.plan.refused, (out.error, out.plan.refused)
    return backend


def give_back(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    d = Daemon(cfg, make_backend(cfg), metrics=DaemonMetrics())  # as `slurmrl daemon revert`
    assert d.revert().remaining == 0
    d.close()


def test_a_job_grown_to_more_nodes_gets_its_tasks_and_cpus_back(tmp_path: Path) -> None:
    # Growing min_nodes raises num_tasks to the node count and min_cpus to tasks x CPUs per task;
    # shrinking lowers neither (_update_job in src/slurmctld/job_mgr.c).
    job = sbatch(
        "-H",
        "--nodes=1",
        "--ntasks-per-node=1",
        "-c32",
        "--gpus-per-node=8",
        "-t",
        "30",
        "--comment=gpus=8-16",
    )
    before = layout(job)
    assert before["NumTasks"] == "1" and before["NumCPUs"] == "32", before
    resize(tmp_path, job, ("node02", "node03"), 8)
    grown = layout(job)
    assert (grown["NumNodes"], grown["NumTasks"], grown["NumCPUs"]) == ("2-2", "2", "64"), grown
    assert grown["ReqNodeList"] == "node02,node03", grown
    give_back(tmp_path)
    assert layout(job) == before
    cancel([job])


@pytest.mark.parametrize("request_nodes", [("--nodes=1-3",), ()], ids=["max-3", "no-N"])
def test_a_grown_job_gets_its_node_minimum_and_maximum_back(
    tmp_path: Path, request_nodes: tuple[str, ...]
) -> None:
    # From 23.02 a plain NumNodes=K sets the maximum to K too (verify_node_count), so the daemon
    # writes the maximum out (K-M, or K-0 for none); the job must read back as submitted.
    job = sbatch("-H", *request_nodes, "--gpus-per-node=8", "-t", "30", "--comment=gpus=8-16")
    before = layout(job)["NumNodes"]
    resize(tmp_path, job, ("node02", "node03"), 8)
    assert layout(job)["NumNodes"].startswith("2"), layout(job)  # it was grown
    give_back(tmp_path)
    assert layout(job)["NumNodes"] == before
    cancel([job])


def test_a_job_with_one_rank_per_gpu_keeps_one_rank_per_gpu_and_gets_its_layout_back(tmp_path: Path) -> None:
    job = sbatch(
        "-H", "--nodes=1", "--ntasks-per-node=8", "--gpus-per-node=8", "-t", "30", "--comment=gpus=4-8"
    )
    before = layout(job)
    assert before["NumTasks"] == "8" and before["NtasksPerN:B:S:C"].startswith("8:"), before
    resize(tmp_path, job, ("node02",), 4)
    shrunk = layout(job)
    assert shrunk["TresPerNode"] == "gres:gpu:4" and shrunk["NumTasks"] == "4", shrunk
    assert shrunk["NtasksPerN:B:S:C"].startswith("4:"), shrunk  # not 8 ranks on 4 GPUs
    give_back(tmp_path)
    assert layout(job) == before
    cancel([job])


def test_the_gpu_request_and_its_pin_go_to_slurm_in_one_update(tmp_path: Path) -> None:
    job = sbatch("-H", "-N1", "--gres=gpu:8", "-t", "30", "--comment=gpus=2-8")
    backend = resize(tmp_path, job, ("node02", "node03"), 2)
    mine = [u for u in backend.updates if u[0] == f"JobId={job}"]
    sizing = [u for u in mine if any(w.startswith(("Gres=", "ReqNodeList=")) for w in u)]
    assert len(sizing) == 1, backend.updates  # a second update could start the job elsewhere first
    assert {w.split("=", 1)[0] for w in sizing[0]} >= {"Gres", "NumNodes", "ReqNodeList"}, sizing
    assert layout(job)["ReqNodeList"] == "node02,node03" and layout(job)["TresPerNode"] == "gres:gpu:2"
    give_back(tmp_path)
    assert layout(job)["ReqNodeList"] == "(null)" and layout(job)["TresPerNode"] == "gres:gpu:8"
    cancel([job])


def test_a_grow_past_a_qos_limit_is_refused_before_slurm_would_take_it(tmp_path: Path) -> None:
    # Slurm takes an Operator's update past the job's QOS limit (no accounting check for an
    # Operator in _update_job) and marks its node and CPU counts as admin-set for good.
    qos = f"{ACCOUNT}-n1"
    added = slurm("sacctmgr", "-i", "add", "qos", qos, "MaxTRESPerJob=node=1")
    assert added.returncode == 0, added.stderr
    try:
        job = sbatch("-H", "-N1", "--gres=gpu:4", f"--qos={qos}", "-t", "30", "--comment=gpus=2-8")
        before = layout(job)
        cfg = make_config(tmp_path)
        policy = live_slurm.StartOnFree({job: ("node02", "node03")}, 4)  # 8 GPUs on two nodes
        d = Daemon(cfg, live_slurm.Released(make_backend(cfg), {job}), policy=policy, metrics=DaemonMetrics())
        assert d.cycle().error is None
        d.close()
        assert layout(job) == before  # never sent
        audit = [json.loads(x) for x in Path(cfg.audit_log).read_text().splitlines()]
        refused = [r for r in audit if r["kind"] == "refused" and r["job"] == job]
        assert len(refused) == 1 and f"QOS {qos} MaxTRESPerJob node=1" in refused[0]["reason"], refused
        cancel([job])
    finally:
        slurm("sacctmgr", "-i", "delete", "qos", qos)
