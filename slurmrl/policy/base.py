"""The policy interface and the ordering + placement composition.

Scheduling is split in stages, each a small object with one method:
an *ordering* ranks the pending queue, a *placement* picks GPUs for one job,
and :class:`OrderedScheduler` walks the ranking, asks the placement for each
job and decides what starts (with optional EASY backfill). Whole-policy
implementations (for example RL agents that also choose placement) implement
:class:`Policy` directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.view import ClusterView, Decisions, JobIds, JobView, Promise, Start


@runtime_checkable
class Policy(Protocol):
    name: str
    # False for policies that read true durations (bounds, never deployed).
    deployable: bool

    def decide(self, view: ClusterView) -> Decisions: ...

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        """Give an oracle policy the true durations; others ignore it."""
        ...


class Ordering(Protocol):
    """Ranks the pending queue.

    Optional, for passes that may be skipped (``Decisions.promise``): an
    ``arrivals_last`` flag (no arrival ranks before a job already waiting),
    or ``overtakes(arrival, waiting) -> bool`` (whether an arrival may rank
    before a waiting job). An ordering with the method also promises that a
    pass which starts nothing leaves it nothing the next pass cannot catch
    up on (arrivals are read late, as a ranking kept between passes does).
    """

    def order(self, view: ClusterView) -> Iterable[JobView]:
        """Pending jobs, most urgent first. May return ``view.pending`` itself."""
        ...


class PlacementPolicy(Protocol):
    name: str

    def place(self, job: JobView, pool: GpuPool, view: ClusterView) -> Placement | None:
        """GPUs for ``job`` among ``pool``'s free ones, or None if it cannot start now.

        A question, never a commitment: schedulers also ask where a job
        *would* go (backfill reservations on scratch pools, what-if probes of
        a window), so an answer must not change any later answer. A placement
        that reads the pass's own starts (who now sits next to whom) learns
        them from ``confirm`` (see :func:`confirm_start`).
        """
        ...


# The hooks a pass runs besides the walk: a promise holds only where each is one whose effect is known.
PASS_HOOKS = ("after_blocked", "before_pass", "after_pass")


def uses_pass_hooks_of(cls: type, base: type) -> bool:
    """Whether ``cls`` runs ``base``'s own pass hooks, overriding none of them."""
    return all(getattr(cls, hook) is getattr(base, hook) for hook in PASS_HOOKS)


def confirm_start(placement: PlacementPolicy, job: JobView, chosen: Placement, view: ClusterView) -> None:
    """Tell ``placement`` that ``job`` starts on ``chosen`` in this pass.

    Only placements with a ``confirm(job, placement, view)`` method care
    (those that count neighbours started earlier in the pass); the others
    read nothing but the pool they are given.
    """
    confirm = getattr(placement, "confirm", None)
    if confirm is not None:
        confirm(job, chosen, view)


class OrderedScheduler:
    """Start jobs in the ordering's rank, placing each with ``placement``.

    Without backfill the first job that cannot be placed blocks the rest
    (strict priority, as Slurm's main scheduler does within a partition).
    Subclasses add backfill or preemption by overriding :meth:`after_blocked`.
    """

    deployable = True

    def __init__(self, name: str, ordering: Ordering, placement: PlacementPolicy) -> None:
        self.name = name
        self.ordering = ordering
        self.placement = placement
        # Strict priority over an ordering whose arrivals rank behind the jobs
        # already waiting (or that says which may not: ``overtakes``), with a
        # placement that reads no queue and a pass that keeps no state: the
        # first job a pass leaves waiting blocks every later pass until it
        # could be placed or a job ranked before it arrives (Decisions.promise).
        cls = type(self)
        fifo_like = (
            bool(getattr(ordering, "arrivals_last", False)) and getattr(ordering, "started", None) is None
        )
        self._overtakes = getattr(ordering, "overtakes", None)
        self._blocker: JobView | None = None
        self._promises = (
            cls.walk is OrderedScheduler.walk
            and (fifo_like or self._overtakes is not None)
            and bool(getattr(placement, "queue_blind", False))
            and self._passes_keep_promises()
        )

    def _passes_keep_promises(self) -> bool:
        """Whether a pass that starts nothing leaves nothing behind but what the next pass catches up on."""
        return uses_pass_hooks_of(type(self), OrderedScheduler)

    def promise(self) -> Promise | None:
        """What the pass just decided promises of the passes before the next answer (None: nothing)."""
        if not self._promises or self._blocker is None:
            return None
        return Promise(self._blocker, overtakes=self._overtakes)

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        bind = getattr(self.ordering, "bind_oracle", None)
        if bind is not None:
            bind(durations)

    def decide(self, view: ClusterView) -> Decisions:
        self.before_pass(view)
        ranked = self.ordering.order(view)
        starts = self.walk(view, ranked)
        started = getattr(self.ordering, "started", None)
        if started is not None:
            started([s.job_id for s in starts])
        info = self.after_pass(view, starts)
        return Decisions(order=JobIds(ranked), starts=tuple(starts), info=info, promise=self.promise())

    def walk(self, view: ClusterView, ranked: Iterable[JobView]) -> list[Start]:
        """Start jobs in rank order until one cannot be placed, then :meth:`after_blocked`.

        The first job left waiting is kept as ``_blocker``.
        """
        self._blocker = None
        if view.pool.total_free == 0:
            return []
        # Placements only read the pool, so the view's read-only one serves
        # until the first start; most passes under load start nothing.
        pool = view.pool
        copied = False
        starts: list[Start] = []
        queue = iter(ranked)
        for job in queue:
            if pool.total_free == 0:
                self._blocker = job
                break
            placement = self.placement.place(job, pool, view) if job.gpus <= pool.total_free else None
            if placement is None:
                self._blocker = job
                if type(self).after_blocked is not OrderedScheduler.after_blocked:
                    starts.extend(self.after_blocked(view, pool if copied else pool.copy(), job, queue))
                break
            if not copied:
                pool, copied = pool.copy(), True
            pool.allocate(placement)
            starts.append(Start(job.job_id, placement))
            self.started_now(view, job, placement)
        return starts

    def amend(
        self, view: ClusterView, held_back: Sequence[JobView], others: Sequence[tuple[JobView, Placement]]
    ) -> None:
        """The pass just decided was carried out otherwise: ``held_back`` did not start, ``others`` did.

        A policy led by this scheduler starts what it chooses; what the
        scheduler keeps between passes (its ranking, backfill's running
        jobs) must follow what happened, not what it proposed.
        """
        if held_back:
            unstarted = getattr(self.ordering, "unstarted", None)
            if unstarted is not None:
                unstarted([j.job_id for j in held_back])
        if others:
            started = getattr(self.ordering, "started", None)
            if started is not None:
                started([j.job_id for j, _ in others])

    def started_now(self, view: ClusterView, job: JobView, placement: Placement) -> None:
        """Every start of a pass goes through here: the placement is told, then :meth:`on_start`."""
        confirm_start(self.placement, job, placement, view)
        self.on_start(job, placement)

    # Hooks for schedulers that keep state across passes (backfill does).
    def before_pass(self, view: ClusterView) -> None:
        """Called first in every pass."""

    def on_start(self, job: JobView, placement: Placement) -> None:
        """Called for each job the pass starts (including from :meth:`after_blocked`)."""

    def after_pass(self, view: ClusterView, starts: list[Start]) -> dict[str, float]:
        """Called last; returns what goes into ``Decisions.info``."""
        return {}

    def after_blocked(
        self, view: ClusterView, pool: GpuPool, head: JobView, rest: Iterator[JobView]
    ) -> list[Start]:
        """Jobs to start from ``rest`` once ``head`` could not be placed; none by default.

        ``pool`` already holds the GPUs given to the jobs started before
        ``head``; an override must allocate what it starts from it.
        """
        return []
