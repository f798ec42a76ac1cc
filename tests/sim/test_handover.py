"""Warm starts: one warm-up per workload and process, each policy continuing from a copy of it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from slurmrl.policy import make_policy
from slurmrl.policy.view import ClusterView, Decisions
from slurmrl.sim.experiment import SimSettings, Workload, prepare, run_policy, sim_config
from slurmrl.sim.handover import WARM_STARTS, WarmStarts, measured, warm_decisions, warm_policy
from slurmrl.sim.simulator import Simulator


class Gate:
    """The warm-up heuristic before the hand-over, the policy under test after: one replay, no copies."""

    def __init__(self, warm, policy, at: float) -> None:
        self.warm, self.policy, self.at = warm, policy, at
        self.name = policy.name
        self.deployable = policy.deployable
        self.preemptive = bool(getattr(policy, "preemptive", False) or getattr(warm, "preemptive", False))

    def bind_oracle(self, durations) -> None:
        self.policy.bind_oracle(durations)

    def decide(self, view: ClusterView) -> Decisions:
        if view.now < self.at:
            return warm_decisions(self.warm, view, self.at)
        return self.policy.decide(view)


@pytest.fixture(scope="module")
def small() -> Workload:
    """300 jobs of weeks 1-2 under slurm, then 200 measured jobs of week 3."""
    wl = prepare(scenario="philly-448-weeks3-4-warm", seed=0)
    first = next(i for i, j in enumerate(wl.trace.jobs) if j.submit_time >= wl.handover)
    return replace(wl, trace=replace(wl.trace, jobs=wl.trace.jobs[first - 300 : first + 200]))


def one_replay(wl: Workload, name: str) -> tuple:
    gate = Gate(warm_policy(wl.warm_policy), make_policy(name), wl.handover)
    result = Simulator(wl.trace, wl.cluster, config=sim_config(SimSettings(), wl.seed)).run(gate)
    return measured(result.records, result.samples, wl.handover)


@pytest.mark.parametrize(
    "order", [("sjf-limit", "srtf-limit", "sjf-oracle", "sjf-limit"), ("srtf-limit", "fifo")]
)
def test_policies_continuing_one_warm_up_get_what_one_whole_replay_gives(small: Workload, order) -> None:
    """Preemptive, clairvoyant and plain policies, in any order, each as if it had replayed the warm-up itself."""
    wl = replace(small)  # an object of its own: no warm-up kept for it yet
    played = WARM_STARTS.played
    for name in order:
        out = run_policy(wl, name)
        assert (out.records, out.samples) == one_replay(wl, name), name
        assert out.meta["preemptive"] == bool(getattr(make_policy(name), "preemptive", False))
    # One warm-up for the policies that never preempt and one for those that may.
    groups = {bool(getattr(make_policy(name), "preemptive", False)) for name in order}
    assert WARM_STARTS.played - played == len(groups)


def test_another_workload_object_plays_its_own_warm_up(small: Workload) -> None:
    run_policy(small, "fifo")
    played = WARM_STARTS.played
    twin = replace(small)
    assert twin is not small
    run_policy(twin, "fifo")
    run_policy(twin, "fifo")
    assert WARM_STARTS.played == played + 1


def test_keeping_no_warm_up_plays_one_per_replay(small: Workload) -> None:
    starts = WarmStarts(size=0)
    config = sim_config(SimSettings(), small.seed)

    def build() -> Simulator:
        return Simulator(small.trace, small.cluster, config=config)

    first = starts.take(small, config, warm_policy(small.warm_policy), small.handover, False, build)
    second = starts.take(small, config, warm_policy(small.warm_policy), small.handover, False, build)
    assert starts.played == 2 and first.sim is not second.sim
    assert first.view is not None and second.view is not None and first.view.now == second.view.now
    assert first.sim.finished_count == second.sim.finished_count
