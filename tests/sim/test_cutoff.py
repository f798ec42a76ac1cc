"""A replay abandoned once its average JCT can no longer come in under a figure."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from slurmrl.cluster.shorthand import parse_shorthand
from slurmrl.policy import make_policy
from slurmrl.policy.placement.first_fit import FirstFit
from slurmrl.policy.view import ClusterView, Decisions, Start
from slurmrl.sim.cutoff import JctCutoff, ReplayAbandoned
from slurmrl.sim.experiment import SimSettings, Workload, prepare, run_policy, sim_config
from slurmrl.sim.simulator import Simulator, _JctFloor


@pytest.fixture(scope="module")
def crowded() -> Workload:
    """400 one-node jobs of week 3 on 32 GPUs: a queue that builds and drains."""
    wl = prepare(scenario="philly-448-weeks3-4", seed=0)
    jobs = tuple(j for j in wl.trace.jobs if j.num_gpus <= 8)[:400]
    return replace(wl, trace=replace(wl.trace, jobs=jobs), cluster=parse_shorthand("1x4x8"))


@pytest.fixture(scope="module")
def warm() -> Workload:
    """200 one-node jobs of weeks 1-2 under the warm-up heuristic, then 150 measured ones of week 3, on 32 GPUs."""
    wl = prepare(scenario="philly-448-weeks3-4-warm", seed=0)
    jobs = tuple(j for j in wl.trace.jobs if j.num_gpus <= 8)
    first = next(i for i, j in enumerate(jobs) if j.submit_time >= wl.handover)
    return replace(
        wl, trace=replace(wl.trace, jobs=jobs[first - 200 : first + 150]), cluster=parse_shorthand("1x4x8")
    )


class Watched:
    """A policy that notes the simulator's floor at every view it decides."""

    def __init__(self, sim: Simulator, name: str) -> None:
        self.sim, self.inner = sim, make_policy(name)
        self.name, self.deployable = self.inner.name, self.inner.deployable
        self.preemptive = getattr(self.inner, "preemptive", False)
        self.floors: list[float] = []

    def bind_oracle(self, durations) -> None:
        self.inner.bind_oracle(durations)

    def decide(self, view: ClusterView) -> Decisions:
        self.floors.append(self.sim.jct_floor(view.now))
        return self.inner.decide(view)


def mean_jct_of(records) -> float:
    return float(np.mean([r.end_time - r.submit_time for r in records]))


@pytest.fixture(scope="module")
def mixed() -> Workload:
    """300 jobs on the V100/P100/K80 cluster: GPU types faster than the trace's own, elastic jobs."""
    return prepare(scenario="philly-hetero", limit=300, seed=0)


ELASTIC_FULL = SimSettings(elastic="fraction:0.5", speed_model="full")


@pytest.mark.parametrize(
    ("workload", "settings", "name"),
    [
        ("crowded", SimSettings(), "fifo"),
        ("crowded", SimSettings(), "srtf-limit"),
        ("mixed", ELASTIC_FULL, "srtf-oracle-elastic"),
        ("mixed", ELASTIC_FULL, "afs"),
        ("mixed", SimSettings(speed_model="full"), "gittins-limit"),
    ],
)
def test_the_floor_rises_to_the_average_and_never_passes_it(
    request: pytest.FixtureRequest, workload: str, settings: SimSettings, name: str
) -> None:
    """Also where jobs may run faster than their trace durations (faster GPU types, wider counts)."""
    wl: Workload = request.getfixturevalue(workload)
    sim = Simulator(wl.trace, wl.cluster, config=sim_config(settings, wl.seed))
    watched = Watched(sim, name)
    records = sim.run(watched).records
    final = mean_jct_of(records)
    floors = np.array(watched.floors)
    assert len(floors) > 100
    assert np.all(np.diff(floors) >= -1e-9 * final)
    assert floors.max() <= final * (1 + 1e-12)
    assert sim.jct_floor(float("inf")) == pytest.approx(final, rel=1e-12)


def test_the_floor_starts_at_the_jobs_fastest_runs(crowded: Workload) -> None:
    sim = Simulator(crowded.trace, crowded.cluster, config=sim_config(SimSettings(), crowded.seed))
    watched = Watched(sim, "fifo")
    records = sim.run(watched).records
    fastest = float(np.mean([r.best_time for r in records]))
    assert watched.floors[0] == pytest.approx(fastest, rel=1e-12)
    assert 0 < fastest < mean_jct_of(records)


class OneAtATime:
    """Starts a job only while nothing runs: jobs wait, as under an agent that holds them back."""

    name, deployable = "one-at-a-time", True

    def decide(self, view: ClusterView) -> Decisions:
        if view.running or not view.pending:
            return Decisions(order=())
        job = next(iter(view.pending))
        placement = FirstFit().place(job, view.pool.copy(), view)
        return Decisions(order=(job.job_id,), starts=(Start(job.job_id, placement),) if placement else ())


def test_a_replay_that_holds_jobs_back_is_cut_before_their_waits_alone_pass_the_figure(
    crowded: Workload,
) -> None:
    beat = float(run_policy(crowded, "fifo").summary["avg_jct"])
    sim = Simulator(crowded.trace, crowded.cluster, config=sim_config(SimSettings(), crowded.seed))
    with pytest.raises(ReplayAbandoned) as caught:
        sim.run(OneAtATime(), cutoff=JctCutoff(beat, every=1))  # type: ignore[arg-type]
    # The floor counting time in the system alone (no work left, nothing for jobs to come) was still under it.
    waits_alone = _JctFloor(sim.runs.values(), -math.inf, lambda run: 0.0).at(caught.value.now)
    assert waits_alone < beat < caught.value.floor


def test_a_cutoff_the_replay_meets_changes_nothing(crowded: Workload) -> None:
    whole = run_policy(crowded, "fifo")
    avg = float(whole.summary["avg_jct"])
    cut = run_policy(crowded, "fifo", cutoff=JctCutoff(avg, every=1))
    assert (cut.records, cut.samples) == (whole.records, whole.samples)


def test_a_cutoff_below_the_average_abandons_the_replay_before_its_end(crowded: Workload) -> None:
    whole = run_policy(crowded, "fifo")
    avg = float(whole.summary["avg_jct"])
    with pytest.raises(ReplayAbandoned) as caught:
        run_policy(crowded, "fifo", cutoff=JctCutoff(0.8 * avg, every=1))
    assert caught.value.floor > caught.value.beat == 0.8 * avg
    assert caught.value.now < max(r.end_time for r in whole.records)
    assert "above the" in str(caught.value)


def test_a_warm_started_replay_is_cut_on_its_measured_jobs_only(warm: Workload, monkeypatch) -> None:
    seen: list[JctCutoff | None] = []
    run = Simulator.run

    def spy(self, policy, **kwargs):
        seen.append(kwargs.get("cutoff"))
        return run(self, policy, **kwargs)

    monkeypatch.setattr(Simulator, "run", spy)
    whole = run_policy(warm, "sjf-limit")
    avg = float(whole.summary["avg_jct"])
    assert run_policy(warm, "sjf-limit", cutoff=JctCutoff(avg, every=1)).records == whole.records
    with pytest.raises(ReplayAbandoned):
        run_policy(warm, "sjf-limit", cutoff=JctCutoff(0.5 * avg, every=1))
    cutoffs = [c for c in seen if c is not None]
    assert [c.measured_from for c in cutoffs] == [warm.handover, warm.handover]


def test_a_replay_that_kills_at_limits_is_never_cut(crowded: Workload) -> None:
    settings = SimSettings(enforce_limits=True)
    whole = run_policy(crowded, "fifo", settings=settings)
    cut = run_policy(crowded, "fifo", settings=settings, cutoff=JctCutoff(1.0, every=1))
    assert cut.records == whole.records


def test_a_cutoff_checks_at_least_every_pass() -> None:
    with pytest.raises(ValueError, match="every 1 or more"):
        JctCutoff(100.0, every=0)
