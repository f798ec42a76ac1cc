from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy import make_placement, make_policy
from slurmrl.policy.backfill import limit_of
from slurmrl.policy.view import ClusterView, Decisions, JobView
from tests.policy.busy import draw_running, make_cluster


def test_backfill_starts_short_job_but_not_long_one() -> None:
    cluster = make_cluster(2)
    pool = GpuPool(cluster)
    p = Placement.of([(0, [0, 1, 2, 3])])
    pool.allocate(p)
    run = JobView("r", 4, 0.0, time_limit=1000.0, start_time=0.0, placement=p)
    pending = (
        JobView("head", 8, 1.0, time_limit=100.0),
        JobView("long", 2, 2.0, time_limit=5000.0),
        JobView("short", 2, 3.0, time_limit=900.0),
        JobView("short2", 2, 4.0, time_limit=800.0),
    )
    view = ClusterView(100.0, cluster, pool.readonly(), pending, (run,), ())
    d = make_policy("fifo-backfill", "first-fit").decide(view)
    assert [s.job_id for s in d.starts] == ["short", "short2"]  # end by 1000, when the head can start
    assert d.info["shadow_time"] == 1000.0
    assert make_policy("fifo", "first-fit").decide(view).starts == ()


def test_backfill_may_use_gpus_the_head_does_not_need() -> None:
    cluster = make_cluster(3)
    pool = GpuPool(cluster)
    p = Placement.of([(0, [0, 1, 2, 3])])
    pool.allocate(p)
    run = JobView("r", 4, 0.0, time_limit=1000.0, start_time=0.0, placement=p)
    pending = (JobView("head", 12, 1.0, time_limit=100.0), JobView("long", 2, 2.0, time_limit=1e5))
    view = ClusterView(100.0, cluster, pool.readonly(), pending, (run,), ())
    assert make_policy("fifo-backfill", "first-fit").decide(view).starts == ()
    pending = (JobView("head", 8, 1.0, time_limit=100.0), JobView("long", 2, 2.0, time_limit=1e5))
    pool2 = GpuPool(cluster)
    pool2.allocate(p)
    p2 = Placement.of([(1, [0, 1])])
    pool2.allocate(p2)
    run2 = JobView("r2", 2, 0.0, time_limit=1000.0, start_time=0.0, placement=p2)
    view = ClusterView(100.0, cluster, pool2.readonly(), pending, (run, run2), ())
    d = make_policy("fifo-backfill", "first-fit").decide(view)
    assert [s.job_id for s in d.starts] == ["long"]  # 6 free, head needs 8 at t=1000 of 12: 4 spare


@st.composite
def scenarios(draw: st.DrawFn) -> ClusterView:
    cluster = make_cluster(draw(st.integers(2, 4)))
    pool = GpuPool(cluster)
    running = draw_running(
        draw,
        cluster,
        pool,
        starts=st.floats(0, 100),
        limits=st.sampled_from([50.0, 200.0, 400.0, 800.0, 1600.0]),
    )
    pending = [
        JobView(
            f"p{i}",
            draw(st.sampled_from([1, 1, 2, 3, 4, 6, 8])),
            100.0 + i,
            time_limit=draw(st.sampled_from([30.0, 100.0, 300.0, 900.0, 3000.0])),
        )
        for i in range(draw(st.integers(1, 10)))
    ]
    return ClusterView(150.0, cluster, pool.readonly(), tuple(pending), tuple(running), ())


def earliest_start(view: ClusterView, head: JobView, before: list[tuple[JobView, Placement]]) -> float:
    """Brute force: when could ``head`` be placed if nothing else started?"""
    pool = view.pool.copy()
    ends = [(j.start_time + limit_of(j), j.placement) for j in view.running]  # type: ignore[operator]
    for job, p in before:
        pool.allocate(p)
        ends.append((view.now + limit_of(job), p))
    place = make_placement("first-fit")
    if place.place(head, pool, view) is not None:
        return view.now
    for t in sorted({e for e, _ in ends}):
        for e, p in ends:
            if e == t:
                pool.release(p)  # type: ignore[arg-type]
        if place.place(head, pool, view) is not None:
            return max(t, view.now)
    return math.inf


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_backfill_never_delays_the_head_job(view: ClusterView) -> None:
    decisions: Decisions = make_policy("fifo-backfill", "first-fit").decide(view)
    if view.pool.total_free == 0:
        assert decisions.starts == ()
        return
    by_id = {j.job_id: j for j in view.pending}
    started = [(by_id[s.job_id], s.placement) for s in decisions.starts]
    # Starts are valid and disjoint.
    scratch = view.pool.copy()
    for _, p in started:
        scratch.allocate(p)
    ids = [j.job_id for j in view.pending]
    prefix = 0
    while prefix < len(started) and started[prefix][0].job_id == ids[prefix]:
        prefix += 1
    if prefix == len(ids) or prefix == len(started) and scratch.total_free == 0:
        return  # everything started, or the pool filled up before any job blocked
    head = view.pending[prefix]
    shadow = earliest_start(view, head, started[:prefix])
    if len(started) > prefix:  # something was backfilled, so a reservation was made
        assert decisions.info["shadow_time"] == shadow
    # At the shadow time, with every backfilled job still running unless its
    # limit has passed, the head job must still fit.
    pool = view.pool.copy()
    for _, p in started:
        pool.allocate(p)
    for j in view.running:
        if j.start_time + limit_of(j) <= shadow:  # type: ignore[operator]
            pool.release(j.placement)  # type: ignore[arg-type]
    for job, p in started:
        if view.now + limit_of(job) <= shadow:
            pool.release(p)
    if math.isfinite(shadow):
        assert make_placement("first-fit").place(head, pool, view) is not None
