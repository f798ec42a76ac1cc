"""Best-fit consolidation: keep whole nodes free for the jobs that need them.

A job that fits on one node goes to the eligible node with the fewest free
GPUs that still hold it; a larger job takes the fewest nodes possible. Both
leave the biggest free blocks untouched, which is what lets later 8-GPU jobs
start without waiting for a node to drain.
"""

from __future__ import annotations

import numpy as np

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.placement.common import (
    best_fit_node,
    build,
    eligible,
    fewest_nodes,
    may_fit_one_node,
    node_request,
)
from slurmrl.policy.view import ClusterView, JobView


class Consolidate:
    name = "consolidate"
    # Reads the pool, the cluster and the running jobs, never the waiting queue.
    queue_blind = True
    # A job placed on some pool is placed on any pool with at least as many
    # free GPUs on every node: the preemptive pass relies on it to skip jobs
    # that an earlier, smaller failure shows cannot start.
    monotone = True

    def place(self, job: JobView, pool: GpuPool, view: ClusterView | None) -> Placement | None:
        job = node_request(job, view)
        if job.gpus <= 0 or job.gpus > pool.total_free:
            return None
        mask = eligible(job, pool)
        if may_fit_one_node(job, pool.cluster):
            node = best_fit_node(pool, mask, job.gpus)
            if node >= 0:
                return build(pool, [(node, job.gpus)], job)
            if job.num_nodes == 1:
                return None
        shares = fewest_nodes(pool, np.flatnonzero(mask), job.gpus)
        return build(pool, shares, job) if shares is not None else None
