"""EASY backfill on users' time limits, for any ordering.

The first job in rank order that cannot start gets a reservation: the
earliest time at which, if every running job ran to its time limit, the
placement policy could place it, and the GPUs it would get then. A later job
may start now only if it fits and either ends (now + its time limit) by that
*shadow time* or stays off the reserved GPUs. So backfill never delays the
head job beyond what the time limits promise (Lifka, "The ANL/IBM SP
scheduling system", JSSPP 1995; Mu'alem & Feitelson, IEEE TPDS 12(6), 2001),
which is how Slurm's sched/backfill plugin behaves for the top job.

Running jobs' limit-based end times are kept in a sorted list updated from
the jobs this scheduler starts and the ``finished`` list, and rebuilt from
``view.running`` only when the two disagree, so a pass costs the releases the
head job needs rather than a sort of everything running.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter

import numpy as np

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.base import OrderedScheduler, Ordering, PlacementPolicy, uses_pass_hooks_of
from slurmrl.policy.placement.common import tables
from slurmrl.policy.view import ClusterView, JobView, Promise, Start

# Slurm's bf_max_job_test default: at most this many queued jobs are tried
# for backfill per pass (slurm.conf(5), SchedulerParameters).
BF_MAX_JOB_TEST = 500
# Slurm's bf_interval default: the backfill pass runs every 30 s, while the
# main scheduler (strict priority order) runs at every job submit and end
# (slurm.conf(5), SchedulerParameters; sched/backfill documentation).
BF_INTERVAL = 30.0
# Limit assumed for a job that has none: the partition maximum the time-limit
# models hand out (slurmrl.sim.user_limits.MAX_LIMIT), a typical MaxTime.
DEFAULT_TIME_LIMIT = 7 * 86400.0
# Placement attempts for the head job's reservation before giving up on it
# for this pass (bounds the cost when a GPU-type constraint keeps it unplaceable).
MAX_RESERVATION_TRIES = 256

_ID = attrgetter("job_id")


def limit_of(job: JobView) -> float:
    return job.time_limit if job.time_limit is not None and job.time_limit > 0 else DEFAULT_TIME_LIMIT


class EasyBackfill(OrderedScheduler):
    """Strict priority order, then EASY backfill behind the first blocked job."""

    def __init__(
        self,
        name: str,
        ordering: Ordering,
        placement: PlacementPolicy,
        *,
        max_job_test: int = BF_MAX_JOB_TEST,
        bf_interval: float = BF_INTERVAL,
    ) -> None:
        super().__init__(name, ordering, placement)
        self.max_job_test = max_job_test
        self.bf_interval = bf_interval
        self._next_backfill = -math.inf
        self._ends: list[tuple[float, str]] = []  # (limit-based end, job id), sorted
        self._running: dict[str, tuple[float, Placement]] = {}
        # [node, gpu]: the limit-based end of the tracked job holding that GPU
        # (inf where none does), so a reservation can tell with array work
        # how far down the end list it must go before trying a placement.
        self._grid: np.ndarray | None = None
        self._pass: list[tuple[JobView, Placement]] = []  # started in the current pass
        self.last_shadow: float = math.nan  # the head job's reservation in the last pass (NaN: none)
        # Between two passes where nothing started or ended (under load, most
        # passes follow a mere arrival), the head's reservation and every
        # backfill verdict are unchanged: time only moves the shadow closer.
        # So the reservation is reused and jobs refused last time are skipped.
        self._version = 0  # bumped whenever the set of running jobs changes
        self._reuse_key: tuple[object, ...] | None = None
        self._reserved: tuple[float, np.ndarray | None] = (math.inf, None)
        self._reserved_key: tuple[object, ...] | None = None  # the pass key it was computed under
        self._refused: set[str] = set()
        # The pool a pass's backfill starts left, and its view (None: it started none).
        self._backfilled: tuple[GpuPool, ClusterView] | None = None

    # -- promises -----------------------------------------------------------------

    def _passes_keep_promises(self) -> bool:
        """A pass before the next backfill pass keeps nothing but what ``_sync`` catches up on.

        It walks the ranking and stops at the first job it cannot place:
        its finished jobs are read again by the next pass's sync, and the
        backfill gate, reservation and refused jobs are left as they were.
        """
        return uses_pass_hooks_of(type(self), EasyBackfill)

    def promise(self) -> Promise | None:
        """The strict pass's promise, up to the next backfill pass, which may start what it could not.

        Jobs backfilled after the head was tried take GPUs, and a placement
        need not grow worse with fewer free GPUs (first fit may reach whole
        nodes once the partly free ones before them fill), so the head is
        tried again on what the pass leaves: the promise stands only if it
        still cannot be placed.
        """
        head = self._blocker
        if not self._promises or head is None:
            return None
        if self._backfilled is not None:
            pool, view = self._backfilled
            if self.placement.place(head, pool, view) is not None:
                return None
        return Promise(head, self._next_backfill, self._overtakes)

    # -- running-job bookkeeping -------------------------------------------------

    def _track(self, job_id: str, end: float, placement: Placement) -> None:
        self._running[job_id] = (end, placement)
        bisect.insort(self._ends, (end, job_id))
        self._version += 1
        if self._grid is not None:
            _paint(self._grid, placement, end)

    def _untrack(self, job_id: str) -> None:
        hit = self._running.pop(job_id, None)
        if hit is None:
            return
        if self._grid is not None:
            _paint(self._grid, hit[1], math.inf)
        i = bisect.bisect_left(self._ends, (hit[0], job_id))
        if i < len(self._ends) and self._ends[i][1] == job_id:
            del self._ends[i]

    def _sync(self, view: ClusterView) -> None:
        if view.finished:
            self._version += 1
        grid = self._grid
        if grid is None or grid.shape != view.pool.free.shape:
            grid = self._grid = np.full(view.pool.free.shape, math.inf)
            for end, placement in self._running.values():
                _paint(grid, placement, end)
        for done in view.finished:
            self._untrack(done.job.job_id)
        if len(self._running) != len(view.running):
            self._version += 1
            self._running.clear()
            self._ends.clear()
            for job in view.running:
                if job.placement is None:
                    continue
                start = job.start_time if job.start_time is not None else view.now
                self._running[job.job_id] = (start + limit_of(job), job.placement)
            self._ends = sorted((end, jid) for jid, (end, _) in self._running.items())
            grid.fill(math.inf)
            for end, placement in self._running.values():
                _paint(grid, placement, end)

    def amend(
        self, view: ClusterView, held_back: Sequence[JobView], others: Sequence[tuple[JobView, Placement]]
    ) -> None:
        super().amend(view, held_back, others)
        for job in held_back:
            self._untrack(job.job_id)
        for job, placement in others:
            self._track(job.job_id, view.now + limit_of(job), placement)
        self._version += 1

    # -- the pass ----------------------------------------------------------------

    def before_pass(self, view: ClusterView) -> None:
        self._sync(view)
        self._pass = []
        self._backfilled = None
        self.last_shadow = math.nan

    def on_start(self, job: JobView, placement: Placement) -> None:
        self._pass.append((job, placement))

    def after_pass(self, view: ClusterView, starts: list[Start]) -> dict[str, float]:
        for job, placement in self._pass:
            self._track(job.job_id, view.now + limit_of(job), placement)
        return {"shadow_time": self.last_shadow}

    def reservation(self, view: ClusterView, pool: GpuPool, head: JobView) -> tuple[float, np.ndarray | None]:
        """Shadow time for ``head`` and the currently free GPUs it would get then.

        Running jobs (and those started earlier in this pass) are released in
        order of their limit-based end times on a scratch pool until the
        placement policy can place ``head``. ``(inf, None)`` when it cannot be
        placed even then.
        """
        if head.gpus > pool.cluster.total_gpus:
            return math.inf, None
        now = view.now
        ends = self._ends
        grid = self._grid if self._grid is not None else _grid_of(self._running, pool)
        placements: dict[str, Placement] = {}
        if self._pass:
            placements = {j.job_id: p for j, p in self._pass}
            ends = list(heapq.merge(ends, sorted((now + limit_of(j), j.job_id) for j, _ in self._pass)))
            grid = grid.copy()
            for job, placement in self._pass:
                _paint(grid, placement, now + limit_of(job))
        whole = getattr(self.placement, "whole_nodes_at", None)
        known = whole(head, pool, grid, now) if whole is not None else None
        if known is not None:
            return _whole_nodes_reserved(head, pool, grid, now, *known)
        jump = first_group(head, pool, grid, now)
        if jump is None:
            return math.inf, None
        first, tries = jump.first, jump.tries
        scratch = pool.copy()
        # Every group before the first one worth a try, released at once.
        scratch.release_mask(grid < first)
        return self._scan(
            view, scratch, pool, head, ends, bisect.bisect_left(ends, (first,)), tries, placements, grid
        )

    def _scan(
        self,
        view: ClusterView,
        scratch: GpuPool,
        pool: GpuPool,
        head: JobView,
        ends: list[tuple[float, str]],
        start: int,
        tries: int,
        placements: dict[str, Placement],
        grid: np.ndarray,
    ) -> tuple[float, np.ndarray | None]:
        """The reservation scan from ``ends[start]`` on, ``scratch`` holding every earlier release.

        ``grid`` holds the release time of every busy GPU (``ends`` painted),
        so a batch of releases is written to ``scratch`` as one mask: the
        busy GPUs released by its end.
        """
        now = view.now
        running = self._running
        # Nothing can fit before enough GPUs are free in total, nor before the
        # nodes the head may span hold enough (``bound``): releases are kept
        # in a batch, counted on plain ints, and written to the scratch pool
        # only when a placement is worth trying. A try skipped that way is
        # one the placement would have refused, so it still counts. Jobs with
        # equal ends are released together.
        make_bound = getattr(self.placement, "bound", None)
        bound = make_bound(head, scratch, now) if make_bound is not None else NodeBound(head, scratch, now)
        release, possible = bound.release, bound.possible
        batch: list[Placement] = []
        freed, need = scratch.total_free, head.gpus
        last = len(ends) - 1
        for i in range(start, last + 1):
            end, job_id = ends[i]
            placement = placements.get(job_id)
            if placement is None:
                placement = running[job_id][1]
            batch.append(placement)
            freed += release(placement)
            if freed < need or (i < last and ends[i + 1][0] == end):
                continue  # too few GPUs yet, or more of this group to release
            if possible():
                if len(batch) == 1:
                    scratch.release(batch[0])
                else:
                    scratch.release_mask((grid <= end) & ~scratch.free)
                batch = []
                found = self.placement.place(head, scratch, view)
                if found is not None:
                    return max(end, now), _mask(found, pool.free) & pool.free
            tries += 1
            if tries >= MAX_RESERVATION_TRIES:
                break
        return math.inf, None

    def after_blocked(
        self, view: ClusterView, pool: GpuPool, head: JobView, rest: Iterator[JobView]
    ) -> list[Start]:
        now = view.now
        if now < self._next_backfill:
            return []
        self._next_backfill = now + self.bf_interval
        key = (head.job_id, self._version, len(view.running), view.pool.total_free, len(self._pass))
        reuse = key == self._reuse_key
        refused = self._refused if reuse else set()
        self._refused, self._reuse_key = refused, key
        shadow, reserved = math.nan, None  # the head's reservation, read when a job first could use it
        outside: GpuPool | None = None  # free GPUs minus that reservation, built when a job needs it
        top: TopCounts | None = None  # top[k]: free GPUs on the k nodes with most of them (None: to recount)
        top_out: TopCounts | None = None  # the same for ``outside``
        fullest = -1  # top[1], read apart: most candidates may use one node (-1: to recount)
        nodes = len(pool.free_count)
        starts: list[Start] = []
        place = self.placement.place
        # Under load most of the up to max_job_test candidates are refused by
        # the first tests below, so this loop keeps to local names.
        for job in islice(rest, self.max_job_test):
            free = pool.total_free
            if free == 0:
                break
            job_id = job.job_id
            if job_id in refused:
                continue
            gpus = job.gpus
            if gpus > free:
                refused.add(job_id)
                continue
            # No placement can use more than the free GPUs on the k nodes with
            # most (k = the nodes the job may span): NodeBound's condition, on
            # the pool and so on any part of it. Checked on counts first, it
            # spares the reservation while no job could use it and the
            # placement call for most candidates under load.
            # None: the total, checked above, is all there is to check (a GPU
            # type narrows the nodes, or the job may span every node).
            k = None
            if not job.gpu_type:
                k = job.num_nodes if now < job.spread_at else None  # JobView.max_nodes, inline
                if k is not None and k >= nodes:
                    k = None
                if k == 1:
                    if fullest < 0:
                        fullest = int(pool.free_count.max())
                    if gpus > fullest:
                        refused.add(job_id)
                        continue
                elif k is not None:
                    if top is None:
                        top = TopCounts(pool)
                    if gpus > top[k]:
                        refused.add(job_id)
                        continue
            if shadow != shadow:  # NaN: the reservation is not read yet
                if self._reserved_key != key:
                    self._reserved = self.reservation(view, pool, head)
                    self._reserved_key = key
                shadow, reserved = self._reserved
            limit = job.time_limit
            if now + (limit if limit is not None and limit > 0 else DEFAULT_TIME_LIMIT) <= shadow:
                placement = place(job, pool, view)
            else:
                if outside is None:
                    # Made from the pool as it is now, which holds the pass's
                    # starts so far: the same GPUs as made before them and
                    # given each start's free part.
                    outside = pool.copy()
                    if reserved is not None:
                        outside.withhold(reserved)
                if gpus > outside.total_free:
                    placement = None
                else:
                    if k is not None and top_out is None:
                        top_out = TopCounts(outside)
                    placement = None if k is not None and gpus > top_out[k] else place(job, outside, view)
            if placement is None:
                refused.add(job_id)
                continue
            pool.allocate(placement)
            top, fullest = None, -1  # the pool's counts changed
            if outside is not None:
                taken = _free_part(placement, outside)
                if taken is not None:
                    outside.allocate(taken)
                    top_out = None
            starts.append(Start(job_id, placement))
            self.started_now(view, job, placement)
        # NaN when no job could use the reservation, so it was never computed.
        self.last_shadow = shadow
        if starts:
            self._backfilled = (pool, view)
        return starts


class NodeBound:
    """Whether the nodes a job may span could hold it, as GPUs are released.

    A necessary condition for any placement that honours the job's GPU type
    and node count: the ``k`` eligible nodes with the most free GPUs hold at
    least its GPUs (``k`` = the nodes it may span now, all nodes when any
    number will do). Free counts only grow while a reservation releases
    jobs, so the counts are kept as plain ints with a histogram of them, and
    the condition, once met, stays met (``could_hold`` checks it once, on a
    pool).
    """

    __slots__ = ("_need", "_k", "_counts", "_eligible", "_hist", "_met")

    def __init__(self, job: JobView, pool: GpuPool, now: float) -> None:
        cluster = pool.cluster
        self._need = job.gpus
        self._counts = pool.free_count.tolist()
        if job.gpu_type:
            self._eligible = [n.gpu_type == job.gpu_type for n in cluster.nodes]
        else:
            self._eligible = [True] * len(cluster.nodes)
        k = job.max_nodes(now)
        self._k = len(self._counts) if k is None else k
        self._hist = [0] * (cluster.max_gpus_per_node + 1)
        for count, ok in zip(self._counts, self._eligible, strict=True):
            if ok:
                self._hist[count] += 1
        self._met = False

    def release(self, placement: Placement) -> int:
        """Count ``placement``'s GPUs as free; returns how many."""
        counts, eligible, hist = self._counts, self._eligible, self._hist
        total = 0
        for node, gpus in placement.allocs:
            k = len(gpus)
            total += k
            before = counts[node]
            counts[node] = before + k
            if eligible[node]:
                hist[before] -= 1
                hist[before + k] += 1
        return total

    def possible(self) -> bool:
        if self._met:
            return True
        left, need, hist = self._k, self._need, self._hist
        for count in range(len(hist) - 1, 0, -1):
            n = hist[count]
            if n:
                take = n if n < left else left
                need -= take * count
                left -= take
                if need <= 0:
                    self._met = True
                    return True
                if left == 0:
                    break
        return False


@dataclass(frozen=True)
class Jump:
    """Where a reservation scan may start, in the groups of equal release times."""

    groups: np.ndarray  # distinct release times, ascending
    lo: int  # first group after which enough GPUs are free in total: the first try
    at: int  # first group the bound allows

    @property
    def first(self) -> float:
        return float(self.groups[self.at])

    @property
    def tries(self) -> int:
        return self.at - self.lo


def first_group(head: JobView, pool: GpuPool, grid: np.ndarray, now: float) -> Jump | None:
    """Where a reservation scan may start: the first group the generic bound allows.

    ``grid`` holds each busy GPU's release time. Releasing every job that
    ends by ``t`` leaves node ``n`` with at least ``c`` free GPUs from the
    ``c - free[n]``-th smallest release time on it, ``T[n, c]``, on. The
    :class:`NodeBound` condition (the ``k`` eligible nodes with most free
    GPUs hold ``need``) reads, summed per level ``c``, as: at least ``need``
    of the ``k`` smallest ``T[., c]`` of every column are ``<= t``. So the
    earliest ``t`` it allows is the ``need``-th smallest of those, found
    with a few array operations where the scan would release job after job.
    Every group before it fails the bound, so the scan would refuse it
    without a placement; those with enough GPUs in total still count as
    tries. None: no placement is possible within the scan's tries.
    """
    need = head.gpus
    nodes, width = grid.shape
    k = head.max_nodes(now)
    k = nodes if k is None else min(k, nodes)
    if k <= 0 or need > k * width:
        return None
    per_node = np.sort(grid, axis=1)
    free = pool.free_count
    releases, groups = _release_groups(grid)
    if need <= 0:
        return Jump(groups, 0, 0) if groups.size else None
    level = np.arange(width) - free[:, None]  # index of the release giving c = level + 1 free GPUs
    reach = per_node[np.arange(nodes)[:, None], np.maximum(level, 0)]  # take_along_axis, without its overhead
    reach[level < 0] = -math.inf
    if head.gpu_type:
        allowed = tables(pool.cluster).type_masks.get(head.gpu_type)
        if allowed is None:
            return None
        reach[~allowed] = math.inf
    allowed_nodes = head.allowed_nodes
    if allowed_nodes is not None:
        barred = np.ones(nodes, dtype=bool)
        barred[[n for n in allowed_nodes if 0 <= n < nodes]] = False
        reach[barred] = math.inf
    best = np.sort(reach, axis=0)[:k].ravel()
    at = float(np.partition(best, need - 1)[need - 1])
    if at == math.inf:
        return None
    lo = _first_try(head, pool, releases, groups)
    if lo is None:
        return None
    hi = max(lo, int(np.searchsorted(groups, at, side="left")))
    if hi - lo >= MAX_RESERVATION_TRIES or hi >= groups.size:
        return None
    return Jump(groups, lo, hi)


def _whole_nodes_reserved(
    head: JobView, pool: GpuPool, grid: np.ndarray, now: float, at: float, nodes: np.ndarray
) -> tuple[float, np.ndarray | None]:
    """The reservation of a head the placement places on whole ``nodes`` from ``at`` on.

    Their free GPUs now are what it withholds. The scan's limit holds as
    for the scan: no more than ``MAX_RESERVATION_TRIES`` groups with enough
    GPUs free in total before ``at``.
    """
    if at == math.inf:
        return math.inf, None
    # The groups before ``at`` are no more than the GPUs released before it,
    # so most reservations need no count of them.
    if (
        np.count_nonzero(grid < at) >= MAX_RESERVATION_TRIES
        and _groups_tried(head, pool, grid, at) >= MAX_RESERVATION_TRIES
    ):
        return math.inf, None
    reserved = np.zeros_like(pool.free)
    reserved[nodes] = pool.free[nodes]
    return max(at, now), reserved


def _groups_tried(head: JobView, pool: GpuPool, grid: np.ndarray, at: float) -> int:
    """Release groups a scan tries before the one at ``at``: those from the first with enough GPUs free in total."""
    releases, groups = _release_groups(grid)
    lo = _first_try(head, pool, releases, groups)
    return MAX_RESERVATION_TRIES if lo is None else int(np.searchsorted(groups, at, side="left")) - lo


def _release_groups(grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every busy GPU's release time (``grid``'s finite ones), ascending, and the distinct ones."""
    releases = grid.flatten()  # then sorted in place: np.sort's dispatch costs as much as the sort here
    releases.sort()
    releases = releases[: np.searchsorted(releases, math.inf)]
    groups = releases
    if releases.size:
        first = np.empty(releases.size, dtype=bool)  # first of each run of equal times (np.r_ costs more)
        first[0] = True
        np.not_equal(releases[1:], releases[:-1], out=first[1:])
        groups = releases[first]
    return releases, groups


def _first_try(head: JobView, pool: GpuPool, releases: np.ndarray, groups: np.ndarray) -> int | None:
    """The first group after which enough GPUs are free in total for ``head`` (None: never)."""
    short = head.gpus - pool.total_free  # GPUs still to be released before any try
    if short > releases.size:
        return None
    enough = releases[short - 1] if short > 0 else -math.inf
    return int(np.searchsorted(groups, enough, side="left"))


def _top_counts(pool: GpuPool) -> list[int]:
    """``[k]``: the free GPUs on the ``k`` nodes with most of them, for every ``k``."""
    counts = pool.free_count.copy()
    counts.sort()
    return [0, *counts[::-1].cumsum().tolist()]


class TopCounts:
    """``_top_counts(pool)[k]`` worked out on demand, for ``1 <= k <`` the node count.

    Most candidates that get this far may use one node (the fullest node's
    count); only those that may span a few nodes need the sort. Those that
    may span every node need only the pool's total.
    """

    __slots__ = ("_pool", "_fullest", "_sums")

    def __init__(self, pool: GpuPool) -> None:
        self._pool = pool
        self._fullest = -1  # the fullest node's free GPUs (-1: not read yet)
        self._sums: list[int] | None = None

    def __getitem__(self, k: int) -> int:
        pool = self._pool
        if k == 1:
            if self._fullest < 0:
                self._fullest = int(pool.free_count.max())
            return self._fullest
        if self._sums is None:
            self._sums = _top_counts(pool)
        return self._sums[k]


def _paint(grid: np.ndarray, placement: Placement, end: float) -> None:
    for a in placement.allocs:
        row = grid[a.node]
        for g in a.gpus:
            row[g] = end


def _grid_of(running: dict[str, tuple[float, Placement]], pool: GpuPool) -> np.ndarray:
    grid = np.full(pool.free.shape, math.inf)
    for end, placement in running.values():
        _paint(grid, placement, end)
    return grid


def _mask(placement: Placement, like: np.ndarray) -> np.ndarray:
    """``placement``'s GPUs as a boolean matrix shaped like ``like``."""
    nodes: list[int] = []
    gpus: list[int] = []
    for a in placement.allocs:
        nodes.extend([a.node] * len(a.gpus))
        gpus.extend(a.gpus)
    mask = np.zeros_like(like)
    mask[nodes, gpus] = True
    return mask


def _free_part(placement: Placement, pool: GpuPool) -> Placement | None:
    """The GPUs of ``placement`` that are still free in ``pool`` (None if none)."""
    pairs = []
    for a in placement.allocs:
        gpus = [g for g in a.gpus if pool.free[a.node, g]]
        if gpus:
            pairs.append((a.node, gpus))
    return Placement.of(pairs) if pairs else None
