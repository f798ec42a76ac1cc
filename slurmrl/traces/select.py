"""Cutting a workload out of a trace and checking it against a cluster.

Experiments rarely replay a whole trace: they take a window, a few virtual
clusters, a GPU-size range, or scale the arrival rate to probe load. Doing it
here keeps every experiment's cut reproducible from its parameters, and the
fit check turns "this job can never start" into an error before a simulation
silently hangs on it.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace

from slurmrl.cluster.model import Cluster
from slurmrl.errors import TraceError
from slurmrl.traces.rows import MAX_REASONS
from slurmrl.traces.schema import Trace, TraceJob


def select(
    trace: Trace,
    *,
    start: float | None = None,
    end: float | None = None,
    vcs: Iterable[str] | None = None,
    min_gpus: int | None = None,
    max_gpus: int | None = None,
    limit: int | None = None,
    load: float = 1.0,
) -> Trace:
    """Jobs submitted in [start, end), in the given VCs and GPU range, first ``limit`` of them.

    Submit times are rebased to the window start (``start``, or 0 without one)
    and divided by ``load``: ``load=2`` halves every inter-arrival gap, doubling
    the arrival rate while keeping each job's size and run time.
    """
    if not 0 < load < math.inf:
        raise TraceError(
            f"load must be a positive number, got {load}",
            file=trace.source,
            hint="load=2.0 doubles the arrival rate",
        )
    for name, bound in (("start", start), ("end", end)):
        if bound is not None and not math.isfinite(bound):
            # A window that starts at NaN keeps no job and never ends one.
            raise TraceError(f"{name} must be a number of seconds, got {bound}", file=trace.source)
    if start is not None and end is not None and end <= start:
        raise TraceError(f"empty window: end {end:g} is not after start {start:g}", file=trace.source)
    if limit is not None and limit < 0:
        raise TraceError(f"limit must be >= 0, got {limit}", file=trace.source)
    if min_gpus is not None and max_gpus is not None and max_gpus < min_gpus:
        raise TraceError(f"max_gpus {max_gpus} is below min_gpus {min_gpus}", file=trace.source)
    wanted = None if vcs is None else set(vcs)
    origin = 0.0 if start is None else start
    kept: list[TraceJob] = []
    for job in trace.jobs:
        if limit is not None and len(kept) >= limit:
            break
        if start is not None and job.submit_time < start:
            continue
        if end is not None and job.submit_time >= end:
            continue
        if wanted is not None and job.vc not in wanted:
            continue
        if min_gpus is not None and job.num_gpus < min_gpus:
            continue
        if max_gpus is not None and job.num_gpus > max_gpus:
            continue
        kept.append(job)
    if origin != 0.0 or load != 1.0:
        kept = [replace(j, submit_time=(j.submit_time - origin) / load) for j in kept]
    return _with_jobs(trace, kept)


@dataclass(frozen=True)
class Filters:
    """:func:`select`'s filters held once, so a selection and the explanation of an empty one read the same."""

    start: float | None = None
    end: float | None = None
    vcs: tuple[str, ...] | None = None
    min_gpus: int | None = None
    max_gpus: int | None = None
    limit: int | None = None

    def select(self, trace: Trace) -> Trace:
        return select(trace, **asdict(self))

    def why_empty(self, trace: Trace) -> str:
        """Which of the filters alone keeps no job of ``trace``, said with what the trace holds.

        "No jobs left" sends a user guessing among the window, the VCs and the
        GPU range; a misspelt VC or a window in milliseconds is the usual cause.
        """
        jobs = trace.jobs
        if not jobs:
            return "the trace holds no job"
        if self.limit == 0:
            return "a limit of 0 keeps no job"
        if self.vcs is not None:
            wanted, present = set(self.vcs), sorted({j.vc for j in jobs})
            if not wanted & set(present):
                close = sorted({c for v in wanted for c in difflib.get_close_matches(v, present, n=2)})
                shown_vcs = ", ".join(present[:12]) + (", ..." if len(present) > 12 else "")
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                return f"no job of VC {', '.join(sorted(wanted))} (the trace's VCs: {shown_vcs}){hint}"
        first, last = jobs[0].submit_time, jobs[-1].submit_time
        if (self.start is not None and self.start > last) or (self.end is not None and self.end <= first):
            return f"no job submitted in the window (the trace's submits run from {first:g} to {last:g} s)"
        low, high = min(j.num_gpus for j in jobs), max(j.num_gpus for j in jobs)
        if (self.min_gpus is not None and self.min_gpus > high) or (
            self.max_gpus is not None and self.max_gpus < low
        ):
            return f"no job in the GPU range asked (the trace's jobs ask {low} to {high} GPUs)"
        return "no job passes the window, VC and GPU filters together"


def _with_jobs(
    trace: Trace, jobs: list[TraceJob], *, skipped: int = 0, reasons: list[str] | None = None
) -> Trace:
    lines = None
    if trace.lines is not None:
        lines = {j.job_id: trace.lines[j.job_id] for j in jobs if j.job_id in trace.lines}
    return replace(
        trace,
        jobs=tuple(jobs),
        lines=lines,
        skipped=trace.skipped + skipped,
        skip_reasons=(trace.skip_reasons + tuple(reasons or ()))[: max(MAX_REASONS, len(trace.skip_reasons))],
    )


_TOO_BIG = "use a larger cluster, filter the trace (max_gpus), or skip such jobs"
_NO_NODES = "leave the node count empty where the trace does not know it, or skip such jobs"


def check_fits(trace: Trace, cluster: Cluster, *, skip_bad: bool = False) -> Trace:
    """Fail (or, with ``skip_bad``, count and drop) jobs that could never start on ``cluster``."""
    per_type: dict[str, int] = {}
    per_type_node: dict[str, int] = {}
    for node in cluster.nodes:
        per_type[node.gpu_type] = per_type.get(node.gpu_type, 0) + node.gpus
        per_type_node[node.gpu_type] = max(per_type_node.get(node.gpu_type, 0), node.gpus)
    kept: list[TraceJob] = []
    skipped = 0
    reasons: list[str] = []
    for job in trace.jobs:
        problem = _misfit(job, cluster, per_type, per_type_node)
        if problem is None:
            kept.append(job)
            continue
        message, column, hint = problem
        line = trace.lines.get(job.job_id) if trace.lines else None
        error = TraceError(
            f"job '{job.job_id}' cannot run on cluster '{cluster.name}': {message}",
            file=trace.source,
            line=line,
            column=column,
            hint=hint,
        )
        if not skip_bad:
            raise error
        skipped += 1
        if len(reasons) < MAX_REASONS:
            reasons.append(error.format())
    if not skipped:
        return trace
    return _with_jobs(trace, kept, skipped=skipped, reasons=reasons)


def _misfit(
    job: TraceJob, cluster: Cluster, per_type: dict[str, int], per_type_node: dict[str, int]
) -> tuple[str, str, str] | None:
    """Why ``job`` could never start on ``cluster``: (message, column, hint); None when it could."""
    if job.num_nodes is not None and job.num_nodes < 1:
        # It would wait for good, and under a strict order every job behind it too.
        return f"asks for {job.num_nodes} nodes; a job runs on at least one", "num_nodes", _NO_NODES
    if job.gpu_type:
        if job.gpu_type not in per_type:
            have = ", ".join(t or "untyped" for t in sorted(per_type)) or "none"
            return f"no node has GPU type '{job.gpu_type}' (cluster has: {have})", "gpu_type", _TOO_BIG
        total, widest = per_type[job.gpu_type], per_type_node[job.gpu_type]
        kind = f" {job.gpu_type}"
    else:
        total, widest = cluster.total_gpus, cluster.max_gpus_per_node
        kind = ""
    if job.num_gpus > total:
        return (
            f"asks for {job.num_gpus} GPUs, the cluster has {total}{kind} GPUs in total",
            "num_gpus",
            _TOO_BIG,
        )
    if job.num_nodes == 1 and job.num_gpus > widest:
        return (
            f"asks for {job.num_gpus} GPUs on one node, the largest node has {widest}{kind}",
            "num_gpus",
            _TOO_BIG,
        )
    if job.num_nodes is not None and job.num_nodes > len(cluster.nodes):
        return f"asks for {job.num_nodes} nodes, the cluster has {len(cluster.nodes)}", "num_nodes", _TOO_BIG
    return None
