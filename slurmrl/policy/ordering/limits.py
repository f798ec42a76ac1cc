"""Shortest asked work first: SJF and SRTF on the time limits users give Slurm.

The deployable counterparts of the clairvoyant bounds (``sjf-oracle``,
``srtf-oracle``): the same rules, with a job's *asked* GPU-time, GPUs x time
limit, in place of its true duration. Slurm knows both numbers at submit
time, so an admin can run either; how close they come to the bounds shows
how much the time limits are worth as duration hints (and how much a
learned policy must add to beat them).

* ``sjf-limit``: non-preemptive, smallest GPUs x limit first, with EASY
  backfill behind the first job that cannot start.
* ``srtf-limit``: preemptive, smallest GPUs x (limit - time run so far)
  first; a running job is displaced only by a job asking markedly less
  (:data:`~slurmrl.policy.ordering.oracle.PREEMPT_RATIO`) and never within
  :data:`~slurmrl.policy.ordering.oracle.MIN_RUN` of (re)starting, the
  bound's own churn rules. A job past its limit asks nothing more and
  keeps its GPUs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from slurmrl.policy.backfill import DEFAULT_TIME_LIMIT, EasyBackfill, limit_of
from slurmrl.policy.base import PlacementPolicy
from slurmrl.policy.ordering.oracle import MIN_RUN, PREEMPT_RATIO
from slurmrl.policy.ordering.preemptive import PreemptiveScheduler, run_per_gpu
from slurmrl.policy.ordering.ranking import Ranked, Ranking
from slurmrl.policy.view import ClusterView, JobView


def asked_gpu_time(job: JobView) -> float:
    """GPUs x time limit (Slurm's partition maximum stands in for a missing limit)."""
    return job.gpus * limit_of(job)


class AskedOrdering:
    """Smallest asked GPU-time first; keys never change, so the ranking is kept between passes."""

    def __init__(self) -> None:
        self._ranking = Ranking(lambda job: (asked_gpu_time(job),), lambda rows, now: rows[:, 1], width=1)

    def order(self, view: ClusterView) -> Ranked:
        return self._ranking.order(view)

    def overtakes(self, arrival: JobView, waiting: JobView) -> bool:
        """Whether ``arrival`` may rank before ``waiting`` (a tie may: the ranking's other keys are not read)."""
        return asked_gpu_time(arrival) <= asked_gpu_time(waiting)

    def started(self, job_ids: Sequence[str]) -> None:
        self._ranking.started(job_ids)

    def unstarted(self, job_ids: Sequence[str]) -> None:
        self._ranking.unstarted(job_ids)


class SrtfLimit(PreemptiveScheduler):
    """Shortest remaining asked GPU-time first, preemptive."""

    keys_fall = True  # a running job's remaining asked GPU-time only falls

    def __init__(self, placement: PlacementPolicy) -> None:
        super().__init__("srtf-limit", placement, min_run=MIN_RUN)

    def remaining(self, job: JobView, now: float) -> float:
        """GPUs x (limit - time run so far), never negative."""
        ran = job.service(now) / job.gpus if job.gpus > 0 else 0.0
        return job.gpus * max(0.0, limit_of(job) - ran)

    def key(self, job: JobView, now: float) -> tuple[float, float, str]:
        return (self.remaining(job, now), job.submit_time, job.job_id)

    def keys(self, jobs: list[JobView], now: float) -> list[tuple[float, float, str]]:
        """:meth:`key` of every running job, each pass, with one call per job instead of three."""
        out = []
        for j in jobs:
            limit = j.time_limit if j.time_limit is not None and j.time_limit > 0 else DEFAULT_TIME_LIMIT
            out.append((j.gpus * max(0.0, limit - run_per_gpu(j, now)), j.submit_time, j.job_id))
        return out

    def rank(self, view: ClusterView) -> list[JobView]:
        pending = list(view.pending)
        if not pending:
            return pending
        now = view.now
        keys = np.array([self.remaining(j, now) for j in pending])
        submits = np.array([j.submit_time for j in pending])
        # Ties by submit time, then arrival position (job ids compare as strings).
        return [pending[i] for i in np.lexsort((np.arange(len(pending)), submits, keys)).tolist()]

    def may_preempt(self, victim: JobView, job: JobView, now: float) -> bool:
        return self.remaining(victim, now) > PREEMPT_RATIO * self.remaining(job, now)


def make_sjf_limit(placement: PlacementPolicy) -> EasyBackfill:
    return EasyBackfill("sjf-limit", AskedOrdering(), placement)


def make_srtf_limit(placement: PlacementPolicy) -> SrtfLimit:
    return SrtfLimit(placement)
