"""First-fit placement: what Slurm's default node selection roughly does.

The first node (by index) with enough free GPUs gets a job that fits on one
node; otherwise the job takes free GPUs node by node in index order, which is
how a ``--gpus=N`` request ends up scattered on a busy stock-Slurm cluster.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.placement.common import allowed_mask, node_request, tables
from slurmrl.policy.view import ClusterView, JobView


def eligible_nodes(job: JobView, pool: GpuPool) -> np.ndarray:
    """Boolean mask of nodes whose GPU type the job accepts, that it may use and that have free GPUs."""
    mask = pool.free_count > 0
    if job.gpu_type:
        types = tables(pool.cluster).type_masks.get(job.gpu_type)
        mask &= types if types is not None else False
    if job.allowed_nodes is not None:
        mask &= allowed_mask(job.allowed_nodes, mask.size)
    return mask


def take_in_order(job: JobView, pool: GpuPool, nodes: np.ndarray) -> Placement | None:
    """Free GPUs from ``nodes`` in the given order until the job has enough.

    The free counts decide whether that works, and over how many nodes,
    before any GPU is picked: a blocked job costs no per-node scan.
    """
    need = job.gpus
    ids = nodes.tolist()
    counts = pool.free_count[nodes].tolist()
    covered, used = 0, 0
    for count in counts:
        if count:
            covered += count
            used += 1
            if covered >= need:
                break
    if covered < need or (job.num_nodes is not None and used > job.num_nodes):
        return None
    pairs: list[tuple[int, list[int]]] = []
    for node, count in zip(ids, counts, strict=True):
        if need == 0:
            break
        if count:
            free = pool.free_gpus(node)[:need]
            pairs.append((node, free))
            need -= len(free)
    return Placement.of(pairs)


class FirstFit:
    name = "first-fit"
    # Reads the pool, the cluster and the running jobs, never the waiting queue.
    queue_blind = True

    def bound(self, job: JobView, pool: GpuPool, now: float) -> FirstFitBound:
        """Whether :meth:`place` could place ``job`` as GPUs are released (backfill's reservation)."""
        return FirstFitBound(job, pool, now)

    def whole_nodes_at(
        self, job: JobView, pool: GpuPool, grid: np.ndarray, now: float
    ) -> tuple[float, np.ndarray] | None:
        """When and on which nodes :meth:`place` could first place a job that needs ``k`` whole nodes.

        ``grid`` holds each busy GPU's release time. First fit gives such a
        job the first ``k`` nodes with a free GPU, so it fits once those are
        all wholly free: worked out from two times per node (its first
        release, when it joins the nodes with a free GPU, and its last, when
        it is whole), at each time a node becomes whole, where the scan of a
        reservation would release job after job. The nodes are those ``k``,
        whose GPUs it would take. ``(inf, no nodes)``: never; None: not such
        a job (another GPU count, a type or a node list), or placeable now.
        """
        k = job.max_nodes(now)
        cluster = pool.cluster
        nodes, width = grid.shape
        if (
            k is None
            or k < 2
            or job.gpus != k * width
            or job.gpu_type
            or job.allowed_nodes is not None
            or int(cluster.node_gpus.min()) != width
        ):
            return None
        # Array methods rather than np.sort, np.unique, np.cumsum and np.flatnonzero: on a
        # node grid this small their Python-level dispatch costs as much as the work.
        per_node = grid.copy()
        per_node.sort(axis=1)
        free = pool.free_count
        busy = width - free
        joins = np.where(free > 0, -np.inf, per_node[:, 0])
        whole = np.where(busy > 0, per_node[np.arange(nodes), np.maximum(busy - 1, 0)], -np.inf)
        times = whole.copy()  # sorted; a repeated time repeats a row, which changes no first hit
        times.sort()
        among = joins[None, :] <= times[:, None]
        first = among & (among.cumsum(axis=1) <= k)
        fits = (first.sum(axis=1) == k) & ~(first & (whole[None, :] > times[:, None])).any(axis=1)
        hits = fits.nonzero()[0]
        if not hits.size:
            return math.inf, hits
        at = float(times[hits[0]])
        return None if at == -math.inf else (at, first[hits[0]].nonzero()[0])

    def place(self, job: JobView, pool: GpuPool, view: ClusterView) -> Placement | None:
        job = node_request(job, view)
        gpus = job.gpus
        if gpus <= 0 or gpus > pool.total_free:
            return None
        mask = None
        if gpus <= pool.cluster.max_gpus_per_node and (job.num_nodes in (None, 1)):
            # Nodes with room for the job have free GPUs: the eligibility mask
            # matters only under a GPU type or a node list.
            fits = pool.free_count >= gpus
            if job.gpu_type or job.allowed_nodes is not None:
                mask = eligible_nodes(job, pool)
                fits &= mask
            node = int(fits.argmax())  # the first node that fits, if any does
            if fits[node]:
                return Placement.on_node(node, pool.free_gpus(node)[:gpus])
            if job.num_nodes == 1:
                return None
        if mask is None:
            mask = eligible_nodes(job, pool)
        return take_in_order(job, pool, mask.nonzero()[0])


class FirstFitBound:
    """:meth:`FirstFit.place`'s verdict from free counts alone, kept as GPUs are released.

    First fit places a job that fits one node on any node with room and
    otherwise takes eligible nodes in index order, so it succeeds exactly
    when the first ``k`` eligible nodes with free GPUs (``k`` = the nodes the
    job may span) hold enough. Unlike the generic bound this one is not
    monotone: freeing a GPU on an early node can push a fuller node out of
    the first ``k``.
    """

    __slots__ = ("_need", "_k", "_one_node", "_counts", "_eligible", "_nonzero", "_max", "_total", "_answer")

    def __init__(self, job: JobView, pool: GpuPool, now: float) -> None:
        cluster = pool.cluster
        self._need = job.gpus
        self._k = job.max_nodes(now)
        self._one_node = job.gpus <= cluster.max_gpus_per_node and self._k in (None, 1)
        self._counts = pool.free_count.tolist()
        if job.gpu_type:
            self._eligible = [n.gpu_type == job.gpu_type for n in cluster.nodes]
        else:
            self._eligible = [True] * len(cluster.nodes)
        if job.allowed_nodes is not None:
            self._eligible = [ok and i in job.allowed_nodes for i, ok in enumerate(self._eligible)]
        live = [c for c, ok in zip(self._counts, self._eligible, strict=True) if ok]
        self._nonzero = [
            i for i, (c, ok) in enumerate(zip(self._counts, self._eligible, strict=True)) if ok and c
        ]
        self._max = max(live, default=0)
        self._total = sum(live)
        self._answer: bool | None = None  # None: to be worked out again

    def release(self, placement: Placement) -> int:
        """Count ``placement``'s GPUs as free; returns how many."""
        counts, eligible = self._counts, self._eligible
        total = 0
        for node, gpus in placement.allocs:
            k = len(gpus)
            total += k
            before = counts[node]
            after = counts[node] = before + k
            if eligible[node]:
                self._total += k
                if after > self._max:
                    self._max = after
                nonzero = self._nonzero
                if (
                    self._one_node
                    or self._k is None
                    or len(nonzero) < self._k
                    or node <= nonzero[self._k - 1]
                ):
                    self._answer = None  # the first k nodes with free GPUs changed
                if not before:
                    bisect.insort(nonzero, node)
        return total

    def possible(self) -> bool:
        if self._answer is None:
            self._answer = self._work_out()
        return self._answer

    def _work_out(self) -> bool:
        need, k = self._need, self._k
        if self._one_node:
            if self._max >= need:
                return True
            if k == 1:
                return False
        if k is None:
            return self._total >= need
        counts = self._counts
        return sum(counts[node] for node in self._nonzero[:k]) >= need
