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

    @classmethod
    def of_free(cls, cluster: Cluster, free: np.ndarray) -> GpuPool:
        """A pool whose free GPUs are those ``free`` marks (the array is taken, not copied).

        What-if pools for a later time (backfill's candidate start times)
        are built this way, without copying a pool and masking it.
        """
        pool = cls.__new__(cls)
        pool.cluster = cluster
        pool.free = free
        pool._recount()
        return pool

    def copy(self) -> GpuPool:
        """A scratch copy for a scheduling pass that tries placements."""
        return GpuPool(self.cluster, _copy_from=self)

    def is_free(self, placement: Placement) -> bool:
        free = self.free
        for a in placement.allocs:
            row = free[a.node]
            for g in a.gpus:
                if not row[g]:
                    return False
        return True

    def allocate(self, placement: Placement) -> None:
        if not self.is_free(placement):
            raise PlacementConflict(f"placement {placement} overlaps GPUs already in use")
        self._move(placement, -1)

    def release(self, placement: Placement) -> None:
        free = self.free
        for a in placement.allocs:
            row = free[a.node]
            for g in a.gpus:
                if row[g]:
                    raise PlacementConflict(f"releasing GPUs of {placement} that were already free")
        self._move(placement, +1)

    def _move(self, placement: Placement, sign: int) -> None:
        """Flip a placement's GPUs (sign -1: taken, +1: given back) and fix the counts.

        Scalar numpy indexing in a loop beats fancy indexing for the one to
        eight GPUs a node allocation holds.
        """
        rack_of = self.cluster.rack_of
        caps = self.cluster.gpus_of
        free, counts, rack_free = self.free, self.free_count, self.rack_free
        value = sign > 0
        partial = self.partial_free
        for a in placement.allocs:
            row = free[a.node]
            for g in a.gpus:
                row[g] = value
            k = len(a.gpus) * sign
            before = int(counts[a.node])
            after = before + k
            counts[a.node] = after
            cap = caps[a.node]
            partial += (after if 0 < after < cap else 0) - (before if 0 < before < cap else 0)
            rack_free[rack_of[a.node]] += k
            self.total_free += k
        self.partial_free = partial

    def release_many(self, placements: list[Placement]) -> None:
        """Release several placements at once, recounting with numpy.

        Cheaper than one :meth:`release` each when many jobs end together,
        as when backfill projects the cluster forward to a reservation.
        """
        if not placements:
            return
        nodes: list[int] = []
        gpus: list[int] = []
        for p in placements:
            for a in p.allocs:
                nodes.extend([a.node] * len(a.gpus))
                gpus.extend(a.gpus)
        if self.free[nodes, gpus].any():
            raise PlacementConflict("releasing GPUs that were already free")
        self.free[nodes, gpus] = True
        self._recount()

    def release_mask(self, mask: np.ndarray) -> None:
        """Release the GPUs of a boolean ``[node, gpu]`` mask, all of which must be busy.

        What backfill's reservation uses to give back, in one step, every
        job that ends before the first time worth a placement.
        """
        if not mask.any():
            return
        if (self.free & mask).any():
            raise PlacementConflict("releasing GPUs that were already free")
        np.logical_or(self.free, mask, out=self.free)
        self._recount()

    def withhold(self, mask: np.ndarray) -> None:
        """Mark the GPUs of a boolean ``[node, gpu]`` mask busy, whether free or not.

        How backfill keeps the head job's reserved GPUs away from later jobs:
        one masked write and a recount instead of a placement per node.
        """
        np.logical_and(self.free, ~mask, out=self.free)
        self._recount()

    def _recount(self) -> None:
        self.free_count = self.free.sum(axis=1, dtype=np.int32)
        self.rack_free = np.bincount(
            self.cluster.node_rack, weights=self.free_count, minlength=len(self.cluster.racks)
        ).astype(np.int64)
        self.total_free = int(self.free_count.sum())
        partial = (self.free_count > 0) & (self.free_count < self.cluster.node_gpus)
        self.partial_free = int(self.free_count[partial].sum())

    def free_gpus(self, node: int) -> list[int]:
        # The row's own nonzero(): np.flatnonzero adds a ravel and a wrapper call, as much as the work.
        return self.free[node].nonzero()[0].tolist()

    def readonly(self) -> GpuPool:
        """This pool's state behind arrays that refuse writes: what a policy's view exposes.

        The arrays are views of this pool's, not copies (a copy per decision
        was a measurable share of a replay), so the result describes the pool
        until its owner next changes it: a policy reads it during one decision
        and calls :meth:`copy` for anything it keeps or edits.
        """
        ro = GpuPool.__new__(GpuPool)
        ro.cluster = self.cluster
        ro.free, ro.free_count, ro.rack_free = (
            a.view() for a in (self.free, self.free_count, self.rack_free)
        )
        for arr in (ro.free, ro.free_count, ro.rack_free):
            arr.setflags(write=False)
        ro.total_free, ro.partial_free = self.total_free, self.partial_free
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
