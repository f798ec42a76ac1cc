"""Gittins index on time limits: preemptive, run times learned from the cluster's finished jobs.

``srtf-limit`` ranks a job by its limit less what it has run, as if every
job ran to its limit. Users' limits are loose (:mod:`slurmrl.sim.user_limits`:
a median of about 10x the run time, some 15% at the partition maximum), so a
job that asked for the maximum waits behind nearly everything although most
such jobs end within hours. When a job's run time is known only as a
distribution, and how long it has run so far, the order that minimises mean
response time in the single-server queue serves the job of highest Gittins
index (Gittins, JRSS B 41, 1979; for the M/G/1 queue, Aalto, Ayesta &
Righter, Queueing Systems 63, 2009); Tiresias (Gu et al., NSDI'19) ranks
GPU jobs by such an index (2D-Gittins) when the distribution of their
GPU-time is known.

Here the distribution is learned where Slurm's accounting has it: the run
times of jobs that ended, as fractions of their own limits, kept per class
of limit (a factor of sqrt 2 wide, so the round values users pick mostly
fall in classes of their own). A job of limit L that has run a seconds per
GPU is keyed by GPUs x L x g(a / L), where g(x) is the least expected time
still to invest per unit of probability of finishing, over the horizons y:

    g(x) = min over y > x of  E[min(R, y) - x | R > x] / P(R <= y | R > x)

(R the run time over the limit, drawn from the class's ended jobs with the
mass of each spread evenly down to the one before, so g is continuous; a
horizon must reach :data:`HORIZON_SHARE` of the ended jobs still ahead, as
the least of ratios over a handful of samples is biased low). The inverse
of g is the index; smaller keys run first. g is read at the point of
:data:`GRID` at or below a / L, so a running job's key changes only when
its run reaches the next point, a time known from its start: the pass keeps
running jobs ranked between passes as for Tiresias
(:class:`~slurmrl.policy.ordering.preemptive.RunningIndex`). A job that has
run past every ended job of its class is keyed by what it has run, read at
the grid point below (it is expected to run about as long again). Until a class has seen
:data:`MIN_SAMPLES` ended jobs the pooled fractions of every class serve,
and until those have, a job is keyed by its asked GPU-time, as in
``sjf-limit``. Curves are recomputed at most every :data:`REFRESH_PERIOD`,
each once :data:`STALE_SHARE` of its samples is new; keys of waiting jobs
hold in between.

A class's window keeps its :data:`CLASS_WINDOW` most recent ends, so that
the curve follows the workload; but after a start on a busy cluster the
first jobs to end are the short ones, and a window of them alone would
key every long job as short for days. The jobs read back from accounting
when the policy started (the daemon's ``history_days``;
``FinishedJob.from_accounting``) are therefore kept apart, up to
:data:`HISTORY_WINDOW` a class, and every curve is learned from them and
the window together; each recent end that pushes an older one out of a
full window also drops the oldest of the history, so that a daemon
running for months learns from its own ends in the end.

Preemption follows the SRTF bound's churn rules
(:data:`~slurmrl.policy.ordering.oracle.PREEMPT_RATIO`,
:data:`~slurmrl.policy.ordering.oracle.MIN_RUN`).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Iterable

import numpy as np

from slurmrl.policy.backfill import limit_of
from slurmrl.policy.base import PlacementPolicy
from slurmrl.policy.ordering.oracle import MIN_RUN, PREEMPT_RATIO
from slurmrl.policy.ordering.preemptive import PreemptiveScheduler, run_per_gpu
from slurmrl.policy.view import ClusterView, FinishedJob, JobView

CLASS_WINDOW = 400  # recent ended jobs kept per limit class (our choice)
POOLED_WINDOW = 2000  # recent ended jobs kept over every class (our choice)
HISTORY_WINDOW = 4000  # jobs read from accounting at start kept per class, apart from the window (our choice)
MIN_SAMPLES = 30  # a class (or the pool) with fewer is not trusted (our choice)
HORIZON_SHARE = 0.1  # a horizon reaches at least this share of the samples still ahead (our choice)
REFRESH_PERIOD = 300.0  # re-learn at most this often, as Slurm recomputes priorities
CLASS_CACHE = 1 << 16  # jobs whose limit class is kept at most (our choice)
STALE_SHARE = 0.05  # a curve is recomputed once this share of its samples is new (our choice)
# Fractions of the limit at which g is tabulated; a job reads it at the point at or below its own.
GRID = np.concatenate([[0.0], np.geomspace(1e-6, 64.0, 241)])
_GRID = GRID.tolist()


def limit_class(limit: float) -> int:
    """Classes of limits a factor of sqrt 2 wide."""
    return round(2.0 * math.log2(max(limit, 1.0)))


def investment_curve(fractions: np.ndarray, grid: np.ndarray = GRID) -> np.ndarray:
    """g(x) at each grid point for run times (as fractions of the limit) ``fractions``; inf past the last.

    The distribution puts 1/M of mass evenly on each gap between consecutive
    sorted samples (from 0 to the smallest for the first). Its CDF F is then
    piecewise linear and the integral of the survival function, I, piecewise
    quadratic, so at each grid point x the candidates y are the samples above
    x: (I(y) - I(x)) / (F(y) - F(x)).
    """
    knots = np.concatenate([[0.0], np.sort(np.asarray(fractions, dtype=float))])
    m = knots.size - 1
    cdf = np.arange(m + 1) / m
    surv = 1.0 - cdf
    integral = np.concatenate([[0.0], np.cumsum(np.diff(knots) * (surv[:-1] + surv[1:]) / 2.0)])
    j = np.searchsorted(knots, grid, side="right")  # knots[j - 1] <= x < knots[j]
    inside = j <= m
    out = np.full(grid.shape, math.inf)
    x, j = grid[inside], j[inside]
    lo, hi = knots[j - 1], knots[j]
    f_x = cdf[j - 1] + (x - lo) / (hi - lo) / m
    i_x = integral[j - 1] + (x - lo) * (surv[j - 1] + 1.0 - f_x) / 2.0
    # Horizons that reach fewer than a HORIZON_SHARE of the samples still
    # ahead are left out: over a handful of samples the ratio is noise, and
    # the least of many noisy ratios would be biased low.
    ahead = m - j + 1
    least = j + np.maximum(1, np.ceil(HORIZON_SHARE * ahead)).astype(int) - 1
    later = np.arange(m + 1)[None, :] >= least[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (integral[None, :] - i_x[:, None]) / (cdf[None, :] - f_x[:, None])
    out[inside] = np.where(later, ratio, math.inf).min(axis=1)
    return out


class RunTimes:
    """Ended jobs' run times over their limits, per limit class and pooled, and the curves learned from them.

    The curves are rows of one table (the last row the pooled one), so the
    keys of many jobs at once (every waiting job after a refresh) are one
    array lookup.
    """

    def __init__(self) -> None:
        self._by_class: dict[int, deque[float]] = {}
        self._pooled: deque[float] = deque(maxlen=POOLED_WINDOW)
        # Read from accounting at start, kept apart from the recent ends (see the module).
        self._history: dict[int, deque[float]] = {}
        # Pooled, in the proportion of the classes' history to their windows.
        self._pooled_history: deque[float] = deque(maxlen=POOLED_WINDOW * HISTORY_WINDOW // CLASS_WINDOW)
        self._curves: dict[int, np.ndarray] = {}
        self._new: dict[int | None, int] = {}  # samples learned since each curve (None: the pooled one)
        self._pooled_curve: np.ndarray | None = None
        # job id -> (its time limit as asked, the limit keyed on, its class); an
        # admin may change a limit, so an entry holds only while the ask does.
        self._classes: dict[str, tuple[float | None, float, int]] = {}
        self._table = np.empty((0, GRID.size))
        self._rows: list[list[float]] = []  # the table as plain floats, for one key at a time
        self._row: dict[int, int] = {}  # limit class -> its row (the pooled row for a class without)
        self._pooled_row = -1  # -1: too few ended jobs for any curve

    def learn(self, job: JobView, run_time: float, *, from_accounting: bool = False) -> None:
        """Learn an ended job's run time: into its class's window of recent ends, or, when it was
        read from accounting at start, into the history kept apart from that window."""
        limit = limit_of(job)
        cls = limit_class(limit)
        by_class, pooled, size = (
            (self._history, self._pooled_history, HISTORY_WINDOW)
            if from_accounting
            else (self._by_class, self._pooled, CLASS_WINDOW)
        )
        runs = by_class.get(cls)
        if runs is None:
            runs = by_class[cls] = deque(maxlen=size)
        if not from_accounting:  # a recent end that pushes one out of a full window ages the history by one
            _age(self._history.get(cls), full=len(runs) == runs.maxlen)
            _age(self._pooled_history, full=len(self._pooled) == self._pooled.maxlen)
        fraction = max(0.0, run_time) / limit
        runs.append(fraction)
        pooled.append(fraction)
        self._new[cls] = self._new.get(cls, 0) + 1
        self._new[None] = self._new.get(None, 0) + 1
        self._classes.pop(job.job_id, None)

    def refresh(self) -> bool:
        """Recompute the curves that :data:`STALE_SHARE` of new samples make stale; whether any changed.

        One more ended job moves a curve of hundreds of samples by little,
        and recomputing every curve at every refresh was most of a replay.
        """
        stale = [
            c
            for c, n in self._new.items()
            if n >= max(1, STALE_SHARE * self._count(c)) and self._count(c) >= MIN_SAMPLES
        ]
        if not stale:
            return False
        for cls in stale:
            del self._new[cls]
            if cls is None:
                self._pooled_curve = investment_curve(self._samples(None))
            else:
                self._curves[cls] = investment_curve(self._samples(cls))
        classes = sorted(self._curves)
        rows = [self._curves[c] for c in classes]
        if self._pooled_curve is not None:
            rows.append(self._pooled_curve)
        self._table = np.vstack(rows) if rows else np.empty((0, GRID.size))
        self._rows = self._table.tolist()
        self._row = {c: i for i, c in enumerate(classes)}
        self._pooled_row = len(classes) if self._pooled_curve is not None else -1
        return True

    def _count(self, cls: int | None) -> int:
        """Samples of limit class ``cls`` (None: pooled), history and recent ends together."""
        if cls is None:
            return len(self._pooled) + len(self._pooled_history)
        return len(self._by_class.get(cls, ())) + len(self._history.get(cls, ()))

    def _samples(self, cls: int | None) -> np.ndarray:
        if cls is None:
            return np.array([*self._pooled_history, *self._pooled])
        return np.array([*self._history.get(cls, ()), *self._by_class.get(cls, ())])

    def _class_of(self, job: JobView) -> tuple[float, int]:
        known = self._classes.get(job.job_id)
        if known is None or known[0] != job.time_limit:
            if len(self._classes) >= CLASS_CACHE:  # jobs that left without ending (cancelled) pile up
                self._classes.clear()
            limit = limit_of(job)
            known = self._classes[job.job_id] = (job.time_limit, limit, limit_class(limit))
        return known[1], known[2]

    def key(self, job: JobView, now: float) -> float:
        """GPUs x L x g at the grid point at or below a / L (seconds x GPUs); see the module.

        One job at a time in plain floats, the arithmetic of :meth:`keys`, so
        both give the same key to the last bit.
        """
        limit, cls = self._class_of(job)
        row = self._row.get(cls, self._pooled_row)
        if row < 0:
            return job.gpus * limit
        at = bisect.bisect_right(_GRID, run_per_gpu(job, now) / limit) - 1
        g = self._rows[row][at]
        return job.gpus * (limit * (g if g < math.inf else _GRID[at]))

    def keys(self, jobs: list[JobView], now: float) -> np.ndarray:
        """:meth:`key` of every job in ``jobs``, as one array computation."""
        known = [self._class_of(j) for j in jobs]
        gpus = np.array([j.gpus for j in jobs], dtype=float)
        limits = np.array([limit for limit, _ in known])
        if self._pooled_row < 0 and not self._row:
            return gpus * limits
        row_of, pooled = self._row, self._pooled_row
        rows = np.array([row_of.get(cls, pooled) for _, cls in known])
        ran = np.array([run_per_gpu(j, now) for j in jobs])
        at = np.searchsorted(GRID, ran / limits, side="right") - 1
        g = self._table[np.maximum(rows, 0), at]
        keyed = limits * np.where(np.isinf(g), GRID[at], g)
        return gpus * np.where(rows < 0, limits, keyed)

    def next_step(self, job: JobView, now: float) -> float:
        """When running ``job``'s key next may change: its run reaches the next grid point (inf: never)."""
        return self.key_and_step(job, now)[1]

    def key_and_step(self, job: JobView, now: float) -> tuple[float, float]:
        """:meth:`key`, and when the key next may change (inf: never), from one look-up of the job's
        class and grid point: a running job's key is read again at each grid point it reaches."""
        limit, cls = self._class_of(job)
        row = self._row.get(cls, self._pooled_row)
        if row < 0:
            return job.gpus * limit, math.inf
        nxt = bisect.bisect_right(_GRID, run_per_gpu(job, now) / limit)
        at = nxt - 1
        g = self._rows[row][at]
        key = job.gpus * (limit * (g if g < math.inf else _GRID[at]))
        if job.gpus <= 0 or job.start_time is None or nxt >= len(_GRID):
            return key, math.inf
        return key, job.start_time + _GRID[nxt] * limit - job.attained_service / job.gpus


def _age(history: deque[float] | None, *, full: bool) -> None:
    """Drop the oldest history sample when a recent end is about to push one out of a full window."""
    if full and history:
        history.popleft()


class GittinsLimit(PreemptiveScheduler):
    """Highest Gittins index first on the run times of ended jobs with like limits, preemptive."""

    def __init__(self, placement: PlacementPolicy) -> None:
        super().__init__("gittins-limit", placement, min_run=MIN_RUN)
        self.runs = RunTimes()
        self._next_refresh = -math.inf
        self._pending_keys: dict[str, float] = {}  # a waiting job's key holds until the curves change

    def prepare(self, view: ClusterView) -> None:
        for done in view.finished:
            self.runs.learn(done.job, done.run_time, from_accounting=done.from_accounting)
            self._pending_keys.pop(done.job.job_id, None)
        if view.now >= self._next_refresh and self.runs.refresh():
            self._next_refresh = view.now + REFRESH_PERIOD
            self._pending_keys.clear()
            if self.index is not None:
                self.index.invalidate()

    def remember(self, ended: Iterable[FinishedJob]) -> None:
        """Take ``ended`` as history read from accounting (a checkpoint's run-time table,
        :mod:`slurmrl.rl.run_times`); the curves learn it at the next pass."""
        for done in ended:
            self.runs.learn(done.job, done.run_time, from_accounting=True)

    def key(self, job: JobView, now: float) -> tuple[float, float, str]:
        return (self.runs.key(job, now), job.submit_time, job.job_id)

    def keys(self, jobs: list[JobView], now: float) -> list[tuple[float, float, str]]:
        if not jobs:
            return []
        keyed = self.runs.keys(jobs, now).tolist()
        return [(k, j.submit_time, j.job_id) for k, j in zip(keyed, jobs, strict=True)]

    def key_changes_at(self, job: JobView, now: float) -> float:
        return self.runs.next_step(job, now)

    def keyed(self, job: JobView, now: float) -> tuple[tuple[float, float, str], float]:
        key, step = self.runs.key_and_step(job, now)
        return (key, job.submit_time, job.job_id), step

    def rank(self, view: ClusterView) -> list[JobView]:
        pending = list(view.pending)
        if not pending:
            return pending
        cache = self._pending_keys
        missing = [j for j in pending if j.job_id not in cache]
        if missing:
            cache.update(
                zip((j.job_id for j in missing), self.runs.keys(missing, view.now).tolist(), strict=True)
            )
        keys = [cache[j.job_id] for j in pending]
        if len(cache) > 4 * len(pending) + 1024:  # jobs that left without ending (cancelled)
            self._pending_keys = dict(zip((j.job_id for j in pending), keys, strict=True))
        submits = np.array([j.submit_time for j in pending])
        order = np.lexsort((np.arange(len(pending)), submits, np.array(keys))).tolist()
        return [pending[i] for i in order]

    def on_start(self, job: JobView, now: float) -> None:
        self._pending_keys.pop(job.job_id, None)

    def may_preempt(self, victim: JobView, job: JobView, now: float) -> bool:
        return self.runs.key(victim, now) > PREEMPT_RATIO * self.runs.key(job, now)


def make_gittins_limit(placement: PlacementPolicy) -> GittinsLimit:
    return GittinsLimit(placement)
