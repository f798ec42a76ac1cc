"""The daemon's finished-job history: what a history-based policy learns from between cycles."""

from __future__ import annotations

from slurmrl.cluster import GpuPool, load_cluster
from slurmrl.daemon.history import FinishedTracker
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.slurm.snapshot import SlurmJob, Snapshot

CLUSTER = load_cluster("1x2x8")


def _view(now: float, running: list[JobView]) -> ClusterView:
    return ClusterView(
        now=now, cluster=CLUSTER, pool=GpuPool(CLUSTER).readonly(), pending=[], running=running
    )


def _snap(now: float, *jobs: SlurmJob) -> Snapshot:
    return Snapshot(now, "22.05.8", (), jobs, CLUSTER)


def test_a_job_that_stopped_running_is_reported_once_with_its_run_time() -> None:
    tracker = FinishedTracker()
    a, b = (
        JobView("1", 2, submit_time=0.0, start_time=10.0),
        JobView("2", 1, submit_time=0.0, start_time=20.0),
    )
    first = tracker.with_finished(_view(30.0, [a, b]), _snap(30.0))
    assert list(first.finished) == []
    ended = SlurmJob("1", state="COMPLETED", end_time=95.0)  # still listed: Slurm's end time
    second = tracker.with_finished(_view(100.0, []), _snap(100.0, ended))
    got = {f.job.job_id: (f.end_time, f.run_time) for f in second.finished}
    assert got == {"1": (95.0, 85.0), "2": (100.0, 80.0)}  # job 2 already purged: the snapshot's time
    assert list(tracker.with_finished(_view(130.0, []), _snap(130.0)).finished) == []


def test_a_requeued_job_is_not_finished() -> None:
    tracker = FinishedTracker()
    tracker.with_finished(_view(30.0, [JobView("1", 2, submit_time=0.0, start_time=10.0)]), _snap(30.0))
    back = SlurmJob("1", state="PENDING")
    assert list(tracker.with_finished(_view(60.0, []), _snap(60.0, back)).finished) == []
