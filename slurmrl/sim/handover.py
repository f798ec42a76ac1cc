"""Warm-started replays: a heuristic schedules until a hand-over time, then the policy under test.

A replay that starts on an empty cluster spends its first hours with nothing
queued, a regime a policy deployed on a running cluster never sees. A
warm-started scenario (``Scenario.warmup_start``) replays earlier jobs under
a deployable heuristic first; at the hand-over the policy under test takes
the cluster over as it is (jobs running where the heuristic put them, its
backlog queued) and decides alone from then on. Only jobs submitted from
the hand-over on are measured (:func:`measured`).

By default the policy under test knows only what it sees from the hand-over
on, no finished job before it, as a daemon without accounting. The daemon reads the last ``history_days`` of ended jobs back from Slurm's
accounting when it starts (:mod:`slurmrl.daemon.history`);
:func:`with_history` gives a warm-started replay the same: the warm-up's
jobs that ended in the last days before the hand-over, with the first view.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from slurmrl.errors import PolicyError
from slurmrl.policy.base import Policy
from slurmrl.policy.view import ClusterView, Decisions, FinishedJob
from slurmrl.sim.gc_pause import paused_gc
from slurmrl.sim.records import JobRecord, Sample
from slurmrl.sim.simulator import Simulator

WARM_PLACEMENT = "topology"  # the warm-up heuristic's placement, as the RL environment's warm start


def warm_decisions(warm: Policy, view: ClusterView, at: float) -> Decisions:
    """What ``warm`` decides before the hand-over at ``at``, asking to be woken by then."""
    decisions = warm.decide(view)
    if decisions.wake_at is None or decisions.wake_at > at:
        # Be consulted at the hand-over even if nothing happens then.
        return Decisions(decisions.order, decisions.starts, decisions.preempt, at, decisions.info)
    return decisions


@dataclass(frozen=True)
class HandedOver:
    """A warm-started replay at its hand-over: the simulator, the first view to decide (None: it ended)."""

    sim: Simulator
    view: ClusterView | None
    warm_wall: float  # seconds the warm-up took when it was replayed


def play_warm_up(sim: Simulator, warm: Policy, at: float, preemptive: bool) -> HandedOver:
    """Let ``warm`` decide every view before ``at``; stop at the first view from ``at`` on.

    ``preemptive``: whether the replay asks while every GPU is busy, which
    the warm-up must do as the whole replay does (the policy under test may
    preempt), since a pass changes a heuristic's state even when it starts
    nothing.
    """
    if not warm.deployable:
        raise PolicyError(f"warm-up policy '{warm.name}' reads true durations; it must be deployable")
    skip = not (preemptive or getattr(warm, "preemptive", False))
    t0 = time.perf_counter()
    with paused_gc():
        view = sim.next_view(skip_when_full=skip)
        while view is not None and view.now < at:
            sim.apply(warm_decisions(warm, view, at))
            view = sim.next_view(skip_when_full=skip)
    return HandedOver(sim, view, time.perf_counter() - t0)


def with_history(start: HandedOver, at: float, days: float) -> HandedOver:
    """``start`` with the jobs that ended in the ``days`` before ``at`` as its first view's finished jobs,
    oldest end first, as the daemon hands a policy what accounting kept when it starts."""
    if start.view is None or days <= 0:
        return start
    since = at - days * 86_400.0
    ended = [run for run in start.sim.runs.values() if since <= run.end <= start.view.now]
    ended.sort(key=lambda run: (run.end, run.view.job_id))
    finished = [FinishedJob(run.view, run.end, run.run_time, from_accounting=True) for run in ended]
    return HandedOver(start.sim, replace(start.view, finished=finished), start.warm_wall)


class WarmStarts:
    """The last few warm-ups replayed in this process, kept at their hand-over and handed out as forks.

    Every policy compared on a warm-started workload takes over the same
    cluster: the warm-up depends on the workload, the simulator's config,
    the warm-up heuristic and whether the replay is preemptive, never on the
    policy under test. So the cells of one workload in one process (a
    ``compare`` worker, harmony's paired replay) play the warm-up once and
    each continues from a copy of it.
    """

    def __init__(self, size: int = 2) -> None:
        self.size = size  # warm-ups kept (0: every replay plays its own)
        self._kept: OrderedDict[tuple[object, ...], tuple[weakref.ref[object], HandedOver]] = OrderedDict()
        self.played = 0  # warm-ups replayed (the rest were forks)

    def take(
        self,
        workload: object,
        config: object,
        warm: Policy,
        at: float,
        preemptive: bool,
        sim: Callable[[], Simulator],
    ) -> HandedOver:
        """A fork of ``workload``'s warm-up under ``config`` by ``warm`` (a fresh heuristic, used only
        if the warm-up is played here); ``sim`` builds the simulator then."""
        key = (id(workload), config, warm.name, at, preemptive)
        hit = self._kept.get(key)
        if hit is None or hit[0]() is not workload:
            hit = (weakref.ref(workload), play_warm_up(sim(), warm, at, preemptive))
            self.played += 1
        self._kept[key] = hit
        self._kept.move_to_end(key)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)
        kept = hit[1]
        if key not in self._kept:  # nothing kept (size 0): the replay is the caller's own
            return kept
        twin, view = kept.sim.fork(kept.view)
        return HandedOver(twin, view, kept.warm_wall)

    def clear(self) -> None:
        """Forget every kept warm-up."""
        self._kept.clear()


WARM_STARTS = WarmStarts()


def warm_policy(name: str) -> Policy:
    """The warm-up heuristic by registered name, placing with :data:`WARM_PLACEMENT`."""
    from slurmrl.policy.registry import make_policy, policy_entry

    if not policy_entry(name).deployable:
        raise PolicyError(f"warm-up policy '{name}' reads true durations; it must be deployable")
    return make_policy(name, WARM_PLACEMENT)


def measured(
    records: Sequence[JobRecord], samples: Sequence[Sample], at: float
) -> tuple[tuple[JobRecord, ...], tuple[Sample, ...]]:
    """The records of jobs submitted at or after ``at`` and the samples from ``at`` on."""
    return tuple(r for r in records if r.submit_time >= at), tuple(s for s in samples if s.time >= at)


def inherited(records: Sequence[JobRecord], at: float) -> tuple[JobRecord, ...]:
    """The backlog the policy under test took over: jobs submitted before ``at`` not started by then.

    They are not measured (their wait began under the warm-up heuristic), but
    the policy under test decides when they run: the summary reports them
    apart so that serving measured jobs at their expense shows.
    """
    return tuple(r for r in records if r.submit_time < at and not r.start_time < at)
