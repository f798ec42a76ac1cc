"""The one policy interface shared by the simulator and the Slurm daemon."""

from slurmrl.policy.base import OrderedScheduler, Ordering, PlacementPolicy, Policy
from slurmrl.policy.registry import make_placement, make_policy, placement_names, policy_names
from slurmrl.policy.view import ClusterView, Decisions, FinishedJob, JobView, Start

__all__ = [
    "ClusterView",
    "Decisions",
    "FinishedJob",
    "JobView",
    "OrderedScheduler",
    "Ordering",
    "PlacementPolicy",
    "Policy",
    "Start",
    "make_placement",
    "make_policy",
    "placement_names",
    "policy_names",
]
