"""The deployable ``meta-rl`` policy, and the loader of Harmony-format checkpoint folders.

``meta-rl`` is the Harmony placement agent (a deployable ordering decides
which jobs start, the pointer network where) with the meta-learned weights
shipped in ``policies/meta-rl-philly``; an adapted checkpoint written by
``slurmrl adapt`` has the same format. Decisions run in numpy from
safetensors: no torch at deployment.
"""

from __future__ import annotations

from pathlib import Path

from slurmrl.policy.base import PlacementPolicy
from slurmrl.rl.checkpoints import shipped_policy_dir
from slurmrl.rl.harmony.policy import HarmonyPolicy

DEFAULT_POLICY = "meta-rl-philly"


def harmony_policy(directory: Path, placement: PlacementPolicy | None, name: str) -> HarmonyPolicy:
    """A Harmony-format checkpoint as a policy named ``name``; ``placement`` places multi-node jobs."""
    return HarmonyPolicy.from_dir(directory, placement, name=name)


def make_meta_rl(placement: PlacementPolicy) -> HarmonyPolicy:
    """Registry factory: the shipped meta-learned checkpoint."""
    return harmony_policy(shipped_policy_dir(DEFAULT_POLICY), placement, "meta-rl")


def load_policy(directory: Path, placement: PlacementPolicy | None) -> HarmonyPolicy:
    """A Harmony-format folder (``harmony``, ``meta-rl`` and adapted checkpoints) as a policy."""
    return harmony_policy(directory, placement, f"rl:{directory.name}")
