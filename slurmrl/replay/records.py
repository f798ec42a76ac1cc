"""What the controller said about each replayed job, turned into the simulator's records.

A replay's results are written by the same code as a simulation's
(:func:`slurmrl.sim.results.write_results`), so ``compare`` and ``report``
read both alike. Times come from the controller (whole seconds), shifted to
the replay's start and multiplied by the speedup, so they read in trace
seconds like the simulated twin's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.replay.plan import ReplayJob, ReplayPlan
from slurmrl.sim.records import JobRecord, Sample
from slurmrl.slurm.accounting import ENDED_STATES
from slurmrl.slurm.snapshot import SlurmJob


@dataclass(frozen=True, slots=True)
class Observed:
    """One replayed job as last seen: Slurm's own times (Unix seconds) and where it ran."""

    slurm_id: str
    submit: float
    start: float | None
    end: float | None
    state: str
    nodes: tuple[str, ...]
    gpus: tuple[tuple[str, tuple[int, ...] | None], ...]  # per node: GPU indices (None: not shown)
    restarts: int

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    @classmethod
    def of(cls, job: SlurmJob, before: Observed | None) -> Observed:
        """The job now, keeping where it ran from an earlier sighting (ended jobs lose GPU detail)."""
        gpus = tuple((node, item.indices) for node, item in job.gpu_alloc)
        if before is not None and before.gpus and not gpus:
            gpus = before.gpus
        nodes = job.nodes or (before.nodes if before is not None else ())
        start = job.start_time if job.state != "PENDING" else None
        end = job.end_time if job.state in ENDED_STATES else None
        return cls(job.job_id, job.submit_time, start, end, job.state, nodes, gpus, job.restarts)


def placement_of(seen: Observed, cluster: Cluster) -> Placement | None:
    """The GPUs Slurm gave, on the cluster model; None where nodes or indices are unknown."""
    index = cluster.node_index
    allocs = []
    for node, gpus in seen.gpus:
        n = index.get(node)
        if n is None or gpus is None:
            return None
        allocs.append((n, gpus))
    return Placement.of(allocs) if allocs else None


def job_record(
    plan: ReplayPlan, job: ReplayJob, seen: Observed | None, origin: float, cluster: Cluster
) -> JobRecord:
    """The record of one job in trace seconds; never-started jobs get NaN times."""
    k = plan.speedup
    nan = math.nan

    def trace_time(t: float | None) -> float:
        return (t - origin) * k if t is not None else nan

    duration = job.sleep * k
    limit = job.minutes * 60.0 * k if job.minutes else nan
    user = plan.submit_user or job.user
    if seen is None:
        return JobRecord(
            job.trace_id,
            user,
            job.account,
            "",
            job.gpus,
            job.submit_at * k,
            nan,
            nan,
            duration,
            0.0,
            0,
            0,
            0,
            -1,
            limit,
            False,
            duration,
        )
    start, end = trace_time(seen.start), trace_time(seen.end) if seen.state == "COMPLETED" else nan
    placement = placement_of(seen, cluster)
    racks = len({cluster.nodes[cluster.node_index[n]].rack for n in seen.nodes if n in cluster.node_index})
    worst = int(cluster.worst_link(placement)) if placement is not None else -1
    run_time = (seen.end - seen.start) * k if seen.end is not None and seen.start is not None else 0.0
    return JobRecord(
        job.trace_id,
        user,
        job.account,
        "",
        job.gpus,
        trace_time(seen.submit),
        start,
        end,
        duration,
        run_time,
        seen.restarts,
        len(seen.nodes),
        racks,
        worst,
        limit,
        seen.state == "TIMEOUT",
        duration,
    )


def samples_of(
    records: Sequence[JobRecord], placements: Iterable[Placement | None], cluster: Cluster
) -> list[Sample]:
    """The cluster over time, rebuilt from the jobs' submit, start and end times."""
    events: list[tuple[float, int, int]] = []  # (time, kind: 0 end, 1 submit, 2 start, job number)
    for i, r in enumerate(records):
        events.append((r.submit_time, 1, i))
        if math.isfinite(r.start_time):
            events.append((r.start_time, 2, i))
            end = r.end_time if math.isfinite(r.end_time) else r.start_time + r.run_time
            events.append((end, 0, i))
    events.sort()
    pool = GpuPool(cluster)
    held = list(placements)
    pending = running = 0
    out: list[Sample] = []
    for t, kind, i in events:
        p = held[i]
        if kind == 1:
            pending += 1
        elif kind == 2:
            pending, running = pending - 1, running + 1
            if p is not None and pool.is_free(p):
                pool.allocate(p)
            else:
                held[i] = None  # unknown or overlapping GPUs: counted as running, not on the grid
        else:
            running -= 1
            if p is not None:
                pool.release(p)
        sample = Sample(t, cluster.total_gpus - pool.total_free, pending, running, pool.fragmentation())
        if out and out[-1].time == t:
            out[-1] = sample
        else:
            out.append(sample)
    return out
