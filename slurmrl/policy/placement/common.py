"""Shared pieces of the placement heuristics.

Placements run once per job start attempt, thousands of times per replay, so
everything that depends only on the cluster (GPU-type masks, NVLink island
layout) is computed once per cluster and cached here; per-call work is a few
vectorised operations over the node arrays plus Python loops over the handful
of nodes a job actually gets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.view import JobView


@dataclass(frozen=True)
class ClusterTables:
    """Per-cluster lookup arrays the heuristics need (built once, read-only)."""

    island_of: np.ndarray  # [node, gpu] island id, -1 on padding
    multi_island: bool  # some node has more than one NVLink island
    flat: tuple[bool, ...]  # per node: one island or all-distinct ones, so any free GPUs are as good
    global_island: np.ndarray  # [node, gpu] cluster-wide island number; padding -> a spare bin
    island_node: np.ndarray  # node of each cluster-wide island (spare bin -> node 0)
    max_island: int  # GPUs in the largest island
    type_masks: dict[str, np.ndarray]


_TABLES: dict[int, tuple[Cluster, ClusterTables]] = {}


def tables(cluster: Cluster) -> ClusterTables:
    hit = _TABLES.get(id(cluster))
    if hit is not None and hit[0] is cluster:
        return hit[1]
    n, width = len(cluster.nodes), max(cluster.max_gpus_per_node, 1)
    island_of = np.full((n, width), -1, dtype=np.int32)
    for node in cluster.nodes:
        # Renumber island ids densely per node so they index the one-hot axis.
        dense = {v: i for i, v in enumerate(dict.fromkeys(node.islands))}
        island_of[node.index, : node.gpus] = [dense[v] for v in node.islands]
    n_isl = int(island_of.max()) + 1 if n else 1
    types = {
        t: np.array([nd.gpu_type == t for nd in cluster.nodes], dtype=bool) for t in cluster.gpu_types
    }
    for arr in (island_of, *types.values()):
        arr.setflags(write=False)
    flat = tuple(len(set(nd.islands)) in (1, nd.gpus) for nd in cluster.nodes)
    per_node = island_of.max(axis=1) + 1 if n else np.zeros(0, dtype=np.int32)
    offset = np.concatenate([[0], np.cumsum(per_node)[:-1]]).astype(np.int64) if n else per_node
    total = int(per_node.sum())
    global_island = np.where(island_of >= 0, offset[:, None] + island_of, total)
    island_node = np.append(np.repeat(np.arange(n), per_node), 0)
    sizes = np.bincount(global_island.ravel(), minlength=total + 1)[:total]
    max_island = int(sizes.max()) if total else 0
    for arr in (global_island, island_node):
        arr.setflags(write=False)
    result = ClusterTables(
        island_of, n_isl > 1, flat, global_island, island_node, max_island, types
    )
    _TABLES[id(cluster)] = (cluster, result)
    return result


def eligible(job: JobView, pool: GpuPool) -> np.ndarray:
    """Nodes with a free GPU whose GPU type the job accepts."""
    mask = pool.free_count > 0
    if job.gpu_type:
        type_mask = tables(pool.cluster).type_masks.get(job.gpu_type)
        if type_mask is None:
            return np.zeros_like(mask)
        mask = mask & type_mask
    return mask


def may_fit_one_node(job: JobView, cluster: Cluster) -> bool:
    return job.gpus <= cluster.max_gpus_per_node and job.num_nodes in (None, 1)


def pick_in_node(pool: GpuPool, node: int, need: int) -> list[int]:
    """``need`` free GPUs of ``node``, spanning as few NVLink islands as possible.

    The smallest island that holds the whole request wins (best fit, so large
    islands stay whole for later jobs); otherwise islands are filled largest
    free first. A single GPU needs no NVLink, so it takes the first free one.
    """
    free = np.flatnonzero(pool.free[node])
    tab = tables(pool.cluster)
    if need >= free.size or need == 1 or tab.flat[node]:
        return free[:need].tolist()
    isl = tab.island_of[node, free]
    ids, counts = np.unique(isl, return_counts=True)
    if ids.size == 1:
        return free[:need].tolist()
    fits = counts >= need
    if fits.any():
        best = ids[fits][np.argmin(counts[fits])]
        return free[isl == best][:need].tolist()
    chosen: list[int] = []
    for i in np.argsort(-counts, kind="stable").tolist():
        take = free[isl == ids[i]][: need - len(chosen)].tolist()
        chosen.extend(take)
        if len(chosen) == need:
            break
    return chosen


def best_fit_node(pool: GpuPool, mask: np.ndarray, need: int) -> int:
    """Index of the eligible node with the fewest free GPUs that still fit ``need``; -1 if none."""
    counts = pool.free_count
    cand = np.flatnonzero(mask & (counts >= need))
    if cand.size == 0:
        return -1
    return int(cand[np.argmin(counts[cand])])


def fewest_nodes(pool: GpuPool, nodes: np.ndarray, need: int) -> list[tuple[int, int]] | None:
    """(node, GPU count) pairs covering ``need`` from ``nodes`` with as few nodes as possible.

    Fullest-free nodes are taken first, and the last share goes to the node
    with the fewest free GPUs that still covers it, so the leftover slivers are
    as small as the node count allows.
    """
    if nodes.size == 0:
        return None
    free = pool.free_count[nodes]
    order = np.argsort(-free, kind="stable")
    sorted_free = free[order]
    cum = np.cumsum(sorted_free)
    if cum[-1] < need:
        return None
    k = int(np.searchsorted(cum, need))  # nodes[order[:k+1]] cover need
    head = [(int(nodes[i]), int(free[i])) for i in order[:k].tolist()]
    remainder = need - (int(cum[k - 1]) if k else 0)
    rest = order[k:]
    rest_free = free[rest]
    ok = rest_free >= remainder
    last = int(rest[ok][np.argmin(rest_free[ok])])
    head.append((int(nodes[last]), remainder))
    return head


def build(pool: GpuPool, shares: list[tuple[int, int]], job: JobView) -> Placement | None:
    """A placement from (node, count) shares, honouring the job's node-count request."""
    if job.num_nodes is not None and len(shares) > job.num_nodes:
        return None
    return Placement.of((node, pick_in_node(pool, node, count)) for node, count in shares)
