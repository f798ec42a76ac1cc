"""The comparison table of a scenario: every summary metric, formatted, with the best marked.

Each metric states which direction is better so the page can mark winners
without a reader having to remember that a high utilisation is good but a
high queue length is not. Oracle policies (which read true job durations) are
bounds, not candidates, so the best value of a column is taken over the
deployable runs whenever there is at least one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from slurmrl.report.runs import Run, Scenario

Better = Literal["lower", "higher", "none"]
Kind = Literal["duration", "ratio", "two", "count"]


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    kind: Kind
    better: Better
    meaning: str


METRICS: tuple[Metric, ...] = (
    Metric("jobs", "jobs", "count", "none", "jobs in the workload"),
    Metric("finished", "finished", "count", "higher", "jobs that ended by running out of work"),
    Metric("killed", "killed", "count", "lower", "jobs stopped at their time limit"),
    Metric("unfinished", "unfinished", "count", "lower", "jobs still queued or running when the run stopped"),
    Metric(
        "avg_jct",
        "mean JCT",
        "duration",
        "lower",
        "mean job completion time, submit to end, of finished jobs",
    ),
    Metric("p50_jct", "p50 JCT", "duration", "lower", "median job completion time"),
    Metric("p95_jct", "p95 JCT", "duration", "lower", "95th percentile job completion time"),
    Metric("p99_jct", "p99 JCT", "duration", "lower", "99th percentile job completion time"),
    Metric("avg_wait", "mean wait", "duration", "lower", "mean time from submit to first start"),
    Metric("p95_wait", "p95 wait", "duration", "lower", "95th percentile wait"),
    Metric(
        "avg_bounded_slowdown",
        "bounded slowdown",
        "two",
        "lower",
        "mean of JCT / max(run time, 10 s), at least 1: how much longer than alone on the cluster",
    ),
    Metric("makespan", "makespan", "duration", "lower", "first submit to last job end"),
    Metric("gpu_utilization", "GPU util.", "ratio", "higher", "time-averaged fraction of GPUs busy"),
    Metric(
        "avg_fragmentation",
        "fragmentation",
        "ratio",
        "lower",
        "time-averaged share of free GPUs stranded on partly used nodes",
    ),
    Metric("avg_queue_length", "queue length", "two", "lower", "time-averaged number of pending jobs"),
    Metric(
        "idle_gpu_hours_waiting",
        "idle GPU-h while jobs wait",
        "two",
        "lower",
        "GPU-hours left free while at least one job was pending",
    ),
    Metric(
        "multi_gpu_local_fraction",
        "multi-GPU in one node",
        "ratio",
        "higher",
        "share of multi-GPU jobs placed inside a single node",
    ),
    Metric(
        "multi_gpu_switch_fraction",
        "multi-GPU in one switch",
        "ratio",
        "higher",
        "share of multi-GPU jobs placed under a single rack switch",
    ),
    Metric(
        "jain_fairness_users",
        "Jain fairness (users)",
        "ratio",
        "higher",
        "Jain's index of per-user mean slowdown: 1 = every user slowed equally",
    ),
    Metric(
        "jain_fairness_vcs", "Jain fairness (VCs)", "ratio", "higher", "Jain's index of per-VC mean slowdown"
    ),
    Metric(
        "ftf_rho_max",
        "max finish-time fairness",
        "two",
        "lower",
        "largest JCT / time on an equal 1/N share of the cluster (Themis' rho; 1 = fair)",
    ),
    Metric(
        "ftf_unfair_fraction",
        "jobs with rho > 1",
        "ratio",
        "lower",
        "share of finished jobs served worse than by an equal share of the cluster",
    ),
    Metric("preemptions", "preemptions", "count", "lower", "times a running job was stopped and requeued"),
    Metric(
        "avg_jct_lower_bound",
        "mean JCT bound",
        "duration",
        "none",
        "no schedule can achieve a lower mean JCT on these jobs",
    ),
    Metric(
        "makespan_lower_bound",
        "makespan bound",
        "duration",
        "none",
        "no schedule can finish these jobs sooner",
    ),
    Metric(
        "jct_over_bound", "JCT / bound", "two", "lower", "mean JCT divided by its lower bound (1 = optimal)"
    ),
    Metric("makespan_over_bound", "makespan / bound", "two", "lower", "makespan divided by its lower bound"),
    Metric(
        "steady_avg_jct",
        "steady mean JCT",
        "duration",
        "lower",
        "mean JCT of the finished jobs in the middle 80% of arrivals (warm-up and drain left out)",
    ),
    Metric("steady_p95_jct", "steady p95 JCT", "duration", "lower", "95th percentile JCT of those jobs"),
    Metric(
        "steady_utilization",
        "steady GPU util.",
        "ratio",
        "higher",
        "fraction of GPUs busy between the first and last of those jobs' submissions",
    ),
    Metric(
        "backlog_jobs",
        "backlog jobs",
        "count",
        "none",
        "jobs queued at a warm start's hand-over: served by the policy, not measured",
    ),
    Metric(
        "backlog_avg_jct",
        "backlog mean JCT",
        "duration",
        "lower",
        "mean JCT of the finished backlog jobs: what serving measured jobs first cost them",
    ),
    Metric("wall_seconds", "sim. wall time", "duration", "lower", "seconds the simulation itself took"),
)


# Shown only for scenarios whose runs took a queue over at a hand-over.
WARM_ONLY = frozenset({"backlog_jobs", "backlog_avg_jct"})


@dataclass(frozen=True)
class Cell:
    text: str
    value: float | None  # raw value for sorting; None when missing
    best: bool = False


@dataclass(frozen=True)
class Row:
    run: Run | None  # None for the lower-bound row
    label: str
    note: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Column:
    metric: Metric
    header: str  # label with unit, e.g. "mean JCT [h]"


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    bound_row: Row


def _value(run: Run, key: str) -> float | None:
    raw = getattr(run.results.summary, key, None)
    if raw is None or isinstance(raw, bool):
        return None
    x = float(raw)
    return x if math.isfinite(x) else None


def duration_unit(values: Sequence[float]) -> tuple[str, float]:
    """(unit, divisor) for a column of seconds, chosen by its largest magnitude."""
    top = max((abs(v) for v in values), default=0.0)
    if top < 100:
        return "s", 1.0
    if top < 7200:
        return "min", 60.0
    return "h", 3600.0


def _fmt(x: float | None, kind: Kind, div: float) -> str:
    if x is None:
        return "–"
    if kind == "duration":
        return f"{x / div:,.2f}"
    if kind == "ratio":
        return f"{x:.3f}"
    if kind == "two":
        return f"{x:,.2f}"
    return f"{round(x):,d}"


def _bound_values(scenario: Scenario) -> dict[str, float | None]:
    """Bounds from the run that finished the most jobs: the JCT bound covers finished jobs only."""
    top = max(scenario.runs, key=lambda r: r.results.summary.finished)
    return {
        "avg_jct": _value(top, "avg_jct_lower_bound"),
        "makespan": _value(top, "makespan_lower_bound"),
        "avg_jct_lower_bound": _value(top, "avg_jct_lower_bound"),
        "makespan_lower_bound": _value(top, "makespan_lower_bound"),
        "jct_over_bound": 1.0,
        "makespan_over_bound": 1.0,
    }


def build_table(scenario: Scenario) -> Table:
    runs = scenario.runs
    candidates = [r for r in runs if r.deployable] or list(runs)
    bounds = _bound_values(scenario)
    columns: list[Column] = []
    per_run: list[list[Cell]] = [[] for _ in runs]
    bound_cells: list[Cell] = []
    warm = any((_value(r, "backlog_jobs") or 0) > 0 for r in runs)
    for metric in METRICS:
        if metric.key in WARM_ONLY and not warm:
            continue
        values = [_value(r, metric.key) for r in runs]
        div = 1.0
        header = metric.label
        if metric.kind == "duration":
            unit, div = duration_unit([v for v in values if v is not None])
            header = f"{metric.label} [{unit}]"
        elif metric.kind == "ratio":
            header = f"{metric.label} [fraction]"
        columns.append(Column(metric, header))
        pool = [_value(r, metric.key) for r in candidates]
        present = [v for v in pool if v is not None]
        best: float | None = None
        # A single run has nothing to beat, so nothing is marked.
        if present and metric.better != "none" and len(runs) > 1:
            best = min(present) if metric.better == "lower" else max(present)
        for i, (run, v) in enumerate(zip(runs, values, strict=True)):
            is_best = best is not None and v is not None and run in candidates and math.isclose(v, best)
            per_run[i].append(Cell(_fmt(v, metric.kind, div), v, is_best))
        b = bounds.get(metric.key)
        bound_cells.append(Cell(_fmt(b, metric.kind, div) if metric.key in bounds else "", b))
    rows = tuple(
        Row(run, run.label, "" if run.deployable else "oracle: reads true durations, a bound", tuple(cells))
        for run, cells in zip(runs, per_run, strict=True)
    )
    bound_row = Row(None, "lower bound", "no schedule can do better on these jobs", tuple(bound_cells))
    return Table(tuple(columns), rows, bound_row)
