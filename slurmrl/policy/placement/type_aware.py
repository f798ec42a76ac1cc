"""Type-aware placement for clusters that mix GPU generations.

On a heterogeneous cluster a job's speed depends first on the GPU type it
lands on (a K80 runs ResNet-50 at a seventh of a V100's speed, Gavel OSDI'20),
so where it goes matters more than how close its GPUs are. This placement
tries the types in order of the job's throughput on them, from the project's
table (``slurmrl.perf.gpu_types``: Gavel's measurements, NVIDIA's, datasheet
ratios), and takes the first type that can hold the whole job, placed there
as ``topology`` would. A job's model counts only where the view carries one
(the trace or the user recorded it); for any other job the types are ranked
by their median throughput over the model zoo, so the fastest free type wins.
A job no single type can hold is placed by ``topology`` over every type, so
it is placed exactly when ``topology`` would place it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache

import numpy as np

from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.placement.common import tables
from slurmrl.policy.placement.topology import Topology
from slurmrl.policy.view import ClusterView, JobView


def known_model(model: str) -> str | None:
    """The zoo key of a recorded model class; None when unknown (never a hashed guess)."""
    if not model:
        return None
    from slurmrl.perf import MODELS, canonical_model

    if model in MODELS:
        return model
    name = canonical_model(model, "probe-a")
    return name if name == canonical_model(model, "probe-b") and name in MODELS else None


@lru_cache(maxsize=4096)
def type_speed(gpu_type: str, model: str | None) -> float:
    """Throughput of ``model`` on ``gpu_type`` relative to a V100 (median over the zoo when None).

    A type the table does not know counts as a V100, as the simulator counts
    it as the reference type.
    """
    from slurmrl.perf import MODELS
    from slurmrl.perf.gpu_types import canonical_gpu, relative_throughput

    table = canonical_gpu(gpu_type)
    if table is None:
        return 1.0
    if model is not None:
        return relative_throughput(table, model)
    return statistics.median(relative_throughput(table, m) for m in sorted(MODELS))


def fastest_first(cluster: Cluster, model: str | None) -> tuple[str, ...]:
    """The cluster's GPU types, fastest for ``model`` first (ties by name)."""
    return tuple(sorted(cluster.gpu_types, key=lambda t: (-type_speed(t, model), t)))


def fastest_part(
    job: JobView, cluster: Cluster, candidates: np.ndarray, masks: Mapping[str, np.ndarray]
) -> np.ndarray:
    """The part of ``candidates`` of the fastest GPU type for ``job`` that has any (``masks``: type -> mask).

    For policies that choose among nodes or racks themselves (a learned
    pointer, agents' rack options) and should still honour type-aware's
    first rule: the job goes to the fastest type that can take it.
    ``candidates`` itself on a cluster of one type, for a job that names its
    type, or when no type has a candidate.
    """
    if job.gpu_type or len(cluster.gpu_types) < 2:
        return candidates
    for gpu_type in fastest_first(cluster, known_model(job.model)):
        part = candidates & masks[gpu_type]
        if part.any():
            return part
    return candidates


def fastest_of(job: JobView, pool: GpuPool, nodes: np.ndarray) -> np.ndarray:
    """The part of the node mask ``nodes`` of the fastest GPU type for ``job`` that has any."""
    return fastest_part(job, pool.cluster, nodes, tables(pool.cluster).type_masks)


class TypeAware:
    name = "type-aware"
    # Reads the pool, the cluster and the running jobs, never the waiting queue.
    queue_blind = True
    # Places a job exactly when topology would (see the module docstring),
    # so it inherits topology's monotone verdict.
    monotone = True

    def __init__(self) -> None:
        self._within = Topology()

    def place(self, job: JobView, pool: GpuPool, view: ClusterView | None) -> Placement | None:
        cluster = pool.cluster
        if job.gpu_type or len(cluster.gpu_types) < 2:
            return self._within.place(job, pool, view)
        if job.gpus <= 0 or job.gpus > pool.total_free:
            return None
        for gpu_type in fastest_first(cluster, known_model(job.model)):
            found = self._within.place(replace(job, gpu_type=gpu_type), pool, view)
            if found is not None:
                return found
        return self._within.place(job, pool, view)
