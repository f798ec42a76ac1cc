"""QSSF: quasi-shortest-service-first (Helios, Hu et al., SC'21).

Helios ranks queued jobs by their *estimated* GPU time, duration estimate x
GPUs asked, with the estimate learned from history because users' own
estimates are poor. Here the estimate is the median run time of the same
user's recent finished jobs in the same GPU-count bucket, falling back to the
user's jobs of any size, then to the whole cluster's recent jobs of that
size, then to all recent jobs, and with no history at all to half the job's
time limit (or PRIOR_SECONDS). Learning reads only ``view.finished``, which
is what Slurm's accounting reports after the fact. Non-preemptive, with EASY
backfill on time limits behind the first blocked job.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Sequence

import numpy as np

from slurmrl.policy.backfill import EasyBackfill
from slurmrl.policy.base import PlacementPolicy
from slurmrl.policy.ordering.ranking import Ranked, Ranking
from slurmrl.policy.view import ClusterView, FinishedJob, JobView

USER_WINDOW = 32  # recent jobs kept per (user, bucket) and per user (our choice)
CLUSTER_WINDOW = 512  # recent jobs kept per bucket and overall (our choice)
MIN_USER_SAMPLES = 2  # fewer than this and the user's history is not trusted (our choice)
PRIOR_SECONDS = 3600.0  # estimate for a job with no history and no time limit (our choice)
REKEY_PERIOD = 300.0  # re-estimate queued jobs as often as Slurm recomputes priorities


def gpu_bucket(gpus: int) -> int:
    """1, 2, 3-4, 5-8, 9-16, ... GPUs: jobs of one bucket tend to be alike."""
    return max(0, int(gpus - 1).bit_length())


class DurationEstimator:
    """Rolling medians of finished jobs' run times, keyed by user and size."""

    def __init__(self) -> None:
        self._runs: dict[tuple[object, ...], deque[float]] = {}
        self._median: dict[tuple[object, ...], float] = {}

    def _add(self, key: tuple[object, ...], value: float, window: int) -> None:
        runs = self._runs.get(key)
        if runs is None:
            runs = self._runs[key] = deque(maxlen=window)
        runs.append(value)
        self._median.pop(key, None)

    def learn(self, done: FinishedJob) -> None:
        job, run = done.job, max(0.0, done.run_time)
        bucket = gpu_bucket(job.gpus)
        for key, window in self._keys(job.user, bucket):
            self._add(key, run, window)

    @staticmethod
    def _keys(user: str, bucket: int) -> tuple[tuple[tuple[object, ...], int], ...]:
        """History keys from most to least specific, each with its window."""
        return (
            (("user-size", user, bucket), USER_WINDOW),
            (("user", user), USER_WINDOW),
            (("size", bucket), CLUSTER_WINDOW),
            (("all",), CLUSTER_WINDOW),
        )

    def _lookup(self, key: tuple[object, ...], min_samples: int) -> float | None:
        cached = self._median.get(key)
        if cached is not None:
            return cached
        runs = self._runs.get(key)
        if runs is None or len(runs) < min_samples:
            return None
        value = self._median[key] = statistics.median(runs)
        return value

    def from_history(self, user: str, bucket: int) -> float | None:
        """Median run time for this user and size bucket, by the fallback chain; None without history."""
        for i, (key, _) in enumerate(self._keys(user, bucket)):
            found = self._lookup(key, MIN_USER_SAMPLES if i < 2 else 1)
            if found is not None:
                return found
        return None

    def estimate(self, job: JobView) -> float:
        found = self.from_history(job.user, gpu_bucket(job.gpus))
        return found if found is not None else prior_estimate(job.time_limit)


def prior_estimate(time_limit: float | None) -> float:
    """Estimate for a job with no history at all: half its time limit."""
    if time_limit is not None and time_limit > 0:
        return time_limit / 2
    return PRIOR_SECONDS


class QssfOrdering:
    def __init__(self) -> None:
        self.estimator = DurationEstimator()
        self._ranking = Ranking(self._columns, self._keys, width=3, period=REKEY_PERIOD)
        self._groups: dict[tuple[str, int], int] = {}  # (user, size bucket) -> number
        self._group_list: list[tuple[str, int]] = []  # by number

    def _columns(self, job: JobView) -> tuple[float, float, float]:
        group = (job.user, gpu_bucket(job.gpus))
        number = self._groups.get(group)
        if number is None:
            number = self._groups[group] = len(self._group_list)
            self._group_list.append(group)
        return (job.gpus, number, prior_estimate(job.time_limit))

    def _keys(self, rows: np.ndarray, now: float) -> np.ndarray:
        """Estimated GPU time of ranking rows (submit, GPUs, user-bucket number, prior)."""
        groups = rows[:, 2].astype(np.int64)
        present, inverse = np.unique(groups, return_inverse=True)
        names = self._group_list
        learned = [self.estimator.from_history(*names[g]) for g in present.tolist()]
        est = np.array([np.nan if x is None else x for x in learned], dtype=float)[inverse]
        est = np.where(np.isnan(est), rows[:, 3], est)
        return est * rows[:, 1]

    def order(self, view: ClusterView) -> Ranked:
        for done in view.finished:
            self.estimator.learn(done)
        return self._ranking.order(view)

    def started(self, job_ids: Sequence[str]) -> None:
        self._ranking.started(job_ids)

    def unstarted(self, job_ids: Sequence[str]) -> None:
        self._ranking.unstarted(job_ids)


def make_qssf(placement: PlacementPolicy) -> EasyBackfill:
    return EasyBackfill("qssf", QssfOrdering(), placement)
