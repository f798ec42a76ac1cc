"""Headline numbers of one simulation run, computed only from its records.

Conventions (every figure in seconds unless it is a count or a ratio):

* A job is *completed* when its ``end_time`` is finite; that includes jobs
  killed at their time limit, since they too left the cluster. JCT statistics
  and the bounded slowdown use completed jobs only; jobs still queued or
  running when the run stopped are counted in ``unfinished``.
* Waits use every job that started, finished or not; jobs that never started
  are left out (their wait is censored, not known).
* Percentiles use linear interpolation between order statistics (numpy's
  default), so p50 of ``[1, 2, 3, 4]`` is 2.5.
* Time averages (utilisation, fragmentation, queue length) treat the samples
  as a step function — each sample's value holds until the next sample — and
  average it over ``[first submit, end]``, where ``end`` is ``horizon_end`` if
  given, else the last job end. Before the first sample the cluster is idle.
  Averaging over time rather than over samples keeps bursts of events from
  dominating.
* Fairness is Jain's index ``(sum x)^2 / (n sum x^2)`` over ``x`` = mean bounded
  slowdown of each user (or VC) with completed jobs: 1 when every group is
  slowed down equally, ``1/n`` when one group takes all of the slowdown.
* Anything without data (no completed jobs, no multi-GPU jobs, a zero-length
  window) is NaN, never an exception; :meth:`Summary.to_dict` turns NaN into
  ``None`` so the dict is valid strict JSON.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

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
    completed: int
    unfinished: int
    avg_jct: float
    p50_jct: float
    p95_jct: float
    p99_jct: float
    avg_wait: float
    p95_wait: float
    avg_bounded_slowdown: float
    makespan: float
    gpu_utilization: float
    avg_fragmentation: float
    avg_queue_length: float
    multi_gpu_local_fraction: float
    multi_gpu_switch_fraction: float
    jain_fairness_users: float
    jain_fairness_vcs: float
    preemptions: int
    killed_at_limit: int
    avg_jct_lower_bound: float
    makespan_lower_bound: float
    jct_over_bound: float
    makespan_over_bound: float
    wall_seconds: float

    def to_dict(self) -> dict[str, object]:
        """Field values in declaration order; NaN and infinities become ``None``."""
        return {f.name: _clean(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, object], *, source: str = "summary") -> Summary:
        """Inverse of :meth:`to_dict`; unknown keys are ignored, ``None`` reads as NaN."""
        values: dict[str, object] = {}
        for f in fields(cls):
            if f.name not in data:
                raise SlurmrlError(
                    f"missing key '{f.name}'",
                    file=source,
                    hint="the file was not written by this version of slurmrl; re-run the simulation",
                )
            raw = data[f.name]
            try:
                if f.type == "int":
                    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw != int(raw):
                        raise ValueError
                    values[f.name] = int(raw)
                else:
                    values[f.name] = NAN if raw is None else float(raw)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                kind = "an integer" if f.type == "int" else "a number or null"
                raise SlurmrlError(f"key '{f.name}' should be {kind}, got {raw!r}", file=source) from None
        return cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class GroupStats:
    """Per-group averages for the report's per-VC / per-user / per-size tables."""

    group: str
    jobs: int
    completed: int
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

    def antiderivative(self, x: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self.t, x, side="right") - 1
        safe = np.clip(idx, 0, None)
        val = self.cum[safe] + self.v[safe] * (x - self.t[safe])
        return np.where(idx < 0, 0.0, val)

    def mean(self, a: float, b: float) -> float:
        if not (b > a):
            return NAN
        ends = self.antiderivative(np.array([a, b], dtype=np.float64))
        return float((ends[1] - ends[0]) / (b - a))


def _steps(samples: Sequence[Sample]) -> dict[str, _Step] | None:
    if not samples:
        return None
    t = np.fromiter((s.time for s in samples), dtype=np.float64, count=len(samples))
    order = np.argsort(t, kind="stable")  # ties keep sample order, so the last one wins
    t = t[order]

    def col(name: str) -> np.ndarray:
        raw = np.fromiter((getattr(s, name) for s in samples), dtype=np.float64, count=len(samples))
        return raw[order]

    return {
        "busy": _Step(t, col("busy_gpus")),
        "pending": _Step(t, col("pending_jobs")),
        "frag": _Step(t, col("fragmentation")),
    }


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


@dataclass(frozen=True)
class _Cols:
    """Records as numpy columns, so 50k-job summaries stay vectorised."""

    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    duration: np.ndarray
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
            return np.fromiter((getattr(r, name) for r in records), dtype=dtype, count=n)

        return cls(
            submit=f("submit_time"),
            start=f("start_time"),
            end=f("end_time"),
            duration=f("duration"),
            gpus=f("gpus", np.int64),
            nodes=f("nodes", np.int64),
            racks=f("racks", np.int64),
            time_limit=f("time_limit"),
            preemptions=f("preemptions", np.int64),
            killed=f("killed_at_limit", np.bool_),
        )


def summarize(
    records: Sequence[JobRecord],
    samples: Sequence[Sample],
    cluster: Cluster,
    *,
    wall_seconds: float,
    horizon_end: float | None = None,
) -> Summary:
    """Reduce a run to its :class:`Summary` (conventions in the module docstring).

    The lower bounds are computed over the completed jobs, the same set the
    JCT figures average over; a job with a time limit counts with
    ``min(duration, time_limit)``, since a limit-enforcing run may stop it
    there, so the bound stays valid whether limits were enforced or not.
    """
    c = _Cols.of(records)
    n = len(records)
    done = np.isfinite(c.end)
    started = np.isfinite(c.start)
    jct = (c.end - c.submit)[done]
    wait = (c.start - c.submit)[started]
    slow = bounded_slowdown(jct, c.duration[done])

    first_submit = float(np.min(c.submit)) if n else NAN
    last_end = float(np.max(c.end[done])) if done.any() else NAN
    makespan = last_end - first_submit

    # Time averages of the sampled state.
    if horizon_end is not None:
        window_end = float(horizon_end)
    elif done.any():
        window_end = last_end
    elif samples:
        window_end = max(s.time for s in samples)
    else:
        window_end = NAN
    steps = _steps(samples)
    total_gpus = cluster.total_gpus
    if steps is None or math.isnan(first_submit) or math.isnan(window_end):
        util = frag = queue = NAN
    else:
        util = _ratio(steps["busy"].mean(first_submit, window_end), float(total_gpus))
        frag = steps["frag"].mean(first_submit, window_end)
        queue = steps["pending"].mean(first_submit, window_end)

    multi = (c.gpus > 1) & (c.nodes > 0)
    n_multi = int(multi.sum())
    local = float(np.sum(c.nodes[multi] == 1)) / n_multi if n_multi else NAN
    switch = float(np.sum(c.racks[multi] == 1)) / n_multi if n_multi else NAN

    done_idx = np.flatnonzero(done)
    users = [records[i].user for i in done_idx]
    vcs = [records[i].vc for i in done_idx]
    jain_users = jain_index(_group_means(users, slow))
    jain_vcs = jain_index(_group_means(vcs, slow))

    if done.any() and total_gpus > 0:
        r = c.submit[done]
        p = np.fmin(c.duration[done], c.time_limit[done])  # fmin ignores a NaN (absent) limit
        g = c.gpus[done]
        jct_bound = avg_jct_lower_bound(r, p, g, total_gpus)
        mk_bound = makespan_lower_bound(r, p, g, total_gpus) - first_submit
    else:
        jct_bound = mk_bound = NAN
    avg_jct = _mean(jct)

    return Summary(
        jobs=n,
        completed=int(done.sum()),
        unfinished=int(n - done.sum()),
        avg_jct=avg_jct,
        p50_jct=_pct(jct, 50),
        p95_jct=_pct(jct, 95),
        p99_jct=_pct(jct, 99),
        avg_wait=_mean(wait),
        p95_wait=_pct(wait, 95),
        avg_bounded_slowdown=_mean(slow),
        makespan=makespan,
        gpu_utilization=util,
        avg_fragmentation=frag,
        avg_queue_length=queue,
        multi_gpu_local_fraction=local,
        multi_gpu_switch_fraction=switch,
        jain_fairness_users=jain_users,
        jain_fairness_vcs=jain_vcs,
        preemptions=int(c.preemptions.sum()),
        killed_at_limit=int(c.killed.sum()),
        avg_jct_lower_bound=jct_bound,
        makespan_lower_bound=mk_bound,
        jct_over_bound=_ratio(avg_jct, jct_bound),
        makespan_over_bound=_ratio(makespan, mk_bound),
        wall_seconds=float(wall_seconds),
    )


GROUP_KEYS = ("vc", "user", "gpus")


def per_group(records: Sequence[JobRecord], key: str = "vc") -> tuple[GroupStats, ...]:
    """Average wait, JCT and bounded slowdown per VC, user or GPU count.

    Groups come sorted by name, numerically for ``gpus``. Waits cover jobs
    that started, JCT and slowdown jobs that completed, as in :func:`summarize`.
    """
    if key not in GROUP_KEYS:
        raise SlurmrlError(f"cannot group jobs by '{key}'", hint="use one of: " + ", ".join(GROUP_KEYS))
    buckets: dict[object, list[JobRecord]] = {}
    for rec in records:
        buckets.setdefault(getattr(rec, key), []).append(rec)
    out = []
    for label in sorted(buckets, key=int if key == "gpus" else str):
        c = _Cols.of(buckets[label])
        done = np.isfinite(c.end)
        started = np.isfinite(c.start)
        wait = (c.start - c.submit)[started]
        jct = (c.end - c.submit)[done]
        out.append(
            GroupStats(
                group=str(label),
                jobs=len(buckets[label]),
                completed=int(done.sum()),
                avg_wait=_mean(wait),
                p95_wait=_pct(wait, 95),
                avg_jct=_mean(jct),
                avg_bounded_slowdown=_mean(bounded_slowdown(jct, c.duration[done])),
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
    t = steps["busy"].t
    lo = float(t[0]) if start is None else float(start)
    hi = float(t[-1]) if end is None else float(end)
    if hi <= lo:
        hi = lo + 1.0
    edges = np.linspace(lo, hi, bins + 1)
    width = np.diff(edges)

    def binned(step: _Step) -> np.ndarray:
        return np.diff(step.antiderivative(edges)) / width

    busy = binned(steps["busy"])
    total = cluster.total_gpus
    util = busy / total if total > 0 else np.full_like(busy, NAN)
    return UtilizationSeries(edges, busy, util, binned(steps["pending"]), binned(steps["frag"]))
