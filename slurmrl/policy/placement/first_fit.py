"""First-fit placement: what Slurm's default node selection roughly does.

The first node (by index) with enough free GPUs gets a job that fits on one
node; otherwise the job takes free GPUs node by node in index order, which is
how a ``--gpus=N`` request ends up scattered on a busy stock-Slurm cluster.
"""

from __future__ import annotations

import numpy as np

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.placement.common import node_request
from slurmrl.policy.view import ClusterView, JobView


def eligible_nodes(job: JobView, pool: GpuPool) -> np.ndarray:
    """Boolean mask of nodes whose GPU type the job accepts and that have free GPUs."""
    mask = pool.free_count > 0
    if job.gpu_type:
        types = np.array([n.gpu_type == job.gpu_type for n in pool.cluster.nodes])
        mask &= types
    return mask


def take_in_order(job: JobView, pool: GpuPool, nodes: np.ndarray) -> Placement | None:
    """Free GPUs from ``nodes`` in the given order until the job has enough."""
    need = job.gpus
    pairs: list[tuple[int, list[int]]] = []
    for node in nodes.tolist():
        if need == 0:
            break
        free = pool.free_gpus(node)[:need]
        if free:
            pairs.append((node, free))
            need -= len(free)
    if need > 0:
        return None
    if job.num_nodes is not None and len(pairs) > job.num_nodes:
        return None
    return Placement.of(pairs)


class FirstFit:
    name = "first-fit"

    def place(self, job: JobView, pool: GpuPool, view: ClusterView) -> Placement | None:
        job = node_request(job, view)
        if job.gpus <= 0 or job.gpus > pool.total_free:
            return None
        mask = eligible_nodes(job, pool)
        if job.gpus <= pool.cluster.max_gpus_per_node and (job.num_nodes in (None, 1)):
            fits = np.flatnonzero(mask & (pool.free_count >= job.gpus))
            if fits.size:
                node = int(fits[0])
                return Placement.of([(node, pool.free_gpus(node)[: job.gpus])])
            if job.num_nodes == 1:
                return None
        return take_in_order(job, pool, np.flatnonzero(mask))
