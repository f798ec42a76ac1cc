"""Shared pieces of the placement heuristics.

Placements run once per job start attempt, thousands of times per replay, so
everything that depends only on the cluster (GPU-type masks, NVLink island
layout) is computed once per cluster and cached here; per-call work is a few
vectorised operations over the node arrays plus Python loops over the handful
of nodes a job actually gets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from slurmrl.cluster.model import Cluster, NodeAlloc, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.view import ClusterView, JobView


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
    # [rack, slot] node index, nodes in index order, padded with len(nodes)
    # (index a per-node array extended by one zero to read the padding as empty).
    rack_nodes: np.ndarray
    layout: tuple[int, ...]  # per node: which distinct NVLink island layout it has
    # Memo of pick_in_node: (layout, free row as bytes, GPUs asked) -> GPUs picked.
    picks: dict[tuple[int, bytes, int], tuple[int, ...]] = field(default_factory=dict)


_TABLES: dict[int, tuple[Cluster, ClusterTables]] = {}
_NO_FIT = np.iinfo(np.int32).max  # sort key of a node that cannot host the job
_MAX_PICKS = 100_000  # pick_in_node memo entries per cluster before it starts over


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
    types = {t: np.array([nd.gpu_type == t for nd in cluster.nodes], dtype=bool) for t in cluster.gpu_types}
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
    width_r = max((len(r.nodes) for r in cluster.racks), default=0)
    rack_nodes = np.full((len(cluster.racks), width_r), n, dtype=np.int64)
    for rack in cluster.racks:
        rack_nodes[rack.index, : len(rack.nodes)] = sorted(rack.nodes)
    for arr in (global_island, island_node, rack_nodes):
        arr.setflags(write=False)
    layouts: dict[bytes, int] = {}
    layout = tuple(layouts.setdefault(row.tobytes(), len(layouts)) for row in island_of)
    result = ClusterTables(
        island_of, n_isl > 1, flat, global_island, island_node, max_island, types, rack_nodes, layout
    )
    _TABLES[id(cluster)] = (cluster, result)
    return result


def eligible(job: JobView, pool: GpuPool) -> np.ndarray:
    """Nodes with a free GPU whose GPU type the job accepts and that the job may use."""
    mask = pool.free_count > 0
    if job.gpu_type:
        type_mask = tables(pool.cluster).type_masks.get(job.gpu_type)
        if type_mask is None:
            return np.zeros_like(mask)
        mask = mask & type_mask
    if job.allowed_nodes is not None:
        mask = mask & allowed_mask(job.allowed_nodes, mask.size)
    return mask


def could_hold(job: JobView, pool: GpuPool, now: float) -> bool:
    """Whether the nodes ``job`` may use hold its GPUs free: the ``k`` of its GPU type with most free GPUs.

    ``k`` is the node count it may span at ``now`` (every node when any
    will do). A condition every placement needs, since each honours the
    type and the node count: :class:`~slurmrl.policy.backfill.NodeBound`
    keeps it on counts while a reservation releases jobs.
    """
    need = job.gpus
    if need > pool.total_free:
        return False
    counts = pool.free_count
    if job.gpu_type:
        type_mask = tables(pool.cluster).type_masks.get(job.gpu_type)
        if type_mask is None:
            return False
        counts = counts[type_mask]
    k = job.max_nodes(now)
    if k is None or k >= counts.size:
        return int(counts.sum()) >= need
    if k == 1:
        return int(counts.max()) >= need
    return int(np.partition(counts, counts.size - k)[counts.size - k :].sum()) >= need


def allowed_mask(allowed: frozenset[int], size: int) -> np.ndarray:
    """Boolean node mask of a job's usable nodes (``JobView.allowed_nodes``)."""
    mask = np.zeros(size, dtype=bool)
    if allowed:
        mask[list(allowed)] = True
    return mask


def node_request(job: JobView, view: ClusterView | None) -> JobView:
    """``job`` as placement must honour it now: without its node count once it may spread."""
    if view is not None and view.now >= job.spread_at and job.num_nodes is not None:
        return replace(job, num_nodes=None, spread_at=math.inf)
    return job


def may_fit_one_node(job: JobView, cluster: Cluster) -> bool:
    return job.gpus <= cluster.max_gpus_per_node and job.num_nodes in (None, 1)


def pick_in_node(pool: GpuPool, node: int, need: int) -> tuple[int, ...]:
    """``need`` free GPUs of ``node``, in index order, spanning as few NVLink islands as possible.

    The smallest island that holds the whole request wins (best fit, so large
    islands stay whole for later jobs); otherwise islands are filled largest
    free first. A single GPU needs no NVLink, so it takes the first free one.
    The answer depends only on the node's island layout, which of its GPUs
    are free and ``need``, so it is memoised on those: every placement of a
    replay ends here once per node, and a node has few free patterns.
    """
    tab = tables(pool.cluster)
    row = pool.free[node]
    key = (tab.layout[node], row.tobytes(), need)
    found = tab.picks.get(key)
    if found is None:
        found = tuple(sorted(_pick(row, tab.island_of[node], tab.flat[node], need)))
        if len(tab.picks) >= _MAX_PICKS:
            tab.picks.clear()
        tab.picks[key] = found
    return found


def _pick(row: np.ndarray, island_of: np.ndarray, flat: bool, need: int) -> list[int]:
    if need == 1:
        return [int(row.argmax())]
    free = np.flatnonzero(row)
    if need >= free.size or flat:
        return free[:need].tolist()
    isl = island_of[free]
    per_island = np.bincount(isl)
    ids = np.flatnonzero(per_island)
    if ids.size == 1:
        return free[:need].tolist()
    counts = per_island[ids]
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
    key = np.where(mask & (counts >= need), counts, _NO_FIT)
    node = int(key.argmin())
    return node if key[node] != _NO_FIT else -1


def fewest_nodes(pool: GpuPool, nodes: np.ndarray, need: int) -> list[tuple[int, int]] | None:
    """(node, GPU count) pairs covering ``need`` from ``nodes`` with as few nodes as possible.

    Fullest-free nodes are taken first, and the last share goes to the node
    with the fewest free GPUs that still covers it, so the leftover slivers are
    as small as the node count allows. Ties go to the node listed first. Plain
    Python: ``nodes`` is a rack or a cluster's worth, and numpy's per-call cost
    would dominate at that size.
    """
    ids = nodes.tolist()
    free = pool.free_count[nodes].tolist()
    order = sorted(range(len(ids)), key=free.__getitem__, reverse=True)
    if sum(free) < need:
        return None
    shares: list[tuple[int, int]] = []
    left = need
    for k, i in enumerate(order):
        if free[i] >= left:
            # The last share: the smallest node, from here on, that still covers it.
            best = min(order[k:], key=lambda j: (free[j] < left, free[j]))
            shares.append((ids[best], left))
            return shares
        shares.append((ids[i], free[i]))
        left -= free[i]
    return None


def build(pool: GpuPool, shares: list[tuple[int, int]], job: JobView) -> Placement | None:
    """A placement from (node, count) shares, honouring the job's node-count request."""
    if job.num_nodes is not None and len(shares) > job.num_nodes:
        return None
    return Placement.made(tuple(NodeAlloc(node, pick_in_node(pool, node, count)) for node, count in shares))
