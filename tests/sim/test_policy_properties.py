"""Every registered policy, on small random traces and clusters, keeps the simulator's invariants.

Whatever a policy decides (preemptive ones and the trained agent included),
no GPU may be held by two jobs at any instant, no job may start before it
was submitted, every job must end up finished, killed or unfinished exactly
once, no mean JCT may beat its proven lower bound, and no replay may pass
the floor a validation cutoff reads under its own average.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import Placement
from slurmrl.policy import make_policy
from slurmrl.policy.registry import placement_names, policy_names
from slurmrl.sim.cutoff import JctCutoff
from slurmrl.sim.elastic import parse_elastic
from slurmrl.sim.metrics import summarize
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.traces.schema import Trace, TraceJob
from tests.sim.fixtures.clusters import MIXED

CLUSTERS = ["1x1x8", "1x2x4", "2x2x4:v100", "2x3x2", "1x4x8:a100", MIXED]
SPEED_MODELS = ["none", "placement", "full"]

job_rows = st.lists(
    st.tuples(
        st.floats(0, 5_000, allow_nan=False),  # submit
        st.floats(1, 20_000, allow_nan=False),  # duration
        st.sampled_from([1, 1, 1, 2, 4, 8, 16]),  # GPUs, capped to the cluster's
        st.sampled_from(["resnet50", "vgg16", "bert", "lstm", ""]),
        st.one_of(st.none(), st.floats(1, 30_000, allow_nan=False)),  # time limit
    ),
    min_size=1,
    max_size=30,
)


def make_trace(rows, max_gpus: int) -> Trace:
    jobs = sorted(
        (
            TraceJob(
                f"j{i}", s, d, min(g, max_gpus), user=f"u{i % 3}", vc=f"vc{i % 2}", model=m, time_limit=t
            )
            for i, (s, d, g, m, t) in enumerate(rows)
        ),
        key=lambda j: (j.submit_time, j.job_id),
    )
    return Trace(tuple(jobs), "test", "constructed")


class LoggingSimulator(Simulator):
    """The simulator, logging every start and stop so GPU ownership can be replayed afterwards."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.log: list[tuple[float, str, str, Placement | None]] = []

    def _start(self, job_id: str, placement: Placement, now: float) -> None:
        self.log.append((now, "start", job_id, placement))
        super()._start(job_id, placement, now)

    def _stop(self, job_id: str, now: float, *, preempted: bool) -> None:
        self.log.append((now, "stop", job_id, None))
        super()._stop(job_id, now, preempted=preempted)


def check_ownership(log, submit: dict[str, float]) -> int:
    """Replay the log in order: a start takes only free GPUs, at or after submission; returns starts seen."""
    held: dict[tuple[int, int], str] = {}
    placed: dict[str, Placement] = {}
    last = -math.inf
    for now, kind, job_id, placement in log:
        assert now >= last, "events went back in time"
        last = now
        if kind == "start":
            assert job_id not in placed, f"{job_id} started while running"
            assert now >= submit[job_id], f"{job_id} started at {now} before its submission {submit[job_id]}"
            for alloc in placement.allocs:
                for gpu in alloc.gpus:
                    owner = held.setdefault((alloc.node, gpu), job_id)
                    assert owner == job_id, f"GPU {alloc.node}:{gpu} held by {owner} and {job_id} at {now}"
            placed[job_id] = placement
        else:
            for alloc in placed.pop(job_id).allocs:
                for gpu in alloc.gpus:
                    assert held.pop((alloc.node, gpu)) == job_id
    assert not placed and not held, "jobs still hold GPUs after the run"
    return sum(1 for entry in log if entry[1] == "start")


@pytest.mark.parametrize("policy", policy_names())
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=job_rows,
    spec=st.sampled_from(CLUSTERS),
    speed_model=st.sampled_from(SPEED_MODELS),
    enforce=st.booleans(),
    seed=st.integers(0, 3),
    placement=st.one_of(st.none(), st.sampled_from(placement_names())),
    elastic=st.sampled_from(["off", "fraction:0.5"]),
)
def test_every_policy_keeps_the_invariants(
    policy: str,
    rows,
    spec: str,
    speed_model: str,
    enforce: bool,
    seed: int,
    placement: str | None,
    elastic: str,
) -> None:
    cluster = load_cluster(spec)
    trace = make_trace(rows, cluster.total_gpus)
    config = SimConfig(
        seed=seed, speed_model=speed_model, enforce_time_limits=enforce, elastic=parse_elastic(elastic)
    )
    sim = LoggingSimulator(trace, cluster, config=config)
    result = sim.run(make_policy(policy, placement))

    submit = {j.job_id: j.submit_time for j in trace.jobs}
    starts = check_ownership(sim.log, submit)
    assert starts == sum(1 for r in result.records if not math.isnan(r.start_time)) + sum(
        r.preemptions for r in result.records
    )

    assert sorted(r.job_id for r in result.records) == sorted(submit)  # each job exactly once
    killed = [r for r in result.records if r.killed_at_limit]
    finished = [r for r in result.records if not math.isnan(r.end_time) and not r.killed_at_limit]
    unfinished = [r for r in result.records if math.isnan(r.end_time)]
    assert len(killed) + len(finished) + len(unfinished) == len(trace.jobs)
    assert all(not math.isnan(r.end_time) for r in killed)
    if not enforce:
        assert not killed
    for rec in result.records:
        if not math.isnan(rec.start_time):
            assert rec.start_time >= rec.submit_time
        if not math.isnan(rec.end_time):
            assert rec.end_time >= rec.start_time

    summary = summarize(result.records, result.samples, cluster, wall_seconds=0.0).to_dict()
    assert (summary["jobs"], summary["finished"], summary["killed"], summary["unfinished"]) == (
        len(trace.jobs),
        len(finished),
        len(killed),
        len(unfinished),
    )
    if summary["avg_jct"] is not None and summary["avg_jct_lower_bound"] is not None:
        assert summary["avg_jct"] >= summary["avg_jct_lower_bound"] * (1 - 1e-9)


@pytest.mark.parametrize("policy", policy_names())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=job_rows,
    spec=st.sampled_from(CLUSTERS),
    speed_model=st.sampled_from(SPEED_MODELS),
    seed=st.integers(0, 3),
    elastic=st.sampled_from(["off", "fraction:0.5"]),
)
def test_a_cutoff_at_a_replays_own_average_never_abandons_it(
    policy: str, rows, spec: str, speed_model: str, seed: int, elastic: str
) -> None:
    """The cutoff's floor is a floor for every policy: cut at its own average JCT, a replay runs whole, unchanged."""
    cluster = load_cluster(spec)
    trace = make_trace(rows, cluster.total_gpus)
    config = SimConfig(seed=seed, speed_model=speed_model, elastic=parse_elastic(elastic))
    whole = Simulator(trace, cluster, config=config).run(make_policy(policy))
    jcts = [r.end_time - r.submit_time for r in whole.records]
    average = sum(jcts) / len(jcts) * (1 + 1e-9)  # the floor sums in another order
    cut = Simulator(trace, cluster, config=config).run(
        make_policy(policy), cutoff=JctCutoff(average, every=1)
    )
    assert cut.records == whole.records
