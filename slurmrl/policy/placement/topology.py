"""Topology-aware placement: the free GPUs closest to each other.

The heuristic TopDRL-style schedulers compare against: try each locality
tier in order (one NVLink island, one node, one rack switch, fewest racks)
and take the first that can hold the job. Within a tier the candidate with
the least free capacity that still fits wins, so every choice leaves the
largest contiguous blocks intact for later jobs. Ring all-reduce runs at the
speed of its slowest hop, so the tier reached decides most of a distributed
job's communication cost.
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
    tables,
)
from slurmrl.policy.view import ClusterView, JobView

_BIG = np.iinfo(np.int64).max // 4


def _one_island(job: JobView, pool: GpuPool, mask: np.ndarray) -> Placement | None:
    """Best-fit NVLink island: fewest free GPUs in the island, then in the node."""
    tab = tables(pool.cluster)
    island_free = np.bincount(tab.global_island[pool.free], minlength=tab.island_node.size)
    nodes = tab.island_node
    ok = (island_free >= job.gpus) & mask[nodes]
    ok[-1] = False  # the padding bin
    cand = np.flatnonzero(ok)
    if cand.size == 0:
        return None
    width = pool.free.shape[1] + 1
    key = island_free[cand].astype(np.int64) * width + pool.free_count[nodes[cand]]
    best = int(cand[np.argmin(key)])
    node = int(nodes[best])
    gpus = (pool.free[node] & (tab.global_island[node] == best)).nonzero()[0][: job.gpus]
    return Placement.on_node(node, gpus.tolist())


def _one_rack(job: JobView, pool: GpuPool, mask: np.ndarray) -> list[tuple[int, int]] | None:
    """Fewest nodes inside one rack; ties go to the rack with the least eligible free capacity."""
    if int(pool.rack_free.max()) < job.gpus:
        return None  # no rack has that many free GPUs, eligible or not
    tab = tables(pool.cluster)
    free = np.append(np.where(mask, pool.free_count, 0), 0)[tab.rack_nodes]  # [rack, slot]
    cum = np.cumsum(-np.sort(-free, axis=1), axis=1)
    fits = cum[:, -1] >= job.gpus
    if not fits.any():
        return None
    needed = (cum < job.gpus).sum(axis=1)  # nodes beyond the first that the rack needs
    key = np.where(fits, needed, _BIG)
    best = int(np.lexsort((cum[:, -1], key))[0])
    nodes = tab.rack_nodes[best]
    return fewest_nodes(pool, nodes[np.append(mask, False)[nodes]], job.gpus)


def _fewest_racks(job: JobView, pool: GpuPool, mask: np.ndarray) -> list[tuple[int, int]] | None:
    nodes = np.flatnonzero(mask)
    if nodes.size == 0:
        return None
    n_racks = len(pool.cluster.racks)
    rack_free = np.bincount(
        pool.cluster.node_rack[nodes], weights=pool.free_count[nodes], minlength=n_racks
    ).astype(np.int64)
    order = np.argsort(-rack_free, kind="stable")
    cum = np.cumsum(rack_free[order])
    if cum[-1] < job.gpus:
        return None
    r = int(np.searchsorted(cum, job.gpus))
    chosen = np.zeros(n_racks, dtype=bool)
    chosen[order[:r]] = True
    remainder = job.gpus - (int(cum[r - 1]) if r else 0)
    rest = order[r:]
    ok = rest[rack_free[rest] >= remainder]
    chosen[ok[np.argmin(rack_free[ok])]] = True
    return fewest_nodes(pool, nodes[chosen[pool.cluster.node_rack[nodes]]], job.gpus)


def _one_node(job: JobView, pool: GpuPool, mask: np.ndarray) -> Placement | None:
    """One NVLink island if one holds the job, else the best-fit node."""
    tab = tables(pool.cluster)
    if 1 < job.gpus <= tab.max_island and tab.multi_island:
        found = _one_island(job, pool, mask)
        if found is not None:
            return found
    node = best_fit_node(pool, mask, job.gpus)
    return build(pool, [(node, job.gpus)], job) if node >= 0 else None


class Topology:
    name = "topology"
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
            # Skipped when no node has that many free GPUs, the usual case
            # for a blocked job's reservation on a busy cluster.
            if job.gpus == 1 or job.gpus <= int(pool.free_count.max()):
                found = _one_node(job, pool, mask)
                if found is not None:
                    return found
            if job.num_nodes == 1:
                return None
        shares = _one_rack(job, pool, mask) or _fewest_racks(job, pool, mask)
        if shares is None:
            return None
        if job.num_nodes is not None and len(shares) > job.num_nodes:
            shares = fewest_nodes(pool, np.flatnonzero(mask), job.gpus)
            if shares is None:
                return None
        return build(pool, shares, job)
