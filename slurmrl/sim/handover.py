"""Warm-started replays: a heuristic schedules until a hand-over time, then the policy under test.

A replay that starts on an empty cluster spends its first hours with nothing
queued, a regime a policy deployed on a running cluster never sees. A
warm-started scenario (``Scenario.warmup_start``) replays earlier jobs under
a deployable heuristic first; at the hand-over the policy under test takes
the cluster over as it is (jobs running where the heuristic put them, its
backlog queued) and decides alone from then on, knowing only what it sees
from then on, as a policy newly deployed beside slurmctld would. Only jobs
submitted from the hand-over on are measured (:func:`measured`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from slurmrl.errors import PolicyError
from slurmrl.policy.base import Policy
from slurmrl.policy.view import ClusterView, Decisions
from slurmrl.sim.records import JobRecord, Sample

WARM_PLACEMENT = "topology"  # the warm-up heuristic's placement, as the RL environment's warm start


class HandOver:
    """``warm`` decides before ``at``, ``policy`` from ``at`` on; looks like ``policy`` to the caller."""

    def __init__(self, warm: Policy, policy: Policy, at: float) -> None:
        if not warm.deployable:
            raise PolicyError(f"warm-up policy '{warm.name}' reads true durations; it must be deployable")
        self.warm = warm
        self.policy = policy
        self.at = at
        self.name = policy.name
        self.deployable = policy.deployable
        # Consulted while every GPU is busy if either side may preempt.
        self.preemptive = bool(getattr(policy, "preemptive", False) or getattr(warm, "preemptive", False))
        self.placement = getattr(policy, "placement", None)

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        self.policy.bind_oracle(durations)

    def decide(self, view: ClusterView) -> Decisions:
        if view.now < self.at:
            decisions = self.warm.decide(view)
            if decisions.wake_at is None or decisions.wake_at > self.at:
                # Be consulted at the hand-over even if nothing happens then.
                return Decisions(
                    decisions.order, decisions.starts, decisions.preempt, self.at, decisions.info
                )
            return decisions
        return self.policy.decide(view)


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
