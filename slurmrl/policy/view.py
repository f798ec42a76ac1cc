"""What a policy sees and what it returns.

The simulator and the daemon each build a :class:`ClusterView` (from the
event engine's state, or from one Slurm snapshot) and apply the
:class:`Decisions` that come back. Nothing in here carries a job's true
duration: a deployable policy sees only what Slurm knows at decision time.
Oracle policies, which are bounds and never deployed, get durations through
:meth:`Policy.bind_oracle` instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter, is_not
from typing import Generic, TypeVar

from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool

T = TypeVar("T")
_job_id = attrgetter("job_id")


@dataclass(frozen=True, slots=True)
class JobView:
    job_id: str
    gpus: int
    submit_time: float
    user: str = ""
    group: str = ""  # VC, account or partition: the fair-share unit
    time_limit: float | None = None  # seconds, as the user asked
    name: str = ""
    model: str = ""  # model class when known ("" otherwise)
    num_nodes: int | None = None  # node count the user asked for, if any
    gpu_type: str = ""  # required GPU type, if any
    start_time: float | None = None  # set for running jobs
    placement: Placement | None = None  # set for running jobs
    attained_service: float = 0.0  # GPU-seconds run before the current start (preempted jobs)
    preemptions: int = 0
    # From this time on ``num_nodes`` no longer binds: delay scheduling, where a
    # job packed by default may spread once it has waited long enough (the
    # simulator's ``--locality relax:S``). Never set for a user's own request.
    spread_at: float = math.inf
    # Where the job may run (daemon; the simulator leaves these as they are):
    # node indices its partitions, --exclude, --constraint, CPUs, memory and
    # --exclusive allow now (None = any node), the user's own node list, and
    # the --nodes maximum (``num_nodes`` is the minimum).
    allowed_nodes: frozenset[int] | None = None
    required_nodes: tuple[str, ...] = ()
    exclusive: bool = False
    max_node_count: int | None = None
    # Elastic ("fungible") jobs: the (min, max) GPU counts the job may run
    # with; a policy may start it on any count in the range. None = rigid:
    # it runs on exactly ``gpus``.
    gpu_range: tuple[int, int] | None = None

    def running(self, start_time: float, placement: Placement) -> JobView:
        """This job as it runs from ``start_time`` on ``placement``.

        Spelled out rather than ``dataclasses.replace``, which costs twice as
        much, once per job start in a replay.
        """
        return JobView(
            self.job_id,
            self.gpus,
            self.submit_time,
            self.user,
            self.group,
            self.time_limit,
            self.name,
            self.model,
            self.num_nodes,
            self.gpu_type,
            start_time,
            placement,
            self.attained_service,
            self.preemptions,
            self.spread_at,
            gpu_range=self.gpu_range,
        )

    def accepts_gpus(self, count: int) -> bool:
        """Whether this job may run on ``count`` GPUs (exactly ``gpus`` unless elastic)."""
        if self.gpu_range is None:
            return count == self.gpus
        low, high = self.gpu_range
        return low <= count <= high

    def max_nodes(self, now: float) -> int | None:
        """The most nodes this job may span at ``now``; None when any number will do."""
        return self.num_nodes if now < self.spread_at else None

    def waited(self, now: float) -> float:
        return max(0.0, now - self.submit_time)

    def service(self, now: float) -> float:
        """GPU-seconds received so far: what Tiresias-style LAS ranks by."""
        ran = (now - self.start_time) if self.start_time is not None else 0.0
        return self.attained_service + self.gpus * max(0.0, ran)


@dataclass(frozen=True, slots=True)
class FinishedJob:
    """A job that left the system since the previous decision.

    History-based estimators (QSSF) learn from these; ``run_time`` is what
    Slurm's accounting reports as elapsed, known only after the fact.
    """

    job: JobView
    end_time: float
    run_time: float
    # Read back from accounting when the policy started (the daemon's
    # history_days, a warm start's --handover-history), not seen ending: an
    # estimator may keep such a sample apart from its window of recent ends
    # (slurmrl.policy.ordering.gittins).
    from_accounting: bool = False


@dataclass(frozen=True)
class ClusterView:
    now: float
    cluster: Cluster
    pool: GpuPool  # read-only: arrays refuse writes; call .copy() for scratch work
    # Pending jobs in arrival order (a requeued job goes to the back, as after
    # a Slurm requeue). A Collection, not a list: the simulator hands over
    # its live queue so a pass over thousands of jobs costs no copy.
    pending: Collection[JobView]
    running: Collection[JobView]
    finished: Sequence[FinishedJob] = ()


_DICT_VALUES = type({}.values())


def by_job_id(jobs: Collection[JobView]) -> Mapping[str, JobView]:
    """``jobs`` (a view's pending or running jobs) by job id.

    The simulator hands over the values of its own dicts by job id, read
    here through ``dict.values().mapping`` at no cost, so a policy that
    follows the jobs from pass to pass can match them in C; any other
    collection is keyed here.
    """
    if type(jobs) is _DICT_VALUES:
        return jobs.mapping  # type: ignore[attr-defined]
    return {j.job_id: j for j in jobs}


def changes(known: Mapping[str, JobView], now: Mapping[str, JobView]) -> tuple[list[str], list[str]]:
    """What turns ``known`` into ``now`` (both by job id): ids to drop (gone, or a new view of
    the job, as after a restart) and ids to add from ``now``, matched by identity in C.

    A pass mostly starts or stops a job or two among hundreds, so only the
    identity walk touches every job; the set difference is taken only when
    some job has left.
    """
    moved = list(compress(now, map(is_not, map(known.get, now), now.values())))
    dropped = [i for i in moved if i in known]  # new views of known jobs
    if len(known) - len(dropped) > len(now) - len(moved):
        dropped += sorted(known.keys() - now.keys())
    return dropped, moved


@dataclass(frozen=True, slots=True)
class Start:
    job_id: str
    placement: Placement


@dataclass(frozen=True)
class Promise:
    """What a pass that leaves ``job`` waiting promises of the passes before the next answer.

    Made only where ``job`` cannot be placed on the GPUs the pass leaves
    free. Whatever arrives, no such pass starts anything or changes what the
    policy keeps before ``job`` could be placed (its GPUs free on the nodes
    it may use: ``could_hold``), unless a wake-up comes, a job may now
    spread over more nodes or a stopped job waits again. Two more events
    void it: a pass at or after ``until`` (EASY backfill's next pass, which
    may start what the strict pass could not), and an arrival that may rank
    before ``job`` (``overtakes(arrival, job)``; None: arrivals rank last,
    as under FIFO).
    """

    job: JobView
    until: float = math.inf
    overtakes: Callable[[JobView, JobView], bool] | None = None

    def overtaken_by(self, arrival: JobView) -> bool:
        return self.overtakes is not None and self.overtakes(arrival, self.job)


@dataclass(frozen=True)
class Decisions:
    """A policy's answer for one decision point.

    ``order`` ranks pending jobs, first = most urgent; the daemon maps it to
    priorities. ``starts`` are the jobs to run now with their GPUs, in the
    order they were chosen; the daemon maps them to required node lists.
    ``preempt`` lists running jobs to stop (the simulator requeues them).
    """

    order: Sequence[str] = ()
    starts: tuple[Start, ...] = ()
    preempt: tuple[str, ...] = ()
    # Ask to be consulted again at this time even if no job arrives or ends
    # (Tiresias-style queue demotions happen between events).
    wake_at: float | None = None
    info: dict[str, float] = field(default_factory=dict, compare=False)
    # A promise about the passes before the next answer (None: none). A
    # backend may skip the passes it covers (the simulator does, counting
    # them as decisions: ``Simulator.next_view``); the daemon's cycles ignore it.
    promise: Promise | None = None


class Unrolled(Generic[T]):
    """A source read only as far as someone iterates, its items kept: every iteration sees the same ones.

    A pass walks a ranking of thousands of jobs but reads only its head; a
    one-shot source (a generator) can still be iterated again, and twice
    at once, as a list could.
    """

    __slots__ = ("_source", "_items")

    def __init__(self, source: Iterable[T]) -> None:
        self._source: Iterator[T] | None = iter(source)
        self._items: list[T] = []

    def __iter__(self) -> Iterator[T]:
        items, i = self._items, 0
        while True:
            while i < len(items):
                yield items[i]
                i += 1
            source = self._source
            if source is None:
                return
            item = next(source, _END)
            if item is _END:
                self._source = None  # lets the source go (a ranking snapshot, say)
                return
            items.append(item)  # type: ignore[arg-type]

    def all(self) -> list[T]:
        """Every item, the source read to its end."""
        if self._source is not None:
            self._items.extend(self._source)
            self._source = None
        return self._items


_END = object()


class JobIds(Sequence[str]):
    """Job ids of a ranking, read as far as they are used.

    A scheduling pass usually stops after a handful of jobs; building the
    full id tuple of a 10,000-job queue on every pass would dominate the
    simulator's run time, and only the daemon reads it whole.
    """

    __slots__ = ("_ranked", "_ids")

    def __init__(self, ranked: Iterable[JobView]) -> None:
        self._ranked = ranked  # nothing read yet: most passes' orders never are
        self._ids: Unrolled[str] | None = None

    def _unrolled(self) -> Unrolled[str]:
        if self._ids is None:
            self._ids = Unrolled(map(_job_id, self._ranked))
            self._ranked = ()
        return self._ids

    def __len__(self) -> int:
        return len(self._unrolled().all())

    def __getitem__(self, index):  # type: ignore[override]
        return self._unrolled().all()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._unrolled())

    def __eq__(self, other: object) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return f"JobIds({list(self)!r})"
