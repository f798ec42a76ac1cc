"""Clairvoyant bounds: shortest job first and shortest remaining time first.

Both read the true durations handed over by ``bind_oracle`` and are therefore
registered as non-deployable: they show how much a perfect runtime predictor
could gain, not something Slurm could run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from slurmrl.policy.backfill import EasyBackfill
from slurmrl.policy.base import PlacementPolicy
from slurmrl.policy.ordering.preemptive import PreemptiveScheduler, run_per_gpu
from slurmrl.policy.ordering.ranking import Ranked, Ranking
from slurmrl.policy.view import ClusterView, JobView

# SRTF churn bounds (our choices): a running job is only displaced by a job
# whose remaining time is below 1/PREEMPT_RATIO of its own, and never within
# MIN_RUN seconds of (re)starting, so a job that keeps getting preempted must
# have been overtaken by markedly shorter work each time.
PREEMPT_RATIO = 2.0
MIN_RUN = 60.0


class _Durations:
    def __init__(self) -> None:
        self.durations: Mapping[str, float] = {}

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        self.durations = dict(durations)

    def duration(self, job: JobView) -> float:
        """True duration; jobs the oracle was not told about rank last."""
        return float(self.durations.get(job.job_id, np.inf))


class SjfOrdering(_Durations):
    """Shortest true duration first (non-preemptive)."""

    def __init__(self) -> None:
        super().__init__()
        self._ranking = Ranking(lambda job: (self.duration(job),), lambda rows, now: rows[:, 1], width=1)

    def order(self, view: ClusterView) -> Ranked:
        return self._ranking.order(view)

    def overtakes(self, arrival: JobView, waiting: JobView) -> bool:
        """Whether ``arrival`` may rank before ``waiting`` (a tie may: the ranking's other keys are not read)."""
        return self.duration(arrival) <= self.duration(waiting)

    def started(self, job_ids: Sequence[str]) -> None:
        self._ranking.started(job_ids)

    def unstarted(self, job_ids: Sequence[str]) -> None:
        self._ranking.unstarted(job_ids)


class SrtfOracle(PreemptiveScheduler):
    """Shortest remaining time first, preempting jobs with much longer remaining time.

    Remaining time is per GPU (true duration less the work done per GPU), so
    every running job's falls at the same rate and the running jobs keep
    their order while they run: one that started at ``s`` with ``a``
    GPU-seconds done before, ``g`` GPUs and duration ``d`` runs out at
    ``s + d - a / g`` whatever the pass. Running jobs are therefore keyed by
    that time (:meth:`key`), which changes only when the remaining time
    reaches zero, and the pass keeps them ranked between passes
    (:class:`~slurmrl.policy.ordering.preemptive.RunningIndex`) instead of
    keying and sorting every running job at every pass. Waiting jobs are
    ranked by their remaining time itself (:meth:`rank`).
    """

    deployable = False

    def __init__(self, placement: PlacementPolicy) -> None:
        super().__init__("srtf-oracle", placement, min_run=MIN_RUN)
        self._oracle = _Durations()

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        self._oracle.bind_oracle(durations)

    def remaining(self, job: JobView, now: float) -> float:
        ran = job.service(now) / job.gpus if job.gpus > 0 else 0.0
        return max(0.0, self._oracle.duration(job) - ran)

    def key(self, job: JobView, now: float) -> tuple[int, float, float, str]:
        """Ordered as the remaining time: run out (0, ...) first, then by when the rest runs out.

        The time is ``s + d - a / g`` for a started job; a job without a start
        time (its work never grows) is keyed by ``now`` plus its remaining time,
        which :meth:`key_changes_at` has re-read at every pass.
        """
        return self.keys([job], now)[0]

    def keys(self, jobs: list[JobView], now: float) -> list[tuple[int, float, float, str]]:
        duration = self._oracle.durations.get
        out = []
        for j in jobs:
            d = float(duration(j.job_id, np.inf))
            left = max(0.0, d - run_per_gpu(j, now))
            if left <= 0.0:
                out.append((0, 0.0, j.submit_time, j.job_id))
            else:
                out.append((1, _runs_out(j, d, left, now), j.submit_time, j.job_id))
        return out

    def key_changes_at(self, job: JobView, now: float) -> float:
        """When the remaining time reaches zero (inf once it has); ``now`` for a job keyed afresh at every pass."""
        d = self._oracle.duration(job)
        left = max(0.0, d - run_per_gpu(job, now))
        if left <= 0.0:
            return math.inf
        if job.start_time is None or job.gpus <= 0:
            return now
        return _runs_out(job, d, left, now)

    def rank(self, view: ClusterView) -> list[JobView]:
        pending = list(view.pending)
        now = view.now
        duration = self._oracle.durations.get
        keys = [
            (max(0.0, float(duration(j.job_id, np.inf)) - run_per_gpu(j, now)), j.submit_time, j.job_id)
            for j in pending
        ]
        return [pending[i] for i in sorted(range(len(pending)), key=keys.__getitem__)]

    def may_preempt(self, victim: JobView, job: JobView, now: float) -> bool:
        return self.remaining(victim, now) > PREEMPT_RATIO * self.remaining(job, now)


def _runs_out(job: JobView, duration: float, left: float, now: float) -> float:
    """When ``job``'s remaining time ``left`` (at ``now``) runs out, as a time fixed while it runs."""
    if job.start_time is None or job.gpus <= 0:
        return now + left  # its work does not grow: re-keyed at every pass
    return job.start_time + duration - job.attained_service / job.gpus


def make_sjf_oracle(placement: PlacementPolicy) -> EasyBackfill:
    policy = EasyBackfill("sjf-oracle", SjfOrdering(), placement)
    policy.deployable = False
    return policy


def make_srtf_oracle(placement: PlacementPolicy) -> SrtfOracle:
    return SrtfOracle(placement)
