"""Free-GPU bookkeeping.

A boolean matrix ``free[node, gpu]`` (padded to the widest node) plus per-node
and per-rack free counts. Allocation and release touch only the nodes of one
placement, and the counts let placement heuristics find candidate nodes with
one vectorised comparison, so a scheduling pass stays cheap at thousands of
nodes.
"""

from __future__ import annotations

import numpy as np

from slurmrl.cluster.model import Cluster, Placement


class PlacementConflict(RuntimeError):
    """A placement asked for a GPU that is not free (a scheduler bug)."""


class GpuPool:
    __slots__ = ("cluster", "free", "free_count", "rack_free", "total_free", "partial_free")

    def __init__(self, cluster: Cluster, *, _copy_from: GpuPool | None = None) -> None:
        self.cluster = cluster
        if _copy_from is not None:
            self.free = _copy_from.free.copy()
            self.free_count = _copy_from.free_count.copy()
            self.rack_free = _copy_from.rack_free.copy()
            self.total_free = _copy_from.total_free
            self.partial_free = _copy_from.partial_free
            return
        n, width = len(cluster.nodes), cluster.max_gpus_per_node
        self.free = np.zeros((n, width), dtype=bool)
        for node in cluster.nodes:
            self.free[node.index, : node.gpus] = True
        self.free_count = cluster.node_gpus.astype(np.int32).copy()
        self.rack_free = np.bincount(
            cluster.node_rack, weights=cluster.node_gpus, minlength=len(cluster.racks)
        ).astype(np.int64)
        self.total_free = int(cluster.total_gpus)
        self.partial_free = 0  # free GPUs on nodes that are partly busy (see fragmentation)

    def copy(self) -> GpuPool:
        """A scratch copy for a scheduling pass that tries placements."""
        return GpuPool(self.cluster, _copy_from=self)

    def is_free(self, placement: Placement) -> bool:
        return all(bool(self.free[a.node, list(a.gpus)].all()) for a in placement.allocs)

    def allocate(self, placement: Placement) -> None:
        if not self.is_free(placement):
            raise PlacementConflict(f"placement {placement} overlaps GPUs already in use")
        rack_of = self.cluster.node_rack
        for a in placement.allocs:
            self.free[a.node, list(a.gpus)] = False
            k = len(a.gpus)
            self.partial_free -= self._partial(a.node)
            self.free_count[a.node] -= k
            self.partial_free += self._partial(a.node)
            self.rack_free[rack_of[a.node]] -= k
            self.total_free -= k

    def release(self, placement: Placement) -> None:
        rack_of = self.cluster.node_rack
        for a in placement.allocs:
            idx = list(a.gpus)
            if self.free[a.node, idx].any():
                raise PlacementConflict(f"releasing GPUs of {placement} that were already free")
            self.free[a.node, idx] = True
            k = len(a.gpus)
            self.partial_free -= self._partial(a.node)
            self.free_count[a.node] += k
            self.partial_free += self._partial(a.node)
            self.rack_free[rack_of[a.node]] += k
            self.total_free += k

    def _partial(self, node: int) -> int:
        free = int(self.free_count[node])
        return free if 0 < free < self.cluster.node_gpus[node] else 0

    def free_gpus(self, node: int) -> list[int]:
        return np.flatnonzero(self.free[node]).tolist()

    def readonly(self) -> GpuPool:
        """A copy whose arrays refuse writes: what a policy's view exposes."""
        ro = self.copy()
        for arr in (ro.free, ro.free_count, ro.rack_free):
            arr.setflags(write=False)
        return ro

    def fragmentation(self) -> float:
        """Share of free GPUs stranded on nodes that cannot host a full-node job.

        0 means every free GPU sits on an otherwise empty node; values near 1
        mean free capacity is scattered in slivers no multi-GPU job can use
        well (the notion used by FGD, ATC'23, simplified to whole GPUs).
        """
        if self.total_free == 0:
            return 0.0
        return self.partial_free / self.total_free
