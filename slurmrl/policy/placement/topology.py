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
    gpus = np.flatnonzero(pool.free[node] & (tab.global_island[node] == best))[: job.gpus]
    return Placement.of([(node, gpus.tolist())])


def _one_rack(job: JobView, pool: GpuPool, mask: np.ndarray) -> list[tuple[int, int]] | None:
    """Fewest nodes inside one rack; ties go to the rack with the least eligible free capacity."""
    nodes = np.flatnonzero(mask)
    if nodes.size == 0:
        return None
    racks = pool.cluster.node_rack[nodes]
    free = pool.free_count[nodes].astype(np.int64)
    order = np.lexsort((-free, racks))
    racks, free, nodes = racks[order], free[order], nodes[order]
    starts = np.flatnonzero(np.r_[True, racks[1:] != racks[:-1]])
    cum = np.cumsum(free)
    base = np.r_[0, cum[starts[1:] - 1]] if starts.size > 1 else np.zeros(1, dtype=np.int64)
    seg = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, nodes.size]))
    within = cum - base[seg]
    pos = np.arange(nodes.size) - starts[seg]
    k = np.minimum.reduceat(np.where(within >= job.gpus, pos, _BIG), starts)
    if int(k.min()) == _BIG:
        return None
    rack_total = np.add.reduceat(free, starts)
    best = int(np.lexsort((rack_total, k))[0])
    lo = int(starts[best])
    hi = int(starts[best + 1]) if best + 1 < starts.size else nodes.size
    return fewest_nodes(pool, np.sort(nodes[lo:hi]), job.gpus)


def _fewest_racks(job: JobView, pool: GpuPool, mask: np.ndarray) -> list[tuple[int, int]] | None:
    nodes = np.flatnonzero(mask)
    if nodes.size == 0:
        return None
    rack_free = np.bincount(
        pool.cluster.node_rack[nodes], weights=pool.free_count[nodes], minlength=len(pool.cluster.racks)
    ).astype(np.int64)
    order = np.argsort(-rack_free, kind="stable")
    cum = np.cumsum(rack_free[order])
    if cum[-1] < job.gpus:
        return None
    r = int(np.searchsorted(cum, job.gpus))
    chosen = order[:r].tolist()
    remainder = job.gpus - (int(cum[r - 1]) if r else 0)
    rest = order[r:]
    ok = rest[rack_free[rest] >= remainder]
    chosen.append(int(ok[np.argmin(rack_free[ok])]))
    in_racks = np.isin(pool.cluster.node_rack[nodes], chosen)
    return fewest_nodes(pool, nodes[in_racks], job.gpus)


class Topology:
    name = "topology"

    def place(self, job: JobView, pool: GpuPool, view: ClusterView | None) -> Placement | None:
        if job.gpus <= 0 or job.gpus > pool.total_free:
            return None
        mask = eligible(job, pool)
        if may_fit_one_node(job, pool.cluster):
            tab = tables(pool.cluster)
            if 1 < job.gpus <= tab.max_island and tab.multi_island:
                found = _one_island(job, pool, mask)
                if found is not None:
                    return found
            node = best_fit_node(pool, mask, job.gpus)
            if node >= 0:
                return build(pool, [(node, job.gpus)], job)
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
