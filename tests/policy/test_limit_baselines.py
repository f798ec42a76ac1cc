"""The honest baselines: sjf-limit, srtf-limit, type-aware placement and the elastic reference."""

from __future__ import annotations

from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy import make_placement, make_policy
from slurmrl.policy.registry import policy_entry
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.sim.elastic import parse_elastic
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.traces.schema import Trace, TraceJob
from tests.sim.fixtures.clusters import MIXED


def view_of(
    cluster_spec: str, pending: list[JobView], running: list[JobView] = (), now: float = 0.0
) -> ClusterView:
    cluster = load_cluster(cluster_spec)
    pool = GpuPool(cluster)
    for job in running:
        pool.allocate(job.placement)  # type: ignore[arg-type]
    return ClusterView(now, cluster, pool.readonly(), tuple(pending), tuple(running))


def test_sjf_limit_starts_the_smallest_asked_gpu_time_first() -> None:
    jobs = [
        JobView("long", 1, 0.0, time_limit=86400.0),
        JobView("wide", 8, 1.0, time_limit=3600.0),  # 8 GPU-hours
        JobView("short", 2, 2.0, time_limit=3600.0),  # 2 GPU-hours
    ]
    decisions = make_policy("sjf-limit").decide(view_of("1x1x8", jobs))
    assert list(decisions.order) == ["short", "wide", "long"]
    # wide waits for short's GPUs and holds the rest: long would outlast the reservation.
    assert [s.job_id for s in decisions.starts] == ["short"]
    assert policy_entry("sjf-limit").deployable and policy_entry("srtf-limit").deployable


def test_srtf_limit_preempts_only_markedly_longer_asked_work() -> None:
    busy = Placement.of([(0, list(range(8)))])
    running = [JobView("big", 8, 0.0, time_limit=86400.0, start_time=0.0, placement=busy)]
    short = JobView("short", 8, 10.0, time_limit=3600.0)
    decisions = make_policy("srtf-limit").decide(view_of("1x1x8", [short], running, now=3600.0))
    assert decisions.preempt == ("big",) and [s.job_id for s in decisions.starts] == ["short"]
    # Within a factor of two of the victim's remaining asked work: no preemption.
    close = JobView("close", 8, 10.0, time_limit=50_000.0)
    decisions = make_policy("srtf-limit").decide(view_of("1x1x8", [close], running, now=3600.0))
    assert not decisions.preempt and not decisions.starts


def test_type_aware_puts_jobs_on_the_fastest_type_and_spills_over() -> None:
    place = make_placement("type-aware")
    for model in ("resnet50", "lstm", ""):  # known models and an unknown one: V100 beats K80
        view = view_of(MIXED, [])
        got = place.place(JobView("j", 2, 0.0, model=model), view.pool.copy(), view)
        assert got is not None and set(got.nodes) <= {0, 1}, model
    # V100s full: the K80s take it; a job no single type holds spans both.
    full = [
        JobView(f"r{n}", 4, 0.0, start_time=0.0, placement=Placement.of([(n, [0, 1, 2, 3])])) for n in (0,)
    ]
    view = view_of(MIXED, [], full)
    got = place.place(JobView("j", 4, 0.0), view.pool.copy(), view)
    assert got is not None and got.nodes == (1,)
    got = place.place(JobView("j", 12, 0.0), view.pool.copy(), view)
    assert got is not None and got.num_gpus == 12
    first_fit = make_placement("first-fit").place(JobView("j", 2, 0.0), view.pool.copy(), view)
    assert first_fit is not None


def test_type_aware_on_one_type_is_topology() -> None:
    view = view_of("2x2x8:v100", [])
    job = JobView("j", 3, 0.0)
    assert make_placement("type-aware").place(job, view.pool.copy(), view) == make_placement(
        "topology"
    ).place(job, view.pool.copy(), view)


def test_elastic_reference_starts_elastic_jobs_wide_and_beats_the_rigid_bound() -> None:
    jobs = tuple(
        TraceJob(f"j{i}", 600.0 * i, 20_000.0, 2, model="resnet50", time_limit=40_000.0) for i in range(6)
    )
    trace = Trace(jobs, "t", "constructed")
    cluster = load_cluster("1x2x8:v100")
    config = SimConfig(seed=0, elastic=parse_elastic("fraction:1"))
    wide = Simulator(trace, cluster, config=config).run(make_policy("srtf-oracle-elastic"))
    rigid = Simulator(trace, cluster, config=config).run(make_policy("srtf-oracle", "topology"))
    jct = lambda res: sum(r.end_time - r.submit_time for r in res.records) / len(res.records)  # noqa: E731
    assert jct(wide) < jct(rigid)
    assert not policy_entry("srtf-oracle-elastic").deployable
