"""Slurm's sched/backfill: a reservation for every pending job it tests, not only the first.

EASY backfill (:mod:`slurmrl.policy.backfill`) protects the head of the queue
alone. Slurm's backfill plugin walks the pending jobs in priority order,
computes each one's earliest start on
a time map of when resources free up (running jobs end at their time
limits), and records that start as a reservation in the map when it falls
within ``bf_window``; a later job may start now only where it overlaps none
of the reservations made before it, so no backfilled job delays any
higher-priority job the pass tested. A job whose earliest start lies beyond
the window gets no reservation. Times in the map are rounded to
``bf_resolution``. (``src/plugins/sched/backfill/backfill.c``:
``_attempt_backfill`` and its ``node_space`` map; slurm.conf(5),
SchedulerParameters; sched_config.html.)

Two limits end a pass, as in ``_attempt_backfill`` (22.05 to 26.05).
``bf_max_job_test`` counts the jobs actually tested (``bf_last_depth_try``,
counted just before the select plugin's test): a job none of whose start
times leaves it enough nodes outside the reservations (and all of its own
node list) is passed over without a test and counts for nothing. And the
``node_space`` table holds at most ``bf_node_space_size`` records (default
``bf_max_job_test``): each reservation splits the time slices where it starts
and ends, and once the table is full the pass stops before the next
reservation (:class:`NodeSpace` keeps Slurm's record count).

As in Slurm, the main scheduler (strict priority order, stopping at the
first job that cannot start) runs at every decision, i.e. every job submit
and end, and the backfill pass at most every ``bf_interval`` seconds, as
:class:`EasyBackfill` splits them; the running-job bookkeeping is
EasyBackfill's. A job with its own node list (ReqNodeList, at least as many
nodes as it asks for) runs only there, and when it cannot start it does not
stop the main scheduler: its nodes are withheld from the jobs after it and
the queue goes on, as ``_schedule`` in ``src/slurmctld/job_scheduler.c``
does (22.05 to 26.05); the backfill pass then tests it in its place.

A reservation withholds the whole nodes the placement would give the job,
as Slurm's ``node_space`` map (node bitmaps per time slice) does. The
earliest start is searched at the distinct release and reservation-end
times rather than by the select plugin's will-run test, and the GPUs a
reserved job would get are the placement policy's choice.

Cost: the GPUs released per node by each candidate start time are kept as
one ``[time, node]`` table for the pass, so a job's candidate times are
tested a batch at a time with array work and a placement is tried only
where the counts allow one. A job that could not start within the window
rules out every later job of the same shape asking for at least as many
GPUs for at least as long, since a pass only ever takes resources away.
And reservations matter only through the jobs they keep from starting now:
once no job left in the list could fit in the free GPUs outside the
reservations, the pass stops (its later reservations would change nothing).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice

import numpy as np

from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.backfill import (
    BF_INTERVAL,
    BF_MAX_JOB_TEST,
    EasyBackfill,
    _mask,
    _paint,
    limit_of,
)
from slurmrl.policy.base import Ordering, PlacementPolicy
from slurmrl.policy.placement.common import allowed_mask, tables
from slurmrl.policy.view import ClusterView, JobView, Start

# Slurm's defaults for the other two options (slurm.conf(5), SchedulerParameters).
BF_RESOLUTION = 60.0
BF_WINDOW = 86400.0  # 1440 minutes
# Placements that spread a multi-node job over the first nodes with free GPUs in index order.
IN_ORDER_PLACEMENTS = frozenset({"first-fit"})
# Candidate start times evaluated together; a job that starts early costs one small batch.
_FIRST_BATCH = 8


@dataclass(frozen=True)
class Shape:
    """What decides where a job can go, besides its GPU count and time limit."""

    gpu_type: str
    max_nodes: int | None
    model: str


@dataclass
class _Verdicts:
    """What earlier jobs of one shape showed about later ones in the same pass.

    ``failed``: (GPUs, limit) pairs with no start within the window;
    ``floors``: the earliest start found per (GPUs, limit). A job asking for
    at least as much of both can do no better.
    """

    failed: list[tuple[int, float]] = field(default_factory=list)
    floors: dict[tuple[int, float], float] = field(default_factory=dict)

    def hopeless(self, gpus: int, limit: float) -> bool:
        return any(gpus >= g and limit >= lim for g, lim in self.failed)

    def floor(self, gpus: int, limit: float, now: float) -> float:
        """Earliest start found for a job asking the same; only exact matches are kept (cheap)."""
        return self.floors.get((gpus, limit), now)


class TimeMap:
    """When each GPU frees up, and which GPUs the pass has reserved for when.

    ``release[node, gpu]``: the time a GPU is free from (``now`` for free
    ones, the rounded limit-based end of its job otherwise, inf for padding).
    A reservation withholds whole nodes, as the node bitmaps of Slurm's
    ``node_space`` map do; reservations are rows of a 0/1 matrix over nodes
    with their start and end times, so the nodes blocked at a batch of
    candidate times are one matrix product of the overlap table with it.
    """

    def __init__(self, release: np.ndarray, now: float, horizon: float, resolution: float) -> None:
        self.release = release
        self.now, self.horizon, self.resolution = now, horizon, resolution
        self.masks = np.zeros((16, release.shape[0]), dtype=np.float32)
        self.starts = np.zeros(16)
        self.ends = np.zeros(16)
        self.count = 0
        self.first_reserved = np.full(release.shape[0], math.inf)  # per node: earliest reservation start
        self.never_reserved = release.shape[0]  # nodes no reservation holds
        finite = release[np.isfinite(release) & (release > now) & (release <= horizon)]
        # Candidate start times: now, then every time GPUs free up within the
        # window, with the GPUs released by then per node ([time, node]).
        self.times = np.array([now, *sorted(set(finite.tolist()))])
        self.released = self._released_at(self.times)
        self._most: list[int] | None = None  # see most_released; None: to work out again

    def round_up(self, t: float) -> float:
        r = self.resolution
        return math.ceil(t / r) * r

    def first_index(self, floor: float) -> int:
        """The first candidate time at or after ``floor``."""
        return int(np.searchsorted(self.times, floor, side="left"))

    def node_counts(self, lo: int, hi: int, limit: float) -> tuple[np.ndarray, np.ndarray | None]:
        """``[time, node]`` GPUs usable from candidate ``lo`` to ``hi`` for ``limit`` seconds, and the
        ``[time, node]`` nodes blocked by reservations then (None if none are)."""
        times, counts = self.times[lo:hi], self.released[lo:hi]
        n = self.count
        if not n:
            return counts, None
        overlap = (self.starts[:n, None] < times + limit) & (self.ends[:n, None] > times)
        if not overlap.any():
            return counts, None
        blocked = (overlap.T.astype(np.float32) @ self.masks[:n]) > 0.5
        return np.where(blocked, 0, counts), blocked

    def gpus_at(self, t: float, blocked: np.ndarray | None) -> np.ndarray:
        """``[node, gpu]``: free at ``t`` on a node no reservation blocks (``blocked`` per node)."""
        avail = self.release <= t
        if blocked is not None:
            avail &= ~blocked[:, None]
        return avail

    def start(self, mask: np.ndarray, end: float) -> None:
        """GPUs given to a job that starts now, busy until ``end``.

        They were free, so counted as released from the first candidate time
        on; now they count only from ``end`` (never, beyond the window).
        """
        end = self.round_up(end)
        self.release[mask] = end
        self._add_time(end)
        self._most = None
        stop = int(self.times.searchsorted(end))
        taken = mask.sum(axis=1)
        for node in taken.nonzero()[0].tolist():
            self.released[:stop, node] -= taken[node]

    def most_released(self, k: int | None) -> int:
        """GPUs on the ``k`` nodes (every node: None) that hold the most once the window's releases are in.

        No reservation is counted, so no start in the window can use more:
        the counts only grow with time, and reservations only take nodes away.
        """
        if self._most is None:
            self._most = np.cumsum(np.sort(self.released[-1])[::-1]).tolist()
        n = len(self._most)
        return self._most[n - 1 if k is None or k >= n else k - 1]

    def reserve(self, nodes: tuple[int, ...], start: float, end: float) -> None:
        """Withhold ``nodes`` from ``start`` to ``end`` for a job that cannot start now."""
        end = self.round_up(end)
        n = self.count
        if n == self.starts.size:
            self.masks = np.concatenate([self.masks, np.zeros_like(self.masks)])
            self.starts = np.concatenate([self.starts, np.zeros(n)])
            self.ends = np.concatenate([self.ends, np.zeros(n)])
        picked = list(nodes)
        self.masks[n] = 0.0
        self.masks[n, picked] = 1.0
        self.starts[n], self.ends[n] = start, end
        self.count = n + 1
        self.first_reserved[picked] = np.minimum(self.first_reserved[picked], start)
        self.never_reserved = int(np.isinf(self.first_reserved).sum())
        self._add_time(end)

    def reaches_test(self, nodes: int, listed: frozenset[int] | None, limit: float) -> bool:
        """Whether a job asking for ``nodes`` nodes (all of ``listed``, its own node list, if
        any) has a start time in the window with that many nodes outside the reservations
        for ``limit`` seconds: Slurm's check before the select plugin's test, which counts
        nodes only (GPUs are the select plugin's business)."""
        if nodes <= self.never_reserved and (
            listed is None or all(math.isinf(self.first_reserved[n]) for n in listed)
        ):
            return True
        _, blocked = self.node_counts(0, self.times.size, limit)
        if blocked is None:
            return nodes <= self.release.shape[0]
        open_nodes = ~blocked
        ok = open_nodes.sum(axis=1) >= nodes
        if listed:
            ok &= open_nodes[:, sorted(listed)].all(axis=1)
        return bool(ok.any())

    def _released_at(self, times: np.ndarray) -> np.ndarray:
        """``[time, node]``: GPUs released by each of the (sorted) ``times``, by histogram and running sum."""
        nodes, width = self.release.shape
        first = np.searchsorted(times, self.release, side="left").ravel()  # first time each GPU counts at
        node = np.repeat(np.arange(nodes), width)
        hist = np.bincount(first * nodes + node, minlength=(times.size + 1) * nodes)
        return np.cumsum(hist.reshape(times.size + 1, nodes)[:-1], axis=0)

    def _add_time(self, t: float) -> None:
        """Make ``t`` a candidate time. Every release within the window is one
        already, so the GPUs released by ``t`` are those released by the
        candidate before it."""
        if self.now < t <= self.horizon:
            i = int(np.searchsorted(self.times, t))
            if i == self.times.size or self.times[i] != t:
                self.times = np.concatenate((self.times[:i], [t], self.times[i:]))
                rows = self.released
                self.released = np.concatenate((rows[:i], rows[i - 1 : i], rows[i:]))


class NodeSpace:
    """The record count of Slurm's ``node_space`` table over one backfill pass.

    Slurm keeps what each future time slice leaves free as a linked list of
    records (begin, end, nodes free), from the pass start to the end of the
    window, both rounded down to ``bf_resolution``. ``_add_reservation``
    inserts a record where a reservation starts inside a slice (even at the
    slice's own start) and one where it ends inside a slice, then merges at
    most one pair of neighbouring records left alike; records are array slots
    never given back, so the count only grows. Running jobs add none
    (bf_running_job_reserve is off by default). Nodes are the bits of an int.
    """

    def __init__(self, now: float, window: float, resolution: float) -> None:
        self.resolution = resolution
        self.slices = [[self.down(now), self.down(now + window), 0]]  # begin, end, reserved nodes
        self.records = 1

    def down(self, t: float) -> float:
        return math.floor(t / self.resolution) * self.resolution

    def add(self, start: float, end: float, nodes: tuple[int, ...]) -> None:
        """Reserve ``nodes`` from ``start`` to ``end`` as ``_add_reservation`` does."""
        sl, mask = self.slices, sum(1 << n for n in set(nodes))
        start = max(self.down(start), sl[0][0])
        end = max(self.down(end), start + self.resolution)
        before, at = 0, None
        for k, piece in enumerate(sl):
            if piece[1] > start:
                sl.insert(k + 1, [start, piece[1], piece[2]])
                piece[1] = start
                self.records += 1
                at = k
                break
            if piece[1] == start:
                at = k
                break
            before = k
        if at is None:
            return  # starts after the window
        after = len(sl)  # the merge below looks no further than the record after the reservation
        k = at + 1
        while k < len(sl):
            piece = sl[k]
            if end < piece[1]:
                sl.insert(k + 1, [end, piece[1], piece[2]])
                piece[1] = end
                self.records += 1
            piece[2] |= mask
            if end == piece[1]:
                after = k + 1
                break
            k += 1
        for k in range(before, min(after, len(sl) - 1)):
            if sl[k][2] == sl[k + 1][2]:
                sl[k][1] = sl[k + 1][1]
                del sl[k + 1]
                break


# What testing one job in a pass came to.
UNTESTED, TESTED, CHANGED, TABLE_FULL = range(4)


class SlurmBackfill(EasyBackfill):
    """Strict priority order at every decision, then Slurm's backfill pass every ``bf_interval``."""

    def __init__(
        self,
        name: str,
        ordering: Ordering,
        placement: PlacementPolicy,
        *,
        max_job_test: int = BF_MAX_JOB_TEST,
        bf_interval: float = BF_INTERVAL,
        bf_resolution: float = BF_RESOLUTION,
        bf_window: float = BF_WINDOW,
        backfill: bool = True,
        node_space_size: int | None = None,
    ) -> None:
        super().__init__(name, ordering, placement, max_job_test=max_job_test, bf_interval=bf_interval)
        self.node_space_size = node_space_size  # None: max_job_test's, as in Slurm
        self.bf_resolution = bf_resolution
        self.bf_window = bf_window
        self.backfill = backfill
        self.last_reservations = 0  # reservations made by the last backfill pass
        self.last_tested = 0  # jobs the last backfill pass tested (Slurm's bf_last_depth_try)
        self._in_order = placement.name in IN_ORDER_PLACEMENTS
        self._rows: dict[str, tuple[JobView, tuple[int, int, float, bool]]] = {}  # per job, for _Queue
        self._names: tuple[Cluster, dict[str, int]] | None = None  # node name -> index, per cluster

    def walk(self, view: ClusterView, ranked: Iterable[JobView]) -> list[Start]:
        """The main scheduler: strict priority order until a job cannot start, then backfill.

        A job with its own node list that cannot start withholds those nodes
        from the jobs after it instead of stopping the walk (Slurm's
        ``_schedule``: such a job clears ``fail_by_part`` and its
        ``req_node_bitmap`` leaves ``avail_node_bitmap``).
        """
        pool = view.pool
        if pool.total_free == 0:
            return []
        copied = False
        open_pool: GpuPool | None = None  # ``pool`` less the withheld nodes, once any are
        passed: list[JobView] = []  # jobs with a node list the walk went past, for backfill
        starts: list[Start] = []
        queue = iter(ranked)
        for job in queue:
            if pool.total_free == 0:
                break
            here = pool if open_pool is None else open_pool
            listed = self._node_list(job, view.cluster)
            if listed is not None:
                job = listed[0]
            placement = self.placement.place(job, here, view) if job.gpus <= here.total_free else None
            if placement is None:
                if listed is not None and len(listed[1]) >= (job.num_nodes or 1):
                    if open_pool is None:
                        open_pool = pool.copy()
                    open_pool.withhold(_node_rows(listed[1], open_pool.free))
                    passed.append(job)
                    continue
                starts.extend(self._backfill(view, pool if copied else pool.copy(), job, queue, passed))
                break
            if not copied:
                pool, copied = pool.copy(), True
            pool.allocate(placement)
            if open_pool is not None:
                open_pool.allocate(placement)
            starts.append(Start(job.job_id, placement))
            self.started_now(view, job, placement)
        return starts

    def _node_list(self, job: JobView, cluster: Cluster) -> tuple[JobView, frozenset[int]] | None:
        """``job`` bound to its own node list, and that list's nodes; None without one.

        A name the cluster does not hold leaves the job nowhere to run.
        """
        if not job.required_nodes:
            return None
        if self._names is None or self._names[0] is not cluster:
            self._names = (cluster, {n.name: i for i, n in enumerate(cluster.nodes)})
        index = self._names[1]
        listed = frozenset(index[n] for n in job.required_nodes if n in index)
        usable = listed if len(listed) == len(set(job.required_nodes)) else frozenset()
        if job.allowed_nodes is not None:
            usable &= job.allowed_nodes
        return replace(job, allowed_nodes=usable), listed

    def _listed(self, job: JobView, cluster: Cluster) -> frozenset[int] | None:
        """The nodes of ``job``'s own node list; None without one."""
        listed = self._node_list(job, cluster)
        return None if listed is None else listed[1]

    def _bound(self, job: JobView, cluster: Cluster) -> JobView:
        listed = self._node_list(job, cluster)
        return job if listed is None else listed[0]

    def after_blocked(
        self, view: ClusterView, pool: GpuPool, head: JobView, rest: Iterator[JobView]
    ) -> list[Start]:
        return self._backfill(view, pool, head, rest, [])

    def _backfill(
        self, view: ClusterView, pool: GpuPool, head: JobView, rest: Iterator[JobView], passed: list[JobView]
    ) -> list[Start]:
        """The backfill pass over ``passed`` (jobs with a node list the main scheduler went past,
        in their order), ``head`` (the job it stopped at) and ``rest``."""
        now = view.now
        if not self.backfill or now < self._next_backfill:
            return []
        self._next_backfill = now + self.bf_interval
        if pool.total_free == 0:
            return []
        if len(self._rows) > 4 * len(view.pending) + 1024:
            self._rows.clear()
        cluster = view.cluster
        queue = _Queue(
            [*passed, head], rest, now, len(cluster.nodes), self._rows, lambda j: self._bound(j, cluster)
        )
        most = self.max_job_test
        unreserved = np.full(len(pool.cluster.nodes), math.inf)
        target = queue.next_fit(0, pool.free_count, unreserved, most)
        if target < 0:
            return []  # nothing within reach could start now whatever the reservations
        tmap = TimeMap(self._release_times(view, pool), now, now + self.bf_window, self.bf_resolution)
        space = NodeSpace(now, self.bf_window, self.bf_resolution)
        size = self.node_space_size if self.node_space_size is not None else most
        verdicts: dict[Shape, _Verdicts] = {}
        starts: list[Start] = []
        i = tested = 0

        def reaches(j: JobView) -> bool:
            return tmap.reaches_test(j.num_nodes or 1, self._listed(j, view.cluster), limit_of(j))

        # Reservations matter only through the jobs they keep from starting now:
        # the pass goes on only while some job at or after the current one
        # (``target``, the first such) could still fit in the free GPUs, and
        # fewer than ``most`` jobs were tested before it.
        while 0 <= i <= target and tested < most:
            job = queue.jobs[i]
            outcome = self._test(view, pool, tmap, space, size, verdicts, job, job is head, starts)
            if outcome == TABLE_FULL:
                break
            tested += outcome != UNTESTED
            i += 1
            if outcome == CHANGED or i > target:
                target = queue.reach(
                    i, max(i, target), most - tested, pool.free_count, tmap.first_reserved, reaches
                )
        self.last_tested = tested
        return starts

    def _test(
        self,
        view: ClusterView,
        pool: GpuPool,
        tmap: TimeMap,
        space: NodeSpace,
        size: int,
        verdicts: dict[Shape, _Verdicts],
        job: JobView,
        is_head: bool,
        starts: list[Start],
    ) -> int:
        """Start ``job`` now or reserve its earliest start: UNTESTED (too few nodes outside the
        reservations), TESTED (neither), CHANGED (either), or TABLE_FULL (no room to reserve)."""
        now = view.now
        limit = limit_of(job)
        if not tmap.reaches_test(job.num_nodes or 1, self._listed(job, view.cluster), limit):
            return UNTESTED
        shape = Shape(job.gpu_type, job.max_nodes(now), job.model)
        if job.allowed_nodes is not None or job.required_nodes:
            shape = Shape(f"{job.job_id}\0", shape.max_nodes, shape.model)  # never shared
        known = verdicts.setdefault(shape, _Verdicts())
        if known.hopeless(job.gpus, limit):
            return TESTED
        # The main scheduler has just failed the head on this very pool: start from the next step.
        floor = max(known.floor(job.gpus, limit, now), math.nextafter(now, math.inf) if is_head else now)
        found = self._earliest(view, pool, tmap, job, limit, floor)
        if found is None:
            known.failed.append((job.gpus, limit))
            return TESTED
        at, placement = found
        known.floors[job.gpus, limit] = at
        if at <= now:
            pool.allocate(placement)
            tmap.start(_mask(placement, pool.free), now + limit)
            starts.append(Start(job.job_id, placement))
            self.started_now(view, job, placement)
            return CHANGED
        if space.records >= size:
            return TABLE_FULL
        tmap.reserve(placement.nodes, at, at + limit)
        space.add(at, at + limit, placement.nodes)
        self.last_reservations += 1
        if is_head:
            self.last_shadow = at
        return CHANGED

    def before_pass(self, view: ClusterView) -> None:
        super().before_pass(view)
        self.last_reservations = 0
        self.last_tested = 0

    def _release_times(self, view: ClusterView, pool: GpuPool) -> np.ndarray:
        """Per GPU: ``now`` if free, else its job's limit-based end rounded up to the resolution."""
        now = view.now
        grid = self._grid.copy() if self._grid is not None else np.full(pool.free.shape, math.inf)
        for job, placement in self._pass:
            _paint(grid, placement, now + limit_of(job))
        r = self.bf_resolution
        # A job past its limit (limits not enforced) is taken to end at the next step.
        busy = np.maximum(np.ceil(grid / r) * r, math.ceil((now + 1e-9) / r) * r)
        return np.where(pool.free, now, busy)

    def _earliest(
        self, view: ClusterView, pool: GpuPool, tmap: TimeMap, job: JobView, limit: float, floor: float
    ) -> tuple[float, Placement] | None:
        """The earliest start within the window and the GPUs for it, or None."""
        lo, total = tmap.first_index(floor), tmap.times.size
        if lo >= total or job.gpus > pool.cluster.total_gpus:
            return None
        eligible = _eligible(job, pool)
        k = job.max_nodes(view.now)
        if eligible is None and (k is None or k > 0) and tmap.most_released(k) < job.gpus:
            return None  # too few GPUs free up in the window even with no reservation in the way
        size = _FIRST_BATCH
        while lo < total:
            hi = min(total, lo + size)
            counts, blocked = tmap.node_counts(lo, hi, limit)
            if eligible is not None:
                counts = counts * eligible
            for i in np.flatnonzero(_could_fit(counts, job.gpus, k, self._in_order)).tolist():
                at = float(tmap.times[lo + i])
                avail = tmap.gpus_at(at, None if blocked is None else blocked[i])
                if eligible is not None:
                    avail &= eligible[:, None]
                placement = self._place_on(view, pool, job, avail)
                if placement is not None:
                    return at, placement
            lo, size = hi, size * 4
        return None

    def _place_on(
        self, view: ClusterView, pool: GpuPool, job: JobView, avail: np.ndarray
    ) -> Placement | None:
        """The placement's choice among the GPUs ``avail`` marks."""
        if np.array_equal(avail, pool.free):
            return self.placement.place(job, pool, view)
        return self.placement.place(job, GpuPool.of_free(pool.cluster, avail), view)


class _Queue:
    """The jobs a pass may test, read from the ranking only as far as needed.

    :meth:`next_fit` finds the first job from a position on that could still
    start now: one that fits, on the nodes it may span, in the free GPUs of
    nodes no reservation claims before its time limit would run out (jobs
    bound to a GPU type or a node list are always taken to fit). Starts and
    reservations only take room away, so a job found unfit stays unfit for
    the rest of the pass.
    """

    _CHUNK = 64
    _SCALAR = 4  # jobs tested one by one before the array test takes over

    def __init__(
        self,
        first: list[JobView],
        rest: Iterator[JobView],
        now: float,
        nodes: int,
        cache: dict[str, tuple[JobView, tuple[int, int, float, bool]]],
        bind: Callable[[JobView], JobView],
    ) -> None:
        self.jobs: list[JobView] = []
        self._rest = rest
        self._bind = bind  # a job with its own node list, held to it (read from ``rest`` only)
        self._now, self._nodes, self._cache = now, nodes, cache
        self._rows = np.zeros((0, 4))
        self._tuples: list[tuple[int, int, float, bool]] = []  # the same rows, for the scalar test
        self._load(first)

    def _load(self, jobs: list[JobView]) -> None:
        rows = []
        for j in jobs:
            row = self._cache.get(j.job_id)
            if row is None or row[0] is not j or j.spread_at <= self._now:
                k = j.max_nodes(self._now)
                span = self._nodes if k is None or k > self._nodes else k
                row = self._cache[j.job_id] = (
                    j,
                    (j.gpus, span, limit_of(j), bool(j.gpu_type) or j.allowed_nodes is not None),
                )
            rows.append(row[1])
        self.jobs.extend(jobs)
        self._tuples.extend(rows)
        self._rows = np.concatenate([self._rows, np.array(rows, dtype=float).reshape(-1, 4)])

    def reach(
        self,
        lo: int,
        i: int,
        left: int,
        free_count: np.ndarray,
        first_reserved: np.ndarray,
        reaches: Callable[[JobView], bool],
    ) -> int:
        """:meth:`next_fit` from ``i`` among the jobs a pass at ``lo`` with ``left`` tests to go
        can reach: ``lo + left`` of them, and one more for each that will not be tested. Jobs
        found untested now stay so: reservations only grow."""
        checked, stop = lo, lo + left
        while True:
            hit = self.next_fit(i, free_count, first_reserved, stop)
            if hit >= 0 or len(self.jobs) < stop:
                return hit
            extra = sum(not reaches(job) for job in self.jobs[checked:stop])
            if not extra:
                return -1
            checked = i = stop
            stop += extra

    def next_fit(self, i: int, free_count: np.ndarray, first_reserved: np.ndarray, stop: int) -> int:
        """The first position from ``i`` on, before ``stop``, whose job could still start now;
        -1 if none."""
        counts: list[int] | None = None
        while i < stop:
            if i >= len(self.jobs):
                bind = self._bind
                more = [bind(j) if j.required_nodes else j for j in islice(self._rest, self._CHUNK)]
                if not more:
                    break
                self._load(more)
                continue
            if counts is None:
                # The job found is nearly always among the first few: those are
                # tested on plain numbers, the rest as one array.
                counts, reserved = free_count.tolist(), first_reserved.tolist()
                end = min(i + self._SCALAR, stop, len(self.jobs))
                for j in range(i, end):
                    if _could_start(self._tuples[j], self._now, counts, reserved):
                        return j
                i = end
                continue
            hits = np.flatnonzero(_could_start_all(self._rows[i:stop], self._now, free_count, first_reserved))
            if hits.size:
                return i + int(hits[0])
            i = min(stop, len(self.jobs))
        return -1


def _could_start_all(
    rows: np.ndarray, now: float, free_count: np.ndarray, first_reserved: np.ndarray
) -> np.ndarray:
    """Per row (GPUs, span, limit, typed): whether the job could start now.

    A node counts for a job if no reservation claims it before the job's
    time limit would run out; the job could start if its ``span`` best such
    nodes hold its GPUs. Jobs bound to a GPU type or node list always could.
    """
    usable = np.where(first_reserved[None, :] >= now + rows[:, 2:3], free_count[None, :], 0)
    top = np.cumsum(-np.sort(-usable, axis=1), axis=1)  # [job, k-1]: GPUs on the k best nodes
    spans = rows[:, 1].astype(np.int64)
    return (rows[:, 0] <= top[np.arange(len(rows)), np.maximum(spans, 1) - 1]) | (rows[:, 3] > 0)


def _could_start(
    row: tuple[int, int, float, bool], now: float, counts: list[int], reserved: list[float]
) -> bool:
    """:func:`_could_start_all` for one row, on plain lists: cheaper for the first few jobs."""
    gpus, span, limit, typed = row
    if typed:
        return True
    until = now + limit
    usable = [c for c, r in zip(counts, reserved, strict=True) if c and r >= until]
    if span <= 1:
        return gpus <= max(usable, default=0)
    if span >= len(usable):
        return gpus <= sum(usable)
    return gpus <= sum(sorted(usable, reverse=True)[:span])


def _node_rows(nodes: frozenset[int], like: np.ndarray) -> np.ndarray:
    """Every GPU of ``nodes`` as a boolean ``[node, gpu]`` matrix shaped like ``like``."""
    mask = np.zeros_like(like, dtype=bool)
    mask[sorted(nodes)] = True
    return mask


def _eligible(job: JobView, pool: GpuPool) -> np.ndarray | None:
    """Nodes the job may use by GPU type and allowed nodes; None when any."""
    mask = None
    if job.gpu_type:
        mask = tables(pool.cluster).type_masks.get(job.gpu_type)
        if mask is None:
            mask = np.zeros(len(pool.cluster.nodes), dtype=bool)
    if job.allowed_nodes is not None:
        allowed = allowed_mask(job.allowed_nodes, len(pool.cluster.nodes))
        mask = allowed if mask is None else mask & allowed
    return mask


def _could_fit(counts: np.ndarray, gpus: int, k: int | None, in_order: bool) -> np.ndarray:
    """Per time (rows of ``[time, node]`` usable GPUs): whether the ``k`` best nodes hold ``gpus``.

    ``in_order``: the placement spreads a job over the first ``k`` nodes with
    free GPUs in index order (first fit, as Slurm's linear selection), so
    those must hold it: the exact test, which spares a failing placement
    call per candidate time for multi-node jobs.
    """
    if k is None or k >= counts.shape[1]:
        return counts.sum(axis=1) >= gpus
    if k <= 0:
        return np.zeros(counts.shape[0], dtype=bool)
    if k == 1:
        return counts.max(axis=1) >= gpus
    if in_order and k > 1:
        busy = counts > 0
        first_k = busy & (np.cumsum(busy, axis=1) <= k)
        return (counts * first_k).sum(axis=1) >= gpus
    top = -np.partition(-counts, k - 1, axis=1)[:, :k]
    return top.sum(axis=1) >= gpus
