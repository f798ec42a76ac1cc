"""A heuristic that leads a learned policy: checked by name, and its pass laid out for the agent.

A learned policy led by a deployable heuristic starts from it: each decision
point the heuristic decides as it would alone, and the policy's network
adds to a prior that reproduces that decision (topdrl's window, maifs's
agents; harmony's pointer leads with its fallback placement instead). This
module holds what they share: which names may lead, and the pass's
proposals on the GPUs left once the heuristic's preemptions are applied.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.errors import PolicyError
from slurmrl.policy.base import Policy
from slurmrl.policy.view import ClusterView, Decisions, JobView, Unrolled


def check_lead(name: str, config: Path) -> str:
    """``name`` when it is a registered deployable heuristic (or ""); a one-line error naming ``config`` otherwise."""
    if not name:
        return ""
    from slurmrl.policy.registry import policy_entry

    try:
        entry = policy_entry(name)
    except PolicyError as exc:
        raise PolicyError(f"'lead': {exc.message}", file=str(config), hint=exc.hint) from None
    if not entry.deployable or entry.learned:
        raise PolicyError(f"'lead' must be a deployable heuristic, not '{name}'", file=str(config))
    return name


def lead_policy(name: str, placement: str) -> Policy | None:
    """The heuristic ``name`` placing with ``placement``; None for ""."""
    if not name:
        return None
    from slurmrl.policy.registry import make_policy

    return make_policy(name, placement)


@dataclass(frozen=True)
class Proposal:
    """One pass of the lead heuristic, as the led policy reads it."""

    decisions: Decisions
    pool: GpuPool  # scratch: the free GPUs plus those of the jobs it preempts
    starts: list[tuple[JobView, Placement]]  # its starts, in its order
    # The other pending jobs in its rank, read only as far as a pass looks (a window's worth).
    ranked: Unrolled[JobView]
    waiting: dict[str, JobView]  # the view's pending jobs by id

    def order(self, started: list[JobView]) -> Iterator[JobView]:
        """Pending jobs for ``Decisions.order``: the led policy's starts, then the heuristic's rank.

        Lazy, as the heuristic's own order is: only the daemon reads it whole.
        """
        waiting = self.waiting
        seen = {j.job_id for j in started}
        yield from started
        yield from (waiting[i] for i in self.decisions.order if i in waiting and i not in seen)


def propose(lead: Policy, view: ClusterView) -> Proposal:
    """Ask ``lead`` for its pass and lay it out (jobs it resizes are looked up among the running)."""
    decisions = lead.decide(view)
    jobs = {j.job_id: j for j in view.running}
    pool = view.pool.copy()
    for job_id in decisions.preempt:
        held = jobs[job_id].placement
        if held is not None:
            pool.release(held)
    waiting = {j.job_id: j for j in view.pending}
    jobs.update(waiting)
    starts = [(jobs[s.job_id], s.placement) for s in decisions.starts]
    taken = {s.job_id for s in decisions.starts}
    ranked = Unrolled(waiting[i] for i in decisions.order if i in waiting and i not in taken)
    return Proposal(decisions, pool, starts, ranked, waiting)


def led_decisions(
    lead: Policy, proposal: Proposal, view: ClusterView, began: list[tuple[JobView, Placement]]
) -> Decisions:
    """The led policy's answer: its starts, with the heuristic's preemptions, wake-up and info.

    The lead is told when those starts are not the ones it proposed (:func:`settle`).
    """
    from slurmrl.policy.view import JobIds, Start

    settle(lead, proposal, view, began)
    started = [job for job, _ in began]
    return Decisions(
        order=JobIds(proposal.order(started)),
        starts=tuple(Start(job.job_id, placement) for job, placement in began),
        preempt=proposal.decisions.preempt,
        wake_at=proposal.decisions.wake_at,
        info=proposal.decisions.info,
    )


def runs_after(view: ClusterView, proposal: Proposal) -> bool:
    """A job keeps running through this pass: one the lead does not preempt.

    Only an end or an arrival makes the next decision point, so a led pass
    that starts nothing while nothing runs could leave jobs waiting forever
    on an idle cluster.
    """
    stopping = set(proposal.decisions.preempt)
    return any(j.job_id not in stopping for j in view.running)


def settle(
    lead: Policy, proposal: Proposal, view: ClusterView, began: list[tuple[JobView, Placement]]
) -> None:
    """Tell ``lead`` what its pass became: the proposals held back and the other starts.

    A heuristic that keeps state between passes (a ranking told of its own
    starts, backfill's running jobs) takes its proposals for starts; its
    cheap consistency checks (counts) cannot see a proposal held back while
    another job starts in its stead.
    """
    proposed = {j.job_id: p for j, p in proposal.starts}
    chosen = {j.job_id: p for j, p in began}
    held_back = [j for j, p in proposal.starts if chosen.get(j.job_id) != p]
    others = [(j, p) for j, p in began if proposed.get(j.job_id) != p]
    amend = getattr(lead, "amend", None)
    if (held_back or others) and amend is not None:
        amend(view, held_back, others)


class Led:
    """Mixin: a policy is as preemptive as the heuristic leading it (whose preemptions it passes on)."""

    lead: Policy | None

    @property
    def preemptive(self) -> bool:
        return bool(getattr(self.lead, "preemptive", False))
