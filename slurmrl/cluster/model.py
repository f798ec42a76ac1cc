"""Immutable description of a GPU cluster.

The model is the common ground between the simulator and the daemon: a policy
reasons about the same ``Cluster`` whether it was built from a TOML spec, a
trace's machine list or a live ``slurm.conf``/``gres.conf``/``topology.conf``.
Nodes and racks are addressed by dense integer indices so that the hot paths
(free-GPU bookkeeping, placement search) can use numpy arrays; names are kept
for the daemon, which talks to Slurm in names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from slurmrl.slurm.scheduler_conf import SchedulerSettings


class LinkTier(IntEnum):
    """How two GPUs talk, nearest first; comparisons follow distance."""

    NVLINK = 0
    PCIE = 1
    SWITCH = 2  # different nodes under one rack (top-of-rack) switch
    CROSS_RACK = 3  # different racks, through the core/spine


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    index: int
    rack: int
    gpus: int
    gpu_type: str
    # NVLink island id of each GPU: GPUs with the same id are NVLink-connected,
    # others go through PCIe. One island models an all-to-all NVSwitch node,
    # all-distinct ids a PCIe-only node.
    islands: tuple[int, ...]
    cpus: int = 0
    memory_mb: int = 0

    def link(self, a: int, b: int) -> LinkTier:
        if self.islands[a] == self.islands[b]:
            return LinkTier.NVLINK
        return LinkTier.PCIE


@dataclass(frozen=True, slots=True)
class Rack:
    name: str
    index: int
    nodes: tuple[int, ...]


class NodeAlloc(NamedTuple):
    """GPUs taken on one node, by node index and local GPU indices.

    A named tuple rather than a frozen dataclass: a replay builds one per
    node of every placement tried, and hashes it whenever a placement keys a
    cache, and the tuple's C-level constructor and hash cost a fraction of
    the generated Python ones.
    """

    node: int
    gpus: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a job's GPUs are: one :class:`NodeAlloc` per node used."""

    allocs: tuple[NodeAlloc, ...]
    # Placements key the performance model's caches on every co-location
    # change, and the simulator reads their nodes at every start and stop;
    # both are computed once here.
    _hash: int = field(init=False, repr=False, compare=False)
    nodes: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(self.allocs))
        object.__setattr__(self, "nodes", tuple(a.node for a in self.allocs))

    def __hash__(self) -> int:
        return self._hash

    @property
    def num_gpus(self) -> int:
        return sum(len(a.gpus) for a in self.allocs)

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, Iterable[int]]]) -> Placement:
        return cls.made(tuple(NodeAlloc(n, tuple(sorted(g))) for n, g in pairs))

    @classmethod
    def on_node(cls, node: int, gpus: Sequence[int]) -> Placement:
        """``Placement.of([(node, gpus)])`` for GPUs already in ascending order: most placements are one node's."""
        return cls._with_fields((NodeAlloc(node, tuple(gpus)),), (node,))

    @classmethod
    def made(cls, allocs: tuple[NodeAlloc, ...]) -> Placement:
        """``Placement(allocs)`` without the generated ``__init__`` and ``__post_init__`` calls.

        Placements are made for every placement tried (hundreds of thousands
        per replay); the same fields are set, so the result is equal to and
        hashes like ``Placement(allocs)``.
        """
        return cls._with_fields(allocs, tuple(a.node for a in allocs))

    @classmethod
    def _with_fields(cls, allocs: tuple[NodeAlloc, ...], nodes: tuple[int, ...]) -> Placement:
        placement = _new(cls)
        _set(placement, "allocs", allocs)
        _set(placement, "_hash", hash(allocs))
        _set(placement, "nodes", nodes)
        return placement


_new = object.__new__
_set = object.__setattr__


@dataclass(frozen=True)
class Cluster:
    name: str
    racks: tuple[Rack, ...]
    nodes: tuple[Node, ...]
    # The site's Slurm scheduler settings when the cluster was read from its
    # slurm.conf or from a spec written from one; the simulator's ``slurm``
    # policy runs with them. Not part of the hardware: equality ignores it.
    scheduler: SchedulerSettings | None = field(default=None, compare=False, repr=False)
    # Derived lookup tables, filled in __post_init__.
    node_index: dict[str, int] = field(init=False, repr=False, compare=False)
    node_rack: np.ndarray = field(init=False, repr=False, compare=False)
    node_gpus: np.ndarray = field(init=False, repr=False, compare=False)
    total_gpus: int = field(init=False, repr=False, compare=False)
    max_gpus_per_node: int = field(init=False, repr=False, compare=False)
    gpu_types: tuple[str, ...] = field(init=False, repr=False, compare=False)
    # node_rack and node_gpus again as plain ints, for the one-node-at-a-time
    # lookups of hot loops, where indexing a numpy array costs far more.
    rack_of: tuple[int, ...] = field(init=False, repr=False, compare=False)
    gpus_of: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for i, node in enumerate(self.nodes):
            if node.index != i:
                raise ValueError(f"node {node.name} has index {node.index}, expected {i}")
            if len(node.islands) != node.gpus:
                raise ValueError(f"node {node.name}: {len(node.islands)} island ids for {node.gpus} GPUs")
        index = {n.name: n.index for n in self.nodes}
        if len(index) != len(self.nodes):
            raise ValueError("node names must be unique")
        node_rack = np.array([n.rack for n in self.nodes], dtype=np.int32)
        node_gpus = np.array([n.gpus for n in self.nodes], dtype=np.int32)
        node_rack.setflags(write=False)
        node_gpus.setflags(write=False)
        object.__setattr__(self, "node_index", index)
        object.__setattr__(self, "node_rack", node_rack)
        object.__setattr__(self, "node_gpus", node_gpus)
        object.__setattr__(self, "total_gpus", int(node_gpus.sum()))
        object.__setattr__(self, "max_gpus_per_node", int(node_gpus.max()) if len(self.nodes) else 0)
        object.__setattr__(self, "gpu_types", tuple(sorted({n.gpu_type for n in self.nodes})))
        object.__setattr__(self, "rack_of", tuple(n.rack for n in self.nodes))
        object.__setattr__(self, "gpus_of", tuple(n.gpus for n in self.nodes))

    def __hash__(self) -> int:
        return hash((self.name, self.racks, self.nodes))

    def node(self, name: str) -> Node:
        return self.nodes[self.node_index[name]]

    def link(self, node_a: int, gpu_a: int, node_b: int, gpu_b: int) -> LinkTier:
        """Link tier between two GPUs anywhere in the cluster."""
        if node_a == node_b:
            return self.nodes[node_a].link(gpu_a, gpu_b)
        if self.nodes[node_a].rack == self.nodes[node_b].rack:
            return LinkTier.SWITCH
        return LinkTier.CROSS_RACK

    def worst_link(self, placement: Placement) -> LinkTier:
        """The slowest link a collective over ``placement`` has to cross.

        Ring all-reduce runs at the speed of its slowest hop, so this single
        tier is what the performance model and the locality metric need.
        """
        allocs = placement.allocs
        if len(allocs) > 1:
            racks = {self.nodes[a.node].rack for a in allocs}
            return LinkTier.SWITCH if len(racks) == 1 else LinkTier.CROSS_RACK
        if not allocs or len(allocs[0].gpus) <= 1:
            return LinkTier.NVLINK
        node = self.nodes[allocs[0].node]
        islands = {node.islands[g] for g in allocs[0].gpus}
        return LinkTier.NVLINK if len(islands) == 1 else LinkTier.PCIE

    def describe(self) -> str:
        types = ",".join(self.gpu_types)
        return (
            f"{self.name}: {len(self.racks)} racks, {len(self.nodes)} nodes, {self.total_gpus} GPUs ({types})"
        )


def islands_for(intra: str, gpus: int) -> tuple[int, ...]:
    """Island ids for an intra-node link layout named as in cluster specs.

    ``nvswitch``: one all-to-all island; ``pcie``: no NVLink; ``nvlink:K``:
    islands of K consecutive GPUs (K=4 models the two quads of a DGX-1/V100
    board, where cross-quad traffic is much slower).
    """
    text = intra.strip().lower()
    if text == "nvswitch":
        return (0,) * gpus
    if text == "pcie":
        return tuple(range(gpus))
    if text.startswith("nvlink:"):
        try:
            size = int(text.split(":", 1)[1])
        except ValueError:
            raise ValueError(f"bad island size in '{intra}'; use nvlink:K with an integer K") from None
        if size < 1:
            raise ValueError(f"island size in '{intra}' must be at least 1")
        return tuple(g // size for g in range(gpus))
    raise ValueError(f"unknown intra-node link layout '{intra}'; use nvswitch, pcie or nvlink:K")
