"""Cluster hardware model: racks, nodes, GPUs, links, and free-GPU bookkeeping."""

from slurmrl.cluster.model import Cluster, LinkTier, Node, NodeAlloc, Placement, Rack
from slurmrl.cluster.pool import GpuPool
from slurmrl.cluster.spec import cluster_to_toml, load_cluster

__all__ = [
    "Cluster",
    "GpuPool",
    "LinkTier",
    "Node",
    "NodeAlloc",
    "Placement",
    "Rack",
    "cluster_to_toml",
    "load_cluster",
]
