"""The daemon's view of a compressed queue, stretched back to trace time."""

from __future__ import annotations

from slurmrl.cluster import GpuPool, load_cluster
from slurmrl.daemon.timescale import scale_view, unscale_decisions
from slurmrl.policy.view import ClusterView, Decisions, FinishedJob, JobView


def _view() -> ClusterView:
    cluster = load_cluster("1x2x8")
    pending = [JobView("p", 2, submit_time=100.0, time_limit=60.0)]
    running = [JobView("r", 1, submit_time=10.0, time_limit=None, start_time=50.0, attained_service=3.0)]
    finished = [FinishedJob(JobView("f", 1, submit_time=1.0), end_time=40.0, run_time=30.0)]
    return ClusterView(
        now=120.0,
        cluster=cluster,
        pool=GpuPool(cluster).readonly(),
        pending=pending,
        running=running,
        finished=finished,
    )


def test_every_time_is_multiplied() -> None:
    view = scale_view(_view(), 100.0)
    p, r, f = view.pending[0], view.running[0], view.finished[0]
    assert view.now == 12_000.0
    assert (p.submit_time, p.time_limit) == (10_000.0, 6_000.0)
    assert (r.start_time, r.time_limit, r.attained_service) == (5_000.0, None, 300.0)
    assert (f.end_time, f.run_time, f.job.submit_time) == (4_000.0, 3_000.0, 100.0)
    assert p.waited(view.now) == 100.0 * _view().pending[0].waited(120.0)


def test_scale_one_is_the_view_itself_and_wake_at_comes_back_to_the_wall_clock() -> None:
    view = _view()
    assert scale_view(view, 1.0) is view
    assert unscale_decisions(Decisions(wake_at=5_000.0), 100.0).wake_at == 50.0
    assert unscale_decisions(Decisions(), 100.0).wake_at is None
