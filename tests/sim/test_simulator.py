"""Simulator invariants on small random workloads.

Whatever the policy does, the engine must never double-book a GPU, must
finish every job exactly once, keep utilisation within [0, 1] and never beat
the lower bounds; and the same inputs must replay identically.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmrl.cluster import load_cluster
from slurmrl.errors import PolicyError
from slurmrl.policy import make_policy
from slurmrl.policy.view import Decisions, Start
from slurmrl.sim.metrics import summarize
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.traces.schema import Trace, TraceJob

CLUSTER = load_cluster("2x2x4:v100")
FULL = SimConfig(speed_model="full")  # co-location on: the neighbour bookkeeping under test

jobs_strategy = st.lists(
    st.tuples(
        st.floats(0, 5_000, allow_nan=False),  # submit
        st.floats(1, 20_000, allow_nan=False),  # duration
        st.sampled_from([1, 1, 1, 2, 4, 8, 16]),  # GPUs
        st.sampled_from(["resnet50", "vgg16", "bert", "lstm", ""]),
    ),
    min_size=1,
    max_size=40,
)


def make_trace(rows: list[tuple[float, float, int, str]]) -> Trace:
    jobs = sorted(
        (
            TraceJob(f"j{i}", s, d, g, user=f"u{i % 3}", vc=f"vc{i % 2}", model=m)
            for i, (s, d, g, m) in enumerate(rows)
        ),
        key=lambda j: (j.submit_time, j.job_id),
    )
    return Trace(tuple(jobs), "test", "constructed")


class CheckingPolicy:
    """Wraps a policy and checks the view it gets: no GPU is free and busy at once."""

    deployable = True

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name

    def bind_oracle(self, durations) -> None:
        self.inner.bind_oracle(durations)

    def decide(self, view):
        busy = sum(j.gpus for j in view.running)
        assert busy + view.pool.total_free == view.cluster.total_gpus
        held = [(a.node, g) for j in view.running for a in j.placement.allocs for g in a.gpus]
        assert len(held) == len(set(held)), "a GPU is held by two jobs"
        for node, gpu in held:
            assert not view.pool.free[node, gpu]
        return self.inner.decide(view)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_strategy, policy=st.sampled_from(["fifo"]), seed=st.integers(0, 3))
def test_invariants(rows, policy, seed) -> None:
    trace = make_trace(rows)
    sim = Simulator(trace, CLUSTER, config=SimConfig(seed=seed))
    result = sim.run(CheckingPolicy(make_policy(policy)))
    assert len(result.records) == len(trace.jobs)
    for rec in result.records:
        assert not math.isnan(rec.end_time), f"{rec.job_id} never finished"
        assert rec.start_time >= rec.submit_time
        # A job never runs faster than under ideal placement.
        assert rec.run_time >= rec.duration - 1e-6
    for sample in result.samples:
        assert 0 <= sample.busy_gpus <= CLUSTER.total_gpus
    summary = summarize(result.records, result.samples, CLUSTER, wall_seconds=0.0).to_dict()
    assert 0.0 <= summary["gpu_utilization"] <= 1.0 + 1e-9
    assert summary["avg_jct"] >= summary["avg_jct_lower_bound"] - 1e-6
    assert summary["makespan"] >= summary["makespan_lower_bound"] - 1e-6


def test_same_inputs_replay_identically() -> None:
    rows = [(i * 37.0, 500.0 + 97 * (i % 7), [1, 2, 4, 8][i % 4], "") for i in range(60)]
    a = Simulator(make_trace(rows), CLUSTER, config=SimConfig(seed=1)).run(make_policy("fifo"))
    b = Simulator(make_trace(rows), CLUSTER, config=SimConfig(seed=1)).run(make_policy("fifo"))
    assert a.records == b.records
    assert a.samples == b.samples


class Scatter:
    """Puts the first pending job on two GPUs of each of four nodes in two racks."""

    name, deployable = "scatter", True

    def bind_oracle(self, durations) -> None:  # pragma: no cover - deployable
        pass

    def decide(self, view):
        from slurmrl.cluster.model import Placement

        job = next(iter(view.pending))
        placement = Placement.of([(n, [0, 1]) for n in range(4)])
        return Decisions(order=(job.job_id,), starts=(Start(job.job_id, placement),))


def test_worse_placement_is_slower_than_the_trace_duration() -> None:
    """An 8-GPU job forced across racks takes longer than its ideal-placement duration."""
    trace = make_trace([(0.0, 1000.0, 8, "vgg16")])
    scattered = Simulator(trace, CLUSTER).run(Scatter()).records[0]
    ideal = Simulator(trace, CLUSTER).run(make_policy("fifo")).records[0]
    assert ideal.run_time == pytest.approx(1000.0)
    assert scattered.run_time > 1.2 * ideal.run_time
    assert scattered.worst_link == 3


def test_colocation_slows_both_jobs() -> None:
    trace = make_trace([(0.0, 1000.0, 2, "vgg16"), (0.0, 1000.0, 2, "vgg16")])
    alone = Simulator(make_trace([(0.0, 1000.0, 2, "vgg16")]), CLUSTER, config=FULL).run(make_policy("fifo"))
    shared = Simulator(trace, CLUSTER, config=FULL).run(make_policy("fifo")).records
    assert alone.records[0].run_time == pytest.approx(1000.0)
    assert all(r.run_time > alone.records[0].run_time for r in shared)


@pytest.mark.parametrize("speed_model", ["none", "placement"])
def test_without_colocation_neighbours_cost_nothing(speed_model: str) -> None:
    trace = make_trace([(0.0, 1000.0, 2, "vgg16"), (0.0, 1000.0, 2, "vgg16")])
    records = (
        Simulator(trace, CLUSTER, config=SimConfig(speed_model=speed_model)).run(make_policy("fifo")).records
    )
    assert [r.run_time for r in records] == [1000.0, 1000.0]


def test_speed_model_none_ignores_placement() -> None:
    """Under ``none`` a job scattered over racks runs exactly its trace duration."""
    trace = make_trace([(0.0, 1000.0, 8, "vgg16")])
    rec = Simulator(trace, CLUSTER, config=SimConfig(speed_model="none")).run(Scatter()).records[0]
    assert rec.worst_link == 3 and rec.run_time == 1000.0


def test_time_limit_kills_the_job_only_when_asked() -> None:
    trace = Trace((TraceJob("long", 0.0, 5000.0, 1, time_limit=3600.0),), "t", "constructed")
    killed = Simulator(trace, CLUSTER, config=SimConfig(enforce_time_limits=True)).run(make_policy("fifo"))
    assert killed.records[0].killed_at_limit
    assert killed.records[0].end_time == pytest.approx(3600.0)
    kept = Simulator(trace, CLUSTER).run(make_policy("fifo")).records[0]
    assert not kept.killed_at_limit and kept.end_time == 5000.0


@pytest.mark.parametrize("speed_model", ["none", "placement", "full"])
def test_a_job_whose_work_ends_at_its_limit_finished(speed_model: str) -> None:
    trace = Trace((TraceJob("exact", 0.0, 3600.0, 2, time_limit=3600.0),), "t", "constructed")
    config = SimConfig(enforce_time_limits=True, speed_model=speed_model)
    rec = Simulator(trace, CLUSTER, config=config).run(make_policy("fifo")).records[0]
    assert rec.end_time == 3600.0 and not rec.killed_at_limit


def test_preemption_requeues_and_charges_restart() -> None:
    trace = make_trace([(0.0, 1000.0, 16, "resnet50"), (10.0, 100.0, 4, "resnet50")])

    class PreemptOnce:
        name, deployable, preemptive = "preempt-once", True, True
        done = False

        def bind_oracle(self, durations) -> None:  # pragma: no cover
            pass

        def decide(self, view):
            fifo = make_policy("fifo")
            if not self.done and view.now >= 10.0 and view.running:
                self.done = True
                return Decisions(preempt=tuple(j.job_id for j in view.running))
            return fifo.decide(view)

    sim = Simulator(trace, CLUSTER, config=SimConfig(restart_overhead=30.0))
    records = {r.job_id: r for r in sim.run(PreemptOnce()).records}
    big = records["j0"]
    assert big.preemptions == 1
    # 10 s of work before the preemption, then the rest plus the restart cost.
    assert big.run_time == pytest.approx(1000.0 + 30.0, rel=1e-6)
    assert records["j1"].end_time < big.end_time


def test_invalid_decisions_are_reported() -> None:
    trace = make_trace([(0.0, 10.0, 4, "")])

    class Bad:
        name, deployable = "bad", True

        def bind_oracle(self, durations) -> None:  # pragma: no cover
            pass

        def decide(self, view):
            from slurmrl.cluster.model import Placement

            job = next(iter(view.pending))
            return Decisions(starts=(Start(job.job_id, Placement.of([(0, [0])])),))

    with pytest.raises(PolicyError, match="asked for 4"):
        Simulator(trace, CLUSTER).run(Bad())


class Spread:
    """Places every job one GPU per node, across racks: the most network contention there is."""

    name, deployable = "spread", True

    def bind_oracle(self, durations) -> None:  # pragma: no cover - deployable
        pass

    def decide(self, view):
        from slurmrl.cluster.model import Placement

        free = view.pool.free.copy()
        starts = []
        for job in view.pending:
            nodes = [n for n in range(free.shape[0]) if free[n].any()]
            if len(nodes) < job.gpus:
                break
            pairs = [(n, [int(free[n].argmax())]) for n in nodes[: job.gpus]]
            for n, (g,) in pairs:
                free[n, g] = False
            starts.append(Start(job.job_id, Placement.of(pairs)))
        return Decisions(order=tuple(j.job_id for j in view.pending), starts=tuple(starts))


def test_jobs_left_at_the_interference_floor_replay_as_if_recomputed(monkeypatch) -> None:
    """Skipping the speed update of a job whose slack keeps it at the floor changes no result."""
    from slurmrl.perf.model import PerformanceModel
    from slurmrl.sim import simulator

    cluster = load_cluster("2x4x8:v100")
    rows = [(i * 20.0, 2_000.0 + 137.0 * (i % 11), [2, 3, 4][i % 3], "vgg16") for i in range(120)]
    calls = {"n": 0}
    speed_from_loads = PerformanceModel.speed_from_loads

    def counted(*args):
        calls["n"] += 1
        return speed_from_loads(*args)

    monkeypatch.setattr(PerformanceModel, "speed_from_loads", staticmethod(counted))
    skipping = Simulator(make_trace(rows), cluster, config=FULL).run(Spread())
    with_skips = calls["n"]
    monkeypatch.setattr(simulator, "_SLACK_MARGIN", math.inf)
    calls["n"] = 0
    recomputing = Simulator(make_trace(rows), cluster, config=FULL).run(Spread())
    assert skipping.records == recomputing.records
    assert skipping.samples == recomputing.samples
    assert with_skips < calls["n"]  # some jobs did sit at the floor


def test_a_job_slowed_and_sped_up_again_ends_when_its_work_is_done() -> None:
    """End events pushed only when an end moves earlier still end each job on time."""
    trace = make_trace([(0.0, 1000.0, 2, "vgg16"), (100.0, 200.0, 2, "vgg16")])
    records = {r.job_id: r for r in Simulator(trace, CLUSTER, config=FULL).run(make_policy("fifo")).records}
    first, second = records["j0"], records["j1"]
    assert first.start_time == 0.0 and second.start_time == 100.0
    # The two share a node while both run: j1 is slowed as much as j0 is.
    slowed = (second.end_time - second.start_time) / 200.0
    assert slowed > 1.0
    expected = 100.0 + (second.end_time - 100.0) + (1000.0 - 100.0 - (second.end_time - 100.0) / slowed)
    assert first.end_time == pytest.approx(expected)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_strategy, split=st.integers(0, 30))
def test_a_fork_continues_as_the_original_would_and_leaves_it_alone(rows, split: int) -> None:
    """From any view, the fork under a policy gives the records the original gives under it."""
    trace = make_trace(rows)
    sim = Simulator(trace, CLUSTER, config=FULL)
    warm = make_policy("fifo-backfill")
    view = sim.next_view()
    for _ in range(split):
        if view is None:
            break
        sim.apply(warm.decide(view))
        view = sim.next_view()
    if view is None:
        return
    twin, twin_view = sim.fork(view)
    assert twin_view.now == view.now and twin_view.finished == view.finished
    assert [j.job_id for j in twin_view.pending] == [j.job_id for j in view.pending]
    done_before = sim.finished_count

    def finish(s: Simulator, v) -> tuple:
        policy = make_policy("sjf-limit")
        while v is not None:
            s.apply(policy.decide(v))
            v = s.next_view()
        return s.result().records, tuple(s.samples)

    twin_out = finish(twin, twin_view)
    assert sim.finished_count == done_before  # the original did not move
    assert finish(sim, view) == twin_out


# What a fork may share with its original: nothing in them changes during a
# replay (the speed models' caches memoise pure functions).
FORK_SHARED = {"trace", "cluster", "config", "perf", "scaling"}
IMMUTABLE = (int, float, bool, str, type(None), tuple, frozenset)


def test_a_fork_shares_no_state_a_replay_changes() -> None:
    """Every attribute is either shared on purpose, an immutable value, or the twin's own.

    A field added to the simulator later fails here until the fork copies it
    (or it joins FORK_SHARED with a reason).
    """
    sim = Simulator(make_trace([(0.0, 500.0, 2, "bert"), (10.0, 900.0, 8, ""), (20.0, 50.0, 1, "")]), CLUSTER)
    policy = make_policy("fifo-backfill")
    view = sim.next_view()
    sim.apply(policy.decide(view))
    view = sim.next_view()
    twin, _ = sim.fork(view)
    for name, value in vars(sim).items():
        if name in FORK_SHARED or isinstance(value, IMMUTABLE):
            continue
        assert getattr(twin, name) is not value, name
    for job_id, run in sim.runs.items():
        assert (twin.runs[job_id] is run) == run.over, job_id
