"""Warm starts: one warm-up per workload and process, each policy continuing from a copy of it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from slurmrl.cluster.shorthand import parse_shorthand
from slurmrl.policy import make_policy
from slurmrl.policy.backfill import EasyBackfill
from slurmrl.policy.ordering.limits import asked_gpu_time
from slurmrl.policy.ordering.ranking import Ranking
from slurmrl.policy.registry import make_placement
from slurmrl.policy.view import ClusterView, Decisions
from slurmrl.sim.experiment import SimSettings, Workload, prepare, run_policy, sim_config
from slurmrl.sim.handover import WARM_STARTS, WarmStarts, inherited, measured, warm_decisions, warm_policy
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


class BacklogLast:
    """sjf-limit's order, except that jobs submitted before ``at`` go after every later one."""

    def __init__(self, at: float) -> None:
        self._ranking = Ranking(
            lambda job: (float(job.submit_time < at), asked_gpu_time(job)),
            lambda rows, now: rows[:, 1] * 1e15 + rows[:, 2],
            width=2,
        )

    def order(self, view: ClusterView):
        return self._ranking.order(view)

    def started(self, job_ids) -> None:
        self._ranking.started(job_ids)

    def unstarted(self, job_ids) -> None:
        self._ranking.unstarted(job_ids)


@pytest.fixture(scope="module")
def busy(small: Workload) -> Workload:
    """The same jobs (those of up to 16 GPUs) on 32 GPUs: a queue is waiting at the hand-over."""
    jobs = tuple(j for j in small.trace.jobs if j.num_gpus <= 16)
    return replace(small, trace=replace(small.trace, jobs=jobs), cluster=parse_shorthand("1x4x8:v100"))


def test_the_backlog_taken_over_is_reported_apart(busy: Workload) -> None:
    """The queue inherited at the hand-over is not measured, but a policy that makes it wait shows in the summary."""
    small = busy
    gate = Gate(warm_policy(small.warm_policy), make_policy("sjf-limit"), small.handover)
    result = Simulator(small.trace, small.cluster, config=sim_config(SimSettings(), small.seed)).run(gate)
    backlog = inherited(result.records, small.handover)
    assert backlog and all(r.submit_time < small.handover for r in backlog)
    assert all(not r.start_time < small.handover for r in backlog)
    fair = run_policy(small, "sjf-limit").summary
    assert fair["backlog_jobs"] == len(backlog)
    assert fair["backlog_avg_jct"] == pytest.approx(
        float(np.mean([r.jct for r in backlog if r.end_time == r.end_time]))
    )
    last = run_policy(
        small, EasyBackfill("backlog-last", BacklogLast(small.handover), make_placement("first-fit"))
    )
    assert last.summary["backlog_jobs"] == len(backlog)
    assert last.summary["backlog_avg_jct"] > fair["backlog_avg_jct"]
    assert last.summary["avg_jct"] < fair["avg_jct"]  # what the measured jobs alone would reward


def test_a_run_without_a_hand_over_has_no_backlog() -> None:
    summary = run_policy(prepare(cluster="2x4x8:v100", seed=0, limit=60), "fifo").summary
    assert summary["backlog_jobs"] == 0 and summary["backlog_avg_jct"] is None


class FirstSight:
    """fifo, keeping the first view it is asked to decide."""

    name, deployable = "first-sight", True

    def __init__(self) -> None:
        self.inner = make_policy("fifo")
        self.seen: ClusterView | None = None

    def bind_oracle(self, durations) -> None:
        pass

    def decide(self, view: ClusterView) -> Decisions:
        if self.seen is None:
            self.seen = view
        return self.inner.decide(view)


def test_history_at_the_hand_over_is_the_warm_ups_jobs_that_ended_in_its_last_days(small: Workload) -> None:
    """As the daemon reads accounting at start: every job ended in the window, oldest first, once."""
    days = 1.0
    cold, warm = FirstSight(), FirstSight()
    run_policy(replace(small), cold)
    out = run_policy(replace(small), warm, settings=SimSettings(handover_history=days))
    assert cold.seen is not None and warm.seen is not None and cold.seen.now == warm.seen.now
    whole = Simulator(small.trace, small.cluster, config=sim_config(SimSettings(), small.seed))
    records = whole.run(Gate(warm_policy(small.warm_policy), make_policy("fifo"), small.handover)).records
    since = small.handover - days * 86_400.0
    ended = sorted(
        (r for r in records if since <= r.end_time <= warm.seen.now), key=lambda r: (r.end_time, r.job_id)
    )
    assert [f.job.job_id for f in warm.seen.finished] == [r.job_id for r in ended]
    assert [f.run_time for f in warm.seen.finished] == [r.run_time for r in ended]
    assert all(f.from_accounting for f in warm.seen.finished)
    assert not any(f.from_accounting for f in cold.seen.finished)  # seen ending, not read back
    assert {f.job.job_id for f in cold.seen.finished} < {
        r.job_id for r in ended
    }  # since the warm-up's last pass
    assert out.meta["handover_history"] == days and run_policy(small, "fifo").meta["handover_history"] == 0
