"""Headline numbers of one simulation run, computed only from its records.

Conventions (every figure in seconds unless it is a count or a ratio):

* A job is *finished* when it ended by running out of work, *killed* when it
  was stopped at its time limit (``JobRecord.killed_at_limit``), *unfinished*
  when it was still queued or running when the run stopped. JCT statistics,
  the bounded slowdown and both fairness measures use finished jobs only: a
  killed job's JCT says when its limit struck, not how well it was served.
* Waits use every job that started, whatever its end; jobs that never started
  are left out (their wait is censored, not known).
* ``last_end`` is the absolute trace time of the last job end (finished or
  killed); ``makespan`` is ``last_end`` minus the first submission.
* Percentiles use linear interpolation between order statistics (numpy's
  default), so p50 of ``[1, 2, 3, 4]`` is 2.5.
* Time averages (utilisation, fragmentation, queue length) treat the samples
  as a step function — each sample's value holds until the next sample — and
  average it over ``[first submit, end]``, where ``end`` is ``horizon_end`` if
  given, else ``last_end``. Before the first sample the cluster is idle.
  Averaging over time rather than over samples keeps bursts of events from
  dominating. ``idle_gpu_hours_waiting`` integrates the free GPUs over the
  part of that window in which at least one job is pending, in GPU-hours.
* Jain's index ``(sum x)^2 / (n sum x^2)`` over ``x`` = mean bounded slowdown
  of each user (or VC) with finished jobs: 1 when every group is slowed down
  equally, ``1/n`` when one group takes all of the slowdown. NaN when the
  trace records no users (or VCs): every label empty.
* Finish-time fairness (Mahajan et al., "Themis: Fair and Efficient GPU
  Cluster Scheduling", NSDI 2020): ``rho_j = JCT_j / T_id_j`` with
  ``T_id_j = p_j * max(1, g_j * N_j / G)``, the time job ``j`` would take on an
  equal ``1/N_j`` share of the cluster, where ``N_j`` is the time-averaged
  number of jobs in the system (pending plus running) over
  ``[submit_j, end_j]`` and ``p_j`` the job's processing time (below).
  ``ftf_rho_max`` is the largest ``rho``, ``ftf_unfair_fraction`` the share of
  finished jobs with ``rho > 1`` (served worse than by an equal share). Jobs
  with ``p_j = 0`` have no ``rho`` and are left out.
* A job's processing time ``p_j`` is ``JobRecord.best_time`` (the fastest it
  could run anywhere on the cluster under the run's speed model), or its
  trace duration in files written before that was recorded.
* Steady state: warm-up and drain are excluded as Gavel does (Narayanan et
  al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
  Workloads", OSDI 2020) by measuring a middle range of jobs: those in the
  middle 80% of the arrival order (the first and last 10%, rounded down, are
  left out). ``steady_jobs`` counts them; ``steady_avg_jct`` and
  ``steady_p95_jct`` use the finished ones among them; ``steady_utilization``
  averages the busy GPUs from the first to the last of their submissions.
* Inherited backlog (warm-started runs): the jobs submitted before the
  hand-over that had not started by it. The run's figures cover only jobs
  submitted from the hand-over on, so a policy could gain there by making
  the inherited queue wait; ``backlog_jobs`` counts it and
  ``backlog_avg_jct`` is the mean JCT (from submission) of its finished
  jobs, which shows that. 0 and NaN for a run without a hand-over.
* Anything without data (no finished jobs, no multi-GPU jobs, a zero-length
  window) is NaN, never an exception; :meth:`Summary.to_dict` turns NaN into
  ``None`` so the dict is valid strict JSON.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter

import numpy as np

from slurmrl.cluster.model import Cluster
from slurmrl.errors import SlurmrlError
from slurmrl.sim.bounds import avg_jct_lower_bound, makespan_lower_bound
from slurmrl.sim.records import JobRecord, Sample

# Bounded-slowdown threshold: runs shorter than this count as this long, so a
# 1-second job that waited a minute does not dominate the mean. 10 s is the
# customary value from Feitelson, Rudolph, Schwiegelshohn, Sevcik and Wong,
# "Theory and Practice in Parallel Job Scheduling", JSSPP 1997.
BOUNDED_SLOWDOWN_THRESHOLD_S = 10.0

NAN = float("nan")


def _clean(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True, slots=True)
class Summary:
    jobs: int
    finished: int
    killed: int
    unfinished: int
    avg_jct: float
    p50_jct: float
    p95_jct: float
    p99_jct: float
    avg_wait: float
    p95_wait: float
    avg_bounded_slowdown: float
    makespan: float
    last_end: float
    gpu_utilization: float
    avg_fragmentation: float
    avg_queue_length: float
    idle_gpu_hours_waiting: float
    multi_gpu_local_fraction: float
    multi_gpu_switch_fraction: float
    jain_fairness_users: float
    jain_fairness_vcs: float
    ftf_rho_max: float
    ftf_unfair_fraction: float
    preemptions: int
    avg_jct_lower_bound: float
    makespan_lower_bound: float
    jct_over_bound: float
    makespan_over_bound: float
    steady_jobs: int
    steady_avg_jct: float
    steady_p95_jct: float
    steady_utilization: float
    backlog_jobs: int
    backlog_avg_jct: float
    wall_seconds: float

    def to_dict(self) -> dict[str, object]:
        """Field values in declaration order; NaN and infinities become ``None``."""
        return {f.name: _clean(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, object], *, source: str = "summary") -> Summary:
        """Inverse of :meth:`to_dict`; unknown keys are ignored, ``None`` reads as NaN.

        Summaries written before finished and killed jobs were told apart
        (``completed``, ``killed_at_limit``) still read: ``finished`` is
        ``completed - killed_at_limit``, and the keys added since then are
        missing (NaN; ``steady_jobs`` 0). So do summaries without the
        backlog keys (:data:`_LATER_KEYS`).
        """
        data = _upgrade(data)
        values: dict[str, object] = {}
        for f in fields(cls):
            if f.name not in data:
                raise SlurmrlError(
                    f"missing key '{f.name}'",
                    file=source,
                    hint="the file was not written by this version of slurmrl; re-run the simulation",
                )
            values[f.name] = _read_value(f.name, str(f.type), data[f.name], source)
        return cls(**values)  # type: ignore[arg-type]


# Keys added to the summary with finished/killed jobs told apart, and their value in older files.
_ADDED_KEYS: dict[str, object] = {
    "last_end": None,
    "idle_gpu_hours_waiting": None,
    "ftf_rho_max": None,
    "ftf_unfair_fraction": None,
    "steady_jobs": 0,
    "steady_avg_jct": None,
    "steady_p95_jct": None,
    "steady_utilization": None,
}


# Keys added since, and their value in files written before them.
_LATER_KEYS: dict[str, object] = {"backlog_jobs": 0, "backlog_avg_jct": None}


def _upgrade(data: Mapping[str, object]) -> Mapping[str, object]:
    """An older summary (``completed``/``killed_at_limit``, no backlog keys) in this version's keys."""
    if any(key not in data for key in _LATER_KEYS):
        data = {**_LATER_KEYS, **data}
    if "finished" in data or "completed" not in data:
        return data
    out = dict(data)
    completed, killed = out.pop("completed"), out.pop("killed_at_limit", 0)
    if isinstance(completed, int) and isinstance(killed, int) and not isinstance(killed, bool):
        out["finished"], out["killed"] = completed - killed, killed
    else:  # let the type check below name the bad key
        out["finished"], out["killed"] = completed, killed
    for key, default in _ADDED_KEYS.items():
        out.setdefault(key, default)
    return out


def _read_value(name: str, kind: str, raw: object, source: str) -> int | float:
    try:
        if kind == "int":
            if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw != int(raw):
                raise ValueError
            return int(raw)
        return NAN if raw is None else float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        what = "an integer" if kind == "int" else "a number or null"
        raise SlurmrlError(f"key '{name}' should be {what}, got {raw!r}", file=source) from None


@dataclass(frozen=True, slots=True)
class GroupStats:
    """Per-group averages for the report's per-VC / per-user / per-size tables."""

    group: str
    jobs: int
    finished: int
    avg_wait: float
    p95_wait: float
    avg_jct: float
    avg_bounded_slowdown: float

    def to_dict(self) -> dict[str, object]:
        return {f.name: _clean(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class UtilizationSeries:
    """Time-binned averages of the sampled step functions, for plots.

    ``edges`` has ``bins + 1`` entries; every other array has one value per bin,
    the exact time average of the step function over that bin.
    """

    edges: np.ndarray
    busy_gpus: np.ndarray
    utilization: np.ndarray
    queue_length: np.ndarray
    fragmentation: np.ndarray

    @property
    def centers(self) -> np.ndarray:
        return (self.edges[:-1] + self.edges[1:]) / 2


class _Step:
    """Right-continuous step function through sorted sample points; 0 before the first."""

    def __init__(self, times: np.ndarray, values: np.ndarray) -> None:
        self.t = times
        self.v = values
        # cum[k] = integral from t[0] to t[k]
        self.cum = np.concatenate(([0.0], np.cumsum(values[:-1] * np.diff(times))))

    def at(self, x: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self.t, x, side="right") - 1
        return np.where(idx < 0, 0.0, self.v[np.clip(idx, 0, None)])

    def antiderivative(self, x: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self.t, x, side="right") - 1
        safe = np.clip(idx, 0, None)
        val = self.cum[safe] + self.v[safe] * (x - self.t[safe])
        return np.where(idx < 0, 0.0, val)

    def integral(self, a: float, b: float) -> float:
        ends = self.antiderivative(np.array([a, b], dtype=np.float64))
        return float(ends[1] - ends[0])

    def mean(self, a: float, b: float) -> float:
        if not (b > a):
            return NAN
        return self.integral(a, b) / (b - a)

    def means(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Mean over each ``[a_i, b_i]``; the value at ``a_i`` where the interval is empty."""
        span = b - a
        area = self.antiderivative(b) - self.antiderivative(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(span > 0, area / np.where(span > 0, span, 1.0), self.at(a))


@dataclass(frozen=True)
class _Steps:
    """The sampled cluster state as step functions."""

    busy: _Step
    pending: _Step
    in_system: _Step  # pending plus running jobs
    frag: _Step

    def idle_while_waiting(self, total_gpus: int) -> _Step:
        """Free GPUs while at least one job is pending, else 0."""
        idle = np.where(self.pending.v > 0, total_gpus - self.busy.v, 0.0)
        return _Step(self.busy.t, idle)


def _steps(samples: Sequence[Sample]) -> _Steps | None:
    if not samples:
        return None
    t = np.fromiter(map(attrgetter("time"), samples), dtype=np.float64, count=len(samples))
    order = np.argsort(t, kind="stable")  # ties keep sample order, so the last one wins
    t = t[order]

    def col(name: str) -> np.ndarray:
        raw = np.fromiter(map(attrgetter(name), samples), dtype=np.float64, count=len(samples))
        return raw[order]

    pending = col("pending_jobs")
    return _Steps(
        busy=_Step(t, col("busy_gpus")),
        pending=_Step(t, pending),
        in_system=_Step(t, pending + col("running_jobs")),
        frag=_Step(t, col("fragmentation")),
    )


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x)) if x.size else NAN


def _pct(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if x.size else NAN


def _ratio(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b) or b <= 0:
        return NAN
    return a / b


def jain_index(values: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index of non-negative values; NaN when empty or all zero."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return NAN
    denom = x.size * float(np.sum(x * x))
    if denom <= 0:
        return NAN
    return float(np.sum(x)) ** 2 / denom


def bounded_slowdown(jct: np.ndarray, duration: np.ndarray) -> np.ndarray:
    return np.maximum(1.0, jct / np.maximum(duration, BOUNDED_SLOWDOWN_THRESHOLD_S))


def _group_means(labels: Sequence[str], x: np.ndarray) -> np.ndarray:
    if not labels:
        return np.zeros(0)
    _, inverse = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    sums = np.bincount(inverse, weights=x)
    counts = np.bincount(inverse)
    return sums / counts


def _jain_by(labels: Sequence[str], slow: np.ndarray) -> float:
    """Jain's index of per-group mean slowdown; NaN when no job carries a label."""
    if all(label == "" for label in labels):
        return NAN
    return jain_index(_group_means(labels, slow))


@dataclass(frozen=True)
class _Cols:
    """Records as numpy columns, so 50k-job summaries stay vectorised."""

    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    duration: np.ndarray
    best_time: np.ndarray
    gpus: np.ndarray
    nodes: np.ndarray
    racks: np.ndarray
    time_limit: np.ndarray
    preemptions: np.ndarray
    killed: np.ndarray

    @classmethod
    def of(cls, records: Sequence[JobRecord]) -> _Cols:
        n = len(records)

        def f(name: str, dtype: type = np.float64) -> np.ndarray:
            return np.fromiter(map(attrgetter(name), records), dtype=dtype, count=n)

        return cls(
            submit=f("submit_time"),
            start=f("start_time"),
            end=f("end_time"),
            duration=f("duration"),
            best_time=f("best_time"),
            gpus=f("gpus", np.int64),
            nodes=f("nodes", np.int64),
            racks=f("racks", np.int64),
            time_limit=f("time_limit"),
            preemptions=f("preemptions", np.int64),
            killed=f("killed_at_limit", np.bool_),
        )

    @property
    def ended(self) -> np.ndarray:
        return np.isfinite(self.end)

    @property
    def finished(self) -> np.ndarray:
        return self.ended & ~self.killed

    @property
    def processing(self) -> np.ndarray:
        """Each job's processing time: its best time where recorded, else its duration."""
        return np.where(np.isfinite(self.best_time), self.best_time, self.duration)

    @property
    def bound_processing(self) -> np.ndarray:
        """Processing time cut at the time limit, which a limit-enforcing run may stop a job at."""
        return np.fmin(self.processing, self.time_limit)  # fmin ignores a NaN (absent) limit


@dataclass(frozen=True)
class _Bounds:
    avg_jct: float
    makespan: float


def _bounds(c: _Cols, total_gpus: int, first_submit: float) -> _Bounds:
    """The JCT bound over finished jobs (the JCT figures' set); the makespan bound over every ended job.

    Both stay valid whether limits were enforced or not, since a job's
    processing counts with ``min(p_j, time_limit_j)``; the makespan covers
    killed jobs too, as they held GPUs until their limit.
    """
    if total_gpus <= 0:
        return _Bounds(NAN, NAN)
    p = c.bound_processing
    fin, ended = c.finished, c.ended
    key = _bounds_key(c.submit, p, c.gpus, fin, ended, total_gpus, first_submit)
    known = _BOUNDS_SEEN.get(key)
    if known is not None:
        return known
    jct = avg_jct_lower_bound(c.submit[fin], p[fin], c.gpus[fin], total_gpus) if fin.any() else NAN
    mk = NAN
    if ended.any():
        mk = makespan_lower_bound(c.submit[ended], p[ended], c.gpus[ended], total_gpus) - first_submit
    if len(_BOUNDS_SEEN) >= _BOUNDS_KEPT:
        _BOUNDS_SEEN.pop(next(iter(_BOUNDS_SEEN)))
    bounds = _BOUNDS_SEEN[key] = _Bounds(jct, mk)
    return bounds


# The bounds depend on the workload and the run's ended jobs only, so every
# policy of a comparison (or seed of a policy that finishes every job) gets
# the same ones: they are computed once per distinct input and kept for the
# last few, keyed by a digest of the exact input arrays.
_BOUNDS_KEPT = 8
_BOUNDS_SEEN: dict[tuple[object, ...], _Bounds] = {}


def _bounds_key(*parts: object) -> tuple[object, ...]:
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        if isinstance(part, np.ndarray):
            digest.update(f"{part.dtype}{part.shape}".encode())
            digest.update(np.ascontiguousarray(part).tobytes())
        else:
            digest.update(repr(part).encode())
        digest.update(b"\x00")
    return (len(parts), digest.digest())


@dataclass(frozen=True)
class _FinishTimeFairness:
    rho_max: float
    unfair_fraction: float


# Relative slack before a job counts as served worse than an equal share: end - submit
# loses a few ulps at trace-scale times, which must not turn rho = 1 into rho > 1.
_RHO_SLACK = 1e-9


def _finish_time_fairness(c: _Cols, steps: _Steps | None, total_gpus: int) -> _FinishTimeFairness:
    fin = c.finished
    if steps is None or total_gpus <= 0 or not fin.any():
        return _FinishTimeFairness(NAN, NAN)
    submit, end = c.submit[fin], c.end[fin]
    in_system = steps.in_system.means(submit, end)
    t_id = c.processing[fin] * np.maximum(1.0, c.gpus[fin] * in_system / total_gpus)
    ok = t_id > 0
    if not ok.any():
        return _FinishTimeFairness(NAN, NAN)
    rho = (end - submit)[ok] / t_id[ok]
    return _FinishTimeFairness(float(np.max(rho)), float(np.mean(rho > 1.0 + _RHO_SLACK)))


@dataclass(frozen=True)
class _Steady:
    jobs: int
    avg_jct: float
    p95_jct: float
    utilization: float


# Share of the arrival order left out at each end of the steady-state window.
STEADY_TRIM = 0.10


def _steady(c: _Cols, steps: _Steps | None, total_gpus: int) -> _Steady:
    n = c.submit.size
    cut = int(n * STEADY_TRIM)
    window = np.argsort(c.submit, kind="stable")[cut : n - cut]
    if window.size == 0:
        return _Steady(0, NAN, NAN, NAN)
    fin = window[c.finished[window]]
    jct = c.end[fin] - c.submit[fin]
    util = NAN
    if steps is not None and total_gpus > 0:
        util = _ratio(
            steps.busy.mean(float(c.submit[window[0]]), float(c.submit[window[-1]])), float(total_gpus)
        )
    return _Steady(int(window.size), _mean(jct), _pct(jct, 95), util)


@dataclass(frozen=True)
class _TimeAverages:
    utilization: float
    fragmentation: float
    queue_length: float
    idle_gpu_hours_waiting: float


def _time_averages(steps: _Steps | None, start: float, end: float, total_gpus: int) -> _TimeAverages:
    if steps is None or math.isnan(start) or math.isnan(end):
        return _TimeAverages(NAN, NAN, NAN, NAN)
    idle = steps.idle_while_waiting(total_gpus).integral(start, end) / 3600.0 if end >= start else NAN
    return _TimeAverages(
        utilization=_ratio(steps.busy.mean(start, end), float(total_gpus)),
        fragmentation=steps.frag.mean(start, end),
        queue_length=steps.pending.mean(start, end),
        idle_gpu_hours_waiting=idle,
    )


def summarize(
    records: Sequence[JobRecord],
    samples: Sequence[Sample],
    cluster: Cluster,
    *,
    wall_seconds: float,
    horizon_end: float | None = None,
    backlog: Sequence[JobRecord] = (),
) -> Summary:
    """Reduce a run to its :class:`Summary` (conventions in the module docstring).

    ``backlog``: the records of a warm-started run's inherited queue, kept out of ``records``.

    The lower bounds use each job's processing time (``best_time``) and are
    computed as :func:`_bounds` describes.
    """
    c = _Cols.of(records)
    n = len(records)
    fin, ended = c.finished, c.ended
    started = np.isfinite(c.start)
    jct = (c.end - c.submit)[fin]
    wait = (c.start - c.submit)[started]
    slow = bounded_slowdown(jct, c.duration[fin])

    first_submit = float(np.min(c.submit)) if n else NAN
    last_end = float(np.max(c.end[ended])) if ended.any() else NAN
    makespan = last_end - first_submit

    if horizon_end is not None:
        window_end = float(horizon_end)
    elif ended.any():
        window_end = last_end
    elif samples:
        window_end = max(s.time for s in samples)
    else:
        window_end = NAN
    total_gpus = cluster.total_gpus
    steps = _steps(samples)
    avg = _time_averages(steps, first_submit, window_end, total_gpus)

    multi = (c.gpus > 1) & (c.nodes > 0)
    n_multi = int(multi.sum())
    local = float(np.sum(c.nodes[multi] == 1)) / n_multi if n_multi else NAN
    switch = float(np.sum(c.racks[multi] == 1)) / n_multi if n_multi else NAN

    fin_idx = np.flatnonzero(fin)
    ftf = _finish_time_fairness(c, steps, total_gpus)
    bounds = _bounds(c, total_gpus, first_submit)
    steady = _steady(c, steps, total_gpus)
    avg_jct = _mean(jct)

    return Summary(
        jobs=n,
        finished=int(fin.sum()),
        killed=int((ended & c.killed).sum()),
        unfinished=int(n - ended.sum()),
        avg_jct=avg_jct,
        p50_jct=_pct(jct, 50),
        p95_jct=_pct(jct, 95),
        p99_jct=_pct(jct, 99),
        avg_wait=_mean(wait),
        p95_wait=_pct(wait, 95),
        avg_bounded_slowdown=_mean(slow),
        makespan=makespan,
        last_end=last_end,
        gpu_utilization=avg.utilization,
        avg_fragmentation=avg.fragmentation,
        avg_queue_length=avg.queue_length,
        idle_gpu_hours_waiting=avg.idle_gpu_hours_waiting,
        multi_gpu_local_fraction=local,
        multi_gpu_switch_fraction=switch,
        jain_fairness_users=_jain_by([records[i].user for i in fin_idx], slow),
        jain_fairness_vcs=_jain_by([records[i].vc for i in fin_idx], slow),
        ftf_rho_max=ftf.rho_max,
        ftf_unfair_fraction=ftf.unfair_fraction,
        preemptions=int(c.preemptions.sum()),
        avg_jct_lower_bound=bounds.avg_jct,
        makespan_lower_bound=bounds.makespan,
        jct_over_bound=_ratio(avg_jct, bounds.avg_jct),
        makespan_over_bound=_ratio(makespan, bounds.makespan),
        steady_jobs=steady.jobs,
        steady_avg_jct=steady.avg_jct,
        steady_p95_jct=steady.p95_jct,
        steady_utilization=steady.utilization,
        backlog_jobs=len(backlog),
        backlog_avg_jct=_backlog_jct(backlog),
        wall_seconds=float(wall_seconds),
    )


def _backlog_jct(backlog: Sequence[JobRecord]) -> float:
    if not backlog:
        return NAN
    c = _Cols.of(backlog)
    return _mean((c.end - c.submit)[c.finished])


GROUP_KEYS = ("vc", "user", "gpus")


def per_group(records: Sequence[JobRecord], key: str = "vc") -> tuple[GroupStats, ...]:
    """Average wait, JCT and bounded slowdown per VC, user or GPU count.

    Groups come sorted by name, numerically for ``gpus``. Waits cover jobs
    that started, JCT and slowdown jobs that finished, as in :func:`summarize`.
    """
    if key not in GROUP_KEYS:
        raise SlurmrlError(f"cannot group jobs by '{key}'", hint="use one of: " + ", ".join(GROUP_KEYS))
    buckets: dict[object, list[JobRecord]] = {}
    for rec in records:
        buckets.setdefault(getattr(rec, key), []).append(rec)
    out = []
    for label in sorted(buckets, key=int if key == "gpus" else str):
        c = _Cols.of(buckets[label])
        fin = c.finished
        started = np.isfinite(c.start)
        wait = (c.start - c.submit)[started]
        jct = (c.end - c.submit)[fin]
        out.append(
            GroupStats(
                group=str(label),
                jobs=len(buckets[label]),
                finished=int(fin.sum()),
                avg_wait=_mean(wait),
                p95_wait=_pct(wait, 95),
                avg_jct=_mean(jct),
                avg_bounded_slowdown=_mean(bounded_slowdown(jct, c.duration[fin])),
            )
        )
    return tuple(out)


def utilization_series(
    samples: Sequence[Sample],
    cluster: Cluster,
    bins: int = 200,
    *,
    start: float | None = None,
    end: float | None = None,
) -> UtilizationSeries:
    """Bin the sampled state into ``bins`` equal time slices for plotting.

    Each bin holds the exact time average over its slice, so narrow spikes
    are neither lost nor exaggerated, whatever the sample density. The range
    defaults to the first and last sample times.
    """
    if bins < 1:
        raise SlurmrlError(f"bins must be at least 1, got {bins}")
    steps = _steps(samples)
    if steps is None:
        empty = np.zeros(0)
        return UtilizationSeries(empty, empty, empty, empty, empty)
    t = steps.busy.t
    lo = float(t[0]) if start is None else float(start)
    hi = float(t[-1]) if end is None else float(end)
    if hi <= lo:
        hi = lo + 1.0
    edges = np.linspace(lo, hi, bins + 1)
    width = np.diff(edges)

    def binned(step: _Step) -> np.ndarray:
        return np.diff(step.antiderivative(edges)) / width

    busy = binned(steps.busy)
    total = cluster.total_gpus
    util = busy / total if total > 0 else np.full_like(busy, NAN)
    return UtilizationSeries(edges, busy, util, binned(steps.pending), binned(steps.frag))
