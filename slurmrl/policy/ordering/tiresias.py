"""Tiresias: discretized two-dimensional least-attained-service (2D-LAS).

Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning",
NSDI'19. A job's attained service is GPUs x time run (``JobView.service``),
which needs no duration estimate. Jobs fall into priority queues by attained
service; within a queue they run FIFO by submit time; a waiting job preempts
running jobs of lower-priority queues. A job preempted and then left waiting
longer than STARVE_LIMIT times its last run is promoted back to the top
queue with its queue counter reset, so long jobs cannot starve.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from itertools import chain

from slurmrl.policy.base import PlacementPolicy
from slurmrl.policy.ordering.preemptive import PreemptiveScheduler, key_margin
from slurmrl.policy.view import ClusterView, JobView, by_job_id, changes

# Queue thresholds in GPU-seconds. Tiresias found two queues enough and tunes
# the one threshold per workload; 3250 GPU-s is queue_limit[0] in the authors'
# released simulator (SymbioticLab/Tiresias, simulator/jobs.py, used with the
# GPU-time "dlas-gpu" mode).
THRESHOLDS: tuple[float, ...] = (3250.0,)
# Promotion after waiting STARVE_LIMIT x the last run (our choice; the paper
# leaves it as a knob): a job preempted after an hour waits at most ten.
STARVE_LIMIT = 10.0
# A job just (re)started keeps its GPUs this long (our choice): it bounds churn
# from a stream of new top-queue jobs to one restart per job per minute.
MIN_RUN = 60.0


class Tiresias(PreemptiveScheduler):
    reads_protected_changes = True  # a protected job's demotion is a wake-up (wake_at)

    def __init__(
        self,
        placement: PlacementPolicy,
        *,
        thresholds: Sequence[float] = THRESHOLDS,
        starve_limit: float = STARVE_LIMIT,
        min_run: float = MIN_RUN,
    ) -> None:
        super().__init__("tiresias", placement, min_run=min_run)
        if list(thresholds) != sorted(thresholds) or any(t <= 0 for t in thresholds):
            raise ValueError("Tiresias thresholds must be positive and increasing")
        self.thresholds = tuple(thresholds)
        self.starve_limit = starve_limit
        self._offset: dict[str, float] = {}  # service at the last promotion
        self._stopped: dict[str, tuple[float, float, float]] = {}  # id -> (stop time, last run, service)
        # (promotion time, id) of the stopped jobs; stale entries are skipped
        self._promotions: list[tuple[float, str]] = []
        self.promotions = 0
        self._cache_time = math.nan
        self._cache: dict[str, float] = {}  # job -> service counted since its last promotion, at _cache_time
        self._queues = PendingQueues(self._queue_of_pending, len(self.thresholds) + 1)

    def _counted(self, jobs: list[JobView], now: float) -> list[float]:
        """Service counted since the last promotion of each job (memoised for the current pass).

        Every pass reads it for every running job, to order the victims and
        to find the next demotion, so it is computed once per job and pass.
        """
        if now != self._cache_time:
            self._cache_time, self._cache = now, {}
        cache, offset = self._cache, self._offset
        out = []
        for job in jobs:
            job_id = job.job_id
            found = cache.get(job_id)
            if found is None:
                # JobView.service spelled out (the same operations, so the same
                # float): this runs for every running job in every pass.
                start = job.start_time
                ran = now - start if start is not None else 0.0
                service = job.attained_service + job.gpus * (ran if ran > 0.0 else 0.0)
                found = cache[job_id] = service - offset.get(job_id, 0.0)
            out.append(found)
        return out

    def queue(self, job: JobView, now: float) -> int:
        """Queue index, 0 = highest priority.

        The preemption rule asks it twice per victim tried, so it reads the
        pass's memo directly rather than through :meth:`_counted`.
        """
        if now != self._cache_time:
            self._cache_time, self._cache = now, {}
        found = self._cache.get(job.job_id)
        if found is None:
            found = self._cache[job.job_id] = job.service(now) - self._offset.get(job.job_id, 0.0)
        return bisect.bisect_right(self.thresholds, found)

    def prepare(self, view: ClusterView) -> None:
        self._cache_time = math.nan  # offsets may change below
        for done in view.finished:
            self._offset.pop(done.job.job_id, None)
            self._stopped.pop(done.job.job_id, None)
        now = view.now
        heap = self._promotions
        while heap and heap[0][0] <= now:
            _, job_id = heapq.heappop(heap)
            entry = self._stopped.get(job_id)
            if entry is None:
                continue  # restarted or finished since it was stopped
            stopped, last_run, service = entry
            if stopped + self.starve_limit * last_run <= now:
                self._offset[job_id] = service
                del self._stopped[job_id]
                self.promotions += 1
                self._queues.requeue(job_id)

    def rank(self, view: ClusterView) -> list[JobView]:
        """Queues in priority order, FIFO by submit time inside each.

        A pending job's service does not grow, so its queue changes only when
        it is promoted: the queues are kept between passes (:class:`PendingQueues`).
        """
        return self._queues.follow(by_job_id(view.pending))

    def _queue_of_pending(self, job: JobView) -> int:
        """The queue of a waiting job (its service does not grow while it waits)."""
        attained = job.attained_service
        if attained < self.thresholds[0]:
            return 0
        return bisect.bisect_right(self.thresholds, attained - self._offset.get(job.job_id, 0.0))

    def key(self, job: JobView, now: float) -> tuple[int, float, str]:
        return (self.queue(job, now), job.submit_time, job.job_id)

    def keys(self, jobs: list[JobView], now: float) -> list[tuple[int, float, str]]:
        thresholds = self.thresholds
        return [
            (bisect.bisect_right(thresholds, counted), job.submit_time, job.job_id)
            for job, counted in zip(jobs, self._counted(jobs, now), strict=True)
        ]

    def may_preempt(self, victim: JobView, job: JobView, now: float) -> bool:
        return self.queue(victim, now) > self.queue(job, now)

    def key_changes_at(self, job: JobView, now: float) -> float:
        """When running ``job`` reaches the next threshold (inf: in the last queue, or not accruing).

        Its counted service grows at ``gpus`` per second from its start and
        its offset holds while it runs, so the time follows from the start
        alone, the same at every pass.
        """
        if job.gpus <= 0 or job.start_time is None:
            return math.inf
        q = bisect.bisect_right(self.thresholds, self._counted([job], now)[0])
        if q == len(self.thresholds):
            return math.inf
        owed = self.thresholds[q] + self._offset.get(job.job_id, 0.0) - job.attained_service
        return job.start_time + owed / job.gpus

    def wake_at(self, view: ClusterView) -> float | None:
        """Next demotion of a running job or promotion of a starved one, while jobs wait."""
        if not view.pending:
            return None
        now, best = view.now, math.inf
        thresholds = self.thresholds
        last = len(thresholds)
        index = self.index
        if index is not None and not index.unstarted:
            # Only jobs whose foreseen demotion could come first are worked out exactly.
            for foreseen, job in index.changes():
                if foreseen - key_margin(foreseen) > best:
                    break
                counted = self._counted([job], now)[0]
                q = bisect.bisect_right(thresholds, counted)
                if q < last:
                    at = now + (thresholds[q] - counted) / job.gpus
                    if at < best:
                        best = at
        else:
            running = [j for j in view.running if j.gpus > 0]
            for job, counted in zip(running, self._counted(running, now), strict=True):
                q = bisect.bisect_right(thresholds, counted)
                if q < last:
                    at = now + (thresholds[q] - counted) / job.gpus
                    if at < best:
                        best = at
        heap = self._promotions
        while heap and heap[0][1] not in self._stopped:
            heapq.heappop(heap)
        if heap:
            best = min(best, heap[0][0])
        return best if math.isfinite(best) and best > now else None

    def on_start(self, job: JobView, now: float) -> None:
        self._stopped.pop(job.job_id, None)  # running again: no longer waiting to be promoted

    def on_preempt(self, victim: JobView, now: float) -> None:
        start = victim.start_time if victim.start_time is not None else now
        self._stopped[victim.job_id] = (now, now - start, victim.service(now))
        heapq.heappush(self._promotions, (now + self.starve_limit * (now - start), victim.job_id))


class PendingQueues:
    """Waiting jobs bucketed by queue, each bucket in submit order, kept between passes.

    A pass mostly adds an arrival or two and removes a start or two from
    thousands of waiting jobs, so the jobs are matched against the last
    pass's in C, by identity (a requeued job is a new view), and only those
    that changed are moved; a promotion re-buckets its job. The ranking is
    the buckets' concatenation, equal to sorting every bucket afresh (keys
    end with the job id, so no two are equal). The daemon's views are new
    every cycle, so there every job is bucketed again, by insertion.
    """

    def __init__(self, queue_of: Callable[[JobView], int], queues: int) -> None:
        self._queue_of = queue_of
        self._keys: list[list[tuple[float, str]]] = [[] for _ in range(queues)]
        self._jobs: list[list[JobView]] = [[] for _ in range(queues)]
        self._known: dict[str, JobView] = {}
        self._queue: dict[str, int] = {}
        self._promoted: list[str] = []

    def requeue(self, job_id: str) -> None:
        """``job_id``'s queue changed (a promotion): bucket it again at the next pass."""
        self._promoted.append(job_id)

    def follow(self, pending: Mapping[str, JobView]) -> list[JobView]:
        """The ranking of ``pending`` (job id -> its view), updated from the last pass's."""
        dropped, added = changes(self._known, pending)
        fresh = set(added)
        promoted = [i for i in dict.fromkeys(self._promoted) if i in pending and i not in fresh]
        self._promoted.clear()
        for job_id in dropped + promoted:
            self._remove(job_id)
        for job_id in added + promoted:
            self._insert(pending[job_id])
        return list(chain.from_iterable(self._jobs))

    def _insert(self, job: JobView) -> None:
        q = self._queue_of(job)
        key = (job.submit_time, job.job_id)
        keys = self._keys[q]
        i = bisect.bisect_left(keys, key)
        keys.insert(i, key)
        self._jobs[q].insert(i, job)
        self._known[job.job_id] = job
        self._queue[job.job_id] = q

    def _remove(self, job_id: str) -> None:
        job = self._known.pop(job_id)
        q = self._queue.pop(job_id)
        keys = self._keys[q]
        i = bisect.bisect_left(keys, (job.submit_time, job_id))
        del keys[i]
        del self._jobs[q][i]


def make_tiresias(placement: PlacementPolicy) -> Tiresias:
    return Tiresias(placement)
