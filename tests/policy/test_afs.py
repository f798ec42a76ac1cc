"""The elastic baseline ``afs``: counts within ranges, only free GPUs, no durations."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy import make_policy
from slurmrl.policy.elastic.afs import MarginalGain
from slurmrl.policy.registry import policy_entry
from slurmrl.policy.view import ClusterView, Decisions, JobView
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.traces.schema import Trace, TraceJob

CLUSTERS = ["1x2x8:v100", "2x2x4:v100", "1x4x4"]


class Checked:
    """``afs`` with every decision checked against the view it answered."""

    name = "afs-checked"
    deployable = True
    preemptive = True

    def __init__(self) -> None:
        self.inner = make_policy("afs")
        self.resizes = 0
        self.grown = 0

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        raise AssertionError("a deployable policy was handed durations")

    def decide(self, view: ClusterView) -> Decisions:
        decisions = self.inner.decide(view)
        running = {j.job_id: j for j in view.running}
        pending = {j.job_id: j for j in view.pending}
        pool = view.pool.copy()
        for job_id in decisions.preempt:
            pool.release(running[job_id].placement)
        for start in decisions.starts:
            job = pending.get(start.job_id) or running[start.job_id]
            assert start.job_id in pending or start.job_id in decisions.preempt
            assert job.accepts_gpus(start.placement.num_gpus), (job, start)
            assert pool.is_free(start.placement), f"{start.job_id} placed on busy GPUs"
            pool.allocate(start.placement)
            self.grown += start.placement.num_gpus > job.gpus
        assert set(decisions.preempt) <= {s.job_id for s in decisions.starts}  # preemptions are resizes only
        self.resizes += len(decisions.preempt)
        return decisions


jobs = st.lists(
    st.tuples(
        st.floats(0, 20_000, allow_nan=False),
        st.floats(60, 20_000, allow_nan=False),
        st.sampled_from([1, 1, 2, 3, 4, 8]),
        st.sampled_from(["resnet50", "bert", "ncf", "lstm", ""]),
    ),
    min_size=1,
    max_size=25,
)


def _trace(rows, scale: float = 1.0) -> Trace:
    built = sorted(
        (TraceJob(f"j{i}", s, d * scale, g, model=m) for i, (s, d, g, m) in enumerate(rows)),
        key=lambda j: (j.submit_time, j.job_id),
    )
    return Trace(tuple(built), "test", "constructed")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=jobs,
    spec=st.sampled_from(CLUSTERS),
    fraction=st.sampled_from([0.0, 0.5, 1.0]),
    speed_model=st.sampled_from(["none", "placement", "full"]),
)
def test_afs_starts_within_ranges_on_free_gpus_and_finishes_everything(
    rows, spec: str, fraction: float, speed_model: str
) -> None:
    cluster = load_cluster(spec)
    config = SimConfig(speed_model=speed_model, elastic=f"fraction:{fraction}")
    policy = Checked()
    result = Simulator(_trace(rows), cluster, config=config).run(policy)
    assert all(r.end_time == r.end_time for r in result.records)  # no job is left behind
    if fraction == 0.0:
        assert policy.resizes == 0 and policy.grown == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs, scale=st.sampled_from([0.1, 3.0]))
def test_afs_never_reads_durations(rows, scale: float) -> None:
    """Two traces that differ only in durations get the same first decisions."""
    cluster = load_cluster("1x2x8:v100")
    config = SimConfig(elastic="fraction:0.5")
    answers = []
    for trace in (_trace(rows), _trace(rows, scale)):
        sim = Simulator(trace, cluster, config=config)
        view = sim.next_view(skip_when_full=False)
        answers.append(make_policy("afs").decide(view))
    assert answers[0].starts == answers[1].starts and answers[0].preempt == answers[1].preempt
    assert policy_entry("afs").deployable


def _view(
    cluster_spec: str, pending: list[JobView], running: list[JobView], now: float = 10_000.0
) -> ClusterView:
    cluster = load_cluster(cluster_spec)
    pool = GpuPool(cluster)
    for job in running:
        pool.allocate(job.placement)
    return ClusterView(now, cluster, pool.readonly(), pending, running)


def test_a_lone_elastic_job_grows_while_a_rigid_one_keeps_its_count() -> None:
    elastic = JobView("e", 2, 0.0, model="resnet50", gpu_range=(1, 4))
    rigid = JobView("r", 2, 0.0, model="resnet50")
    starts = {
        s.job_id: s.placement.num_gpus
        for s in make_policy("afs").decide(_view("1x2x8:v100", [elastic, rigid], [])).starts
    }
    assert starts == {"e": 4, "r": 2}


def test_a_waiting_job_makes_a_long_running_elastic_job_shrink() -> None:
    big = JobView(
        "big",
        8,
        0.0,
        model="resnet50",
        gpu_range=(4, 16),
        start_time=0.0,
        placement=Placement.of([(0, range(8)), (1, range(8))]),
    )
    waiting = JobView("w", 8, 5_000.0, model="bert")
    decisions = MarginalGain(make_policy("afs").placement).decide(_view("1x2x8:v100", [waiting], [big]))
    starts = {s.job_id: s.placement.num_gpus for s in decisions.starts}
    assert decisions.preempt == ("big",) and starts == {"big": 8, "w": 8}


def test_a_recently_started_job_is_not_resized() -> None:
    big = JobView(
        "big",
        8,
        0.0,
        model="resnet50",
        gpu_range=(4, 16),
        start_time=9_900.0,
        placement=Placement.of([(0, range(8)), (1, range(8))]),
    )
    waiting = JobView("w", 8, 5_000.0, model="bert")
    decisions = make_policy("afs").decide(_view("1x2x8:v100", [waiting], [big]))
    assert decisions.preempt == () and decisions.starts == ()
