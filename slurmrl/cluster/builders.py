"""Shared pieces for turning any cluster description into a :class:`Cluster`.

Every source (shorthand, TOML, trace machine lists, Slurm configs) ends in
the same place: named racks holding named nodes. Building that once here keeps
index bookkeeping, default NVLink layouts and rack synthesis identical no
matter where a cluster came from, so two descriptions of the same hardware
compare equal.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from slurmrl.cluster.model import Cluster, Node, Rack, islands_for

# Traces that give no rack layout get racks of this many machines. No trace
# publishes rack sizes; 16 is an assumption (a 42U rack of 2U GPU servers holds
# 16-20, leaving room for switches and power), kept fixed so runs are comparable.
SYNTH_RACK_SIZE = 16

# What a cluster description may ask for: far above any site (the largest
# Slurm clusters run some tens of thousands of nodes; the densest boards hold
# 16 GPUs, 56 MIG slices on 8 A100s), and small enough that a typo such as
# 1000x1000x8 is an error at once rather than minutes of building nodes.
MAX_NODES = 100_000
MAX_GPUS_PER_NODE = 256


def size_problem(nodes: int, gpus_per_node: int) -> str | None:
    """Why a cluster of ``nodes`` nodes with up to ``gpus_per_node`` GPUs each is refused (None: it is not)."""
    if nodes > MAX_NODES:
        return f"{nodes:,} nodes is more than the {MAX_NODES:,} a cluster may have"
    if gpus_per_node > MAX_GPUS_PER_NODE:
        return f"{gpus_per_node:,} GPUs on a node is more than the {MAX_GPUS_PER_NODE} a node may have"
    return None


# GPU families whose multi-GPU boards are NVSwitch all-to-all (NVIDIA HGX/DGX
# A100, H100/H800/H200, B200 baseboards; A800 is the export A100 variant).
NVSWITCH_FAMILIES = ("a100", "a800", "h100", "h800", "h200", "h20", "b100", "b200", "gb200")


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node before it has indices: what every builder produces."""

    name: str
    gpus: int
    gpu_type: str
    islands: tuple[int, ...]
    cpus: int = 0
    memory_mb: int = 0


def default_intra(gpu_type: str, gpus: int) -> str:
    """The intra-node link layout assumed when a source does not say.

    * nodes with at most 2 GPUs, and every family not listed below: ``pcie``
      (K80, P100/P40, T4, consumer cards and unknown models are commonly
      PCIe-only; 2-GPU NVLink bridges exist but are the exception);
    * A100/H100-class with 4+ GPUs: ``nvswitch`` (HGX baseboards);
    * V100 (any memory size) with 8 GPUs: ``nvlink:4``, the DGX-1 board read
      as two NVLink quads with slower traffic between them.
    """
    family = gpu_type.strip().lower()
    if gpus <= 2:
        return "pcie"
    if family.startswith(NVSWITCH_FAMILIES):
        return "nvswitch"
    if family.startswith("v100") and gpus == 8:
        return "nvlink:4"
    return "pcie"


def default_islands(gpu_type: str, gpus: int) -> tuple[int, ...]:
    return islands_for(default_intra(gpu_type, gpus), gpus)


def normalize_islands(islands: Sequence[int]) -> tuple[int, ...]:
    """Renumber island ids by first appearance, so equal layouts compare equal."""
    seen: dict[int, int] = {}
    return tuple(seen.setdefault(i, len(seen)) for i in islands)


# GPU type recorded for nodes without GPUs: sources disagree on what to put
# there (a TOML default, nothing in slurm.conf), and it means nothing.
NO_GPU_TYPE = "none"


def assemble(name: str, racks: Sequence[tuple[str, Sequence[NodeSpec]]]) -> Cluster:
    """Index racks and nodes in the given order and build the cluster.

    Nodes without GPUs get the GPU type :data:`NO_GPU_TYPE`, so the same
    hardware compares equal whichever source described it.
    """
    rack_objs: list[Rack] = []
    nodes: list[Node] = []
    for r, (rack_name, members) in enumerate(racks):
        first = len(nodes)
        for spec in members:
            nodes.append(
                Node(
                    name=spec.name,
                    index=len(nodes),
                    rack=r,
                    gpus=spec.gpus,
                    gpu_type=spec.gpu_type if spec.gpus else NO_GPU_TYPE,
                    islands=spec.islands,
                    cpus=spec.cpus,
                    memory_mb=spec.memory_mb,
                )
            )
        rack_objs.append(Rack(rack_name, r, tuple(range(first, len(nodes)))))
    return Cluster(name=name, racks=tuple(rack_objs), nodes=tuple(nodes))


def synthesize_racks(
    nodes: Sequence[NodeSpec],
    key: Callable[[NodeSpec], Hashable] = lambda n: (n.gpus, n.gpu_type),
    size: int = SYNTH_RACK_SIZE,
) -> list[tuple[str, list[NodeSpec]]]:
    """Racks for sources that list machines but no racks.

    Rule: machines are grouped by ``key`` (GPU count and type by default,
    since sites rack identical servers together), groups ordered by first
    appearance, machines keep their listed order inside a group, and each
    group is cut into racks of ``size``; racks are named ``rack01``, ``rack02``, ...
    in that order. The same input always yields the same racks.
    """
    groups: dict[Hashable, list[NodeSpec]] = {}
    for n in nodes:
        groups.setdefault(key(n), []).append(n)
    chunks = [members[i : i + size] for members in groups.values() for i in range(0, len(members), size)]
    width = max(2, len(str(len(chunks))))
    return [(f"rack{i:0{width}d}", chunk) for i, chunk in enumerate(chunks, 1)]
