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
from slurmrl.rl.harmony.placement import greedy_chooser
from slurmrl.rl.harmony.policy import HarmonyPolicy, read_checkpoint
from slurmrl.rl.nets.numpy_nets import NumpyHarmony

DEFAULT_POLICY = "meta-rl-philly"
FALLBACK = "interference-aware"


def harmony_policy(directory: Path, placement: PlacementPolicy | None, name: str) -> HarmonyPolicy:
    """A Harmony-format checkpoint as a policy named ``name``; ``placement`` places multi-node jobs."""
    from slurmrl.policy.registry import make_placement

    ckpt, state = read_checkpoint(Path(directory))
    net = NumpyHarmony(ckpt.net, state)
    return HarmonyPolicy(
        ckpt.obs,
        greedy_chooser(net.logits),
        placement or make_placement(FALLBACK),
        ordering=ckpt.ordering,
        name=name,
        lead=ckpt.lead,
    )


def make_meta_rl(placement: PlacementPolicy) -> HarmonyPolicy:
    """Registry factory: the shipped meta-learned checkpoint."""
    return harmony_policy(shipped_policy_dir(DEFAULT_POLICY), placement, "meta-rl")


def load_policy(directory: Path, placement: PlacementPolicy | None) -> HarmonyPolicy:
    """A Harmony-format folder (``harmony``, ``meta-rl`` and adapted checkpoints) as a policy."""
    return harmony_policy(directory, placement, f"rl:{directory.name}")
