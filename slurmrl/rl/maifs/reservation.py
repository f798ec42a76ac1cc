"""The head job's reservation: what keeps large jobs from waiting behind a stream of small ones.

Each pass, the first job in the ordering's rank whose smallest allowed count
cannot be placed now (the *head*) gets a reservation computed by
:meth:`slurmrl.policy.backfill.EasyBackfill.reservation`, the same
calculator EASY backfill and the ``slurm`` policy use: running jobs are
released in the order of their users' time limits until the head can be
placed, which gives the *shadow time* and the currently free GPUs it would
get then. An agent's job may then start only where it cannot delay that:
its time limit ends by the shadow time (any free GPU), or it keeps off the
reserved GPUs (Lifka, JSSPP 1995; Slurm's sched/backfill top-job
reservation). Judged on time limits only, what Slurm knows; a job's limit is
wall time, so it bounds the job's end whatever count it starts on.

Elastic agents shrink to fit on their own: their options are masked by the
GPUs they may use, so a smaller count that fits outside the reservation
stays open when the asked one does not.

Jobs ranked ahead of the head (they fit now) are held to the reservation
too, so no start of a pass, the agents' or theirs, delays it; EASY would
start them first and reserve behind them, which a multi-agent step that
chooses counts and places together has no order for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.backfill import EasyBackfill, _free_part, limit_of
from slurmrl.policy.base import Ordering
from slurmrl.policy.elastic.curves import bounds, sized
from slurmrl.policy.placement.type_aware import TypeAware
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.rl.maifs.window import SCAN, could_fit


@dataclass
class Gate:
    """One pass's reservation: which GPUs each job may use. Mutable: ``outside`` follows the starts."""

    head: str  # the head job's id
    shadow: float  # when the head starts if every running job runs to its limit (inf: never)
    outside: GpuPool | None  # the free GPUs minus the reserved ones (None: nothing reserved)

    def pool_for(self, job: JobView, pool: GpuPool, now: float) -> GpuPool:
        """The GPUs ``job`` may start on: all free ones when it ends by the shadow time, else ``outside``."""
        if self.outside is None or job.job_id == self.head or now + limit_of(job) <= self.shadow:
            return pool
        return self.outside

    def taken(self, placement: Placement) -> None:
        """Record a start (already allocated in the full pool) in ``outside``."""
        if self.outside is None:
            return
        part = _free_part(placement, self.outside)
        if part is not None:
            self.outside.allocate(part)


class Reserver:
    """Tracks running jobs' limit-based ends across passes and builds each pass's :class:`Gate`."""

    def __init__(self, ordering: Ordering) -> None:
        # Where the head would go: on the fastest GPU type with room, closest-first there, as the
        # agents' racks and their "anywhere" option place (topology on a cluster of one type).
        self.placement = TypeAware()
        self.backfill = EasyBackfill("maifs-reservation", ordering, self.placement)

    def gate(self, view: ClusterView, ranked: Iterable[JobView], pool: GpuPool) -> Gate | None:
        """The reservation of the first ranked job that cannot start now; None when every one can."""
        self.backfill.before_pass(view)
        head = self.head(view, ranked, pool)
        if head is None:
            return None
        shadow, reserved = self.backfill.reservation(view, pool, head)
        outside = None
        if reserved is not None:
            outside = pool.copy()
            outside.withhold(reserved)
        return Gate(head.job_id, shadow, outside)

    def head(self, view: ClusterView, ranked: Iterable[JobView], pool: GpuPool) -> JobView | None:
        """The first of ``ranked`` (its smallest count, as placements take it) that no free GPUs hold."""
        for i, job in enumerate(ranked):
            if i >= SCAN:
                return None
            low = sized(job, bounds(job)[0], view.cluster)
            if not could_fit(job, pool) or self.placement.place(low, pool, view) is None:
                return low
        return None

    def started(self, view: ClusterView, began: Iterable[tuple[JobView, Placement]]) -> None:
        """Track the pass's starts at their limit-based ends (``now`` + time limit)."""
        for job, placement in began:
            self.backfill.on_start(job, placement)
        self.backfill.after_pass(view, [])
