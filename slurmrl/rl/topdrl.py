"""The trained TopDRL-style agent as a deployable :class:`~slurmrl.policy.base.Policy`.

At each decision point the agent scores the window of pending jobs; the best
feasible one starts on the GPUs the ``type-aware`` placement picks (the closest
free ones of the fastest GPU type that holds the job: on a cluster of one type,
exactly ``topology``'s choice), and the agent is asked again with the updated cluster until it
says wait or nothing fits. Decisions are the argmax of the masked logits,
near-ties going to the lowest index (:func:`~slurmrl.rl.inference.pick`), so
the same view always gives the same decisions, in the simulator and beside
slurmctld alike, on any CPU.

A checkpoint is a folder with ``model.safetensors`` (weights only, no pickle)
and ``config.json`` (network constructor arguments and observation layout),
loadable without the training code and without torch: the policy decides in
numpy, so the daemon, which runs with operator rights beside slurmctld,
starts without importing it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from slurmrl.errors import PolicyError
from slurmrl.policy.base import PlacementPolicy, Policy
from slurmrl.rl import checkpoints
from slurmrl.rl.config_fields import choice, flag
from slurmrl.rl.features import CLUSTER_CHANNELS, GLOBAL_FEATURES, ObsConfig
from slurmrl.rl.lead import check_lead, lead_policy
from slurmrl.rl.nets.config import NetConfig, weight_shapes
from slurmrl.rl.nets.numpy_nets import NumpyTopDRL
from slurmrl.rl.run_times import hand_run_times, read_run_times
from slurmrl.rl.window_policy import WindowPolicy

if TYPE_CHECKING:
    from slurmrl.rl.nets.torch_nets import TopDRLNet

CHECKPOINT_FORMAT = "slurmrl-topdrl"
CHECKPOINT_VERSION = 1
WEIGHTS = checkpoints.WEIGHTS
CONFIG = checkpoints.CONFIG
DEFAULT_POLICY = "topdrl-philly"
# Where the agent's chosen jobs go, in training and in checkpoints written
# now. On the heterogeneous validation window (philly-hetero-week2-val) the
# shipped agent placing with type-aware beat itself with topology by 28% on
# avg JCT, and on one GPU type the two place alike, so every V100 result
# stands. Checkpoints without the key keep topology, what they were made with.
PLACEMENT = "type-aware"


@dataclass(frozen=True)
class Checkpoint:
    net: NetConfig
    obs: ObsConfig
    allow_wait: bool = False
    placement: str = PLACEMENT
    # A deployable heuristic whose decisions lead the window (WindowPolicy's
    # ``lead``): "" for the original window (oldest + smallest asked GPU-time).
    lead: str = ""
    # Run times of a training window handed to the lead as history
    # (slurmrl.rl.run_times): a CSV file in the folder, "" for none.
    run_times: str = ""


def new_network(obs: ObsConfig, *, hidden: int = 64, conv: int = 16) -> TopDRLNet:
    from slurmrl.rl.nets.torch_nets import TopDRLNet

    cfg = NetConfig(obs.job_features, len(CLUSTER_CHANNELS), len(GLOBAL_FEATURES), hidden, conv)
    return TopDRLNet(cfg)


def save_checkpoint(
    directory: Path,
    net: TopDRLNet,
    obs: ObsConfig,
    *,
    allow_wait: bool = False,
    lead: str = "",
    extra: Mapping[str, object] | None = None,
) -> None:
    config: dict[str, object] = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "net": net.cfg.to_dict(),
        "obs": obs.to_dict(),
        "allow_wait": allow_wait,
        "placement": PLACEMENT,
    }
    if lead:
        config["lead"] = lead
    if extra:
        config["training"] = dict(extra)
    checkpoints.write_checkpoint(directory, net.state_dict(), config)


def read_checkpoint_config(directory: Path) -> Checkpoint:
    """A checkpoint's config.json, checked; the weights are not read."""
    from slurmrl.policy.registry import placement_names

    raw = checkpoints.read_config(directory, CHECKPOINT_FORMAT, CHECKPOINT_VERSION, "TopDRL")
    cfg_path = directory / CONFIG
    try:
        net_cfg = NetConfig.from_dict(raw.get("net"))
        obs = ObsConfig.from_dict(raw.get("obs"))
        allow_wait = flag(raw, "allow_wait", "", default=False)
        placement = choice(raw, "placement", "", placement_names(), default="topology")
    except ValueError as exc:
        raise PolicyError(str(exc), file=str(cfg_path)) from None
    if net_cfg.job_features != obs.job_features:
        raise PolicyError(
            f"net.job_features={net_cfg.job_features} does not match the observation "
            f"layout ({obs.job_features} features)",
            file=str(cfg_path),
        )
    lead = check_lead(str(raw.get("lead", "")), cfg_path)
    run_times = str(raw.get("run_times", ""))
    if run_times and not (directory / run_times).is_file():
        raise PolicyError(f"'run_times': no file {run_times} in the checkpoint folder", file=str(cfg_path))
    return Checkpoint(net_cfg, obs, allow_wait, placement, lead, run_times)


def read_checkpoint(directory: Path) -> tuple[Checkpoint, dict[str, np.ndarray]]:
    """A checkpoint's config and its weights as numpy arrays, every tensor checked against the config."""
    ckpt = read_checkpoint_config(directory)
    return ckpt, checkpoints.read_weights(directory, weight_shapes(ckpt.net))


def load_checkpoint(directory: Path) -> tuple[Checkpoint, TopDRLNet]:
    """A checkpoint as a torch module, for training; deciding needs only :func:`read_checkpoint`."""
    import torch

    from slurmrl.rl.nets.torch_nets import TopDRLNet

    ckpt, state = read_checkpoint(directory)
    net = TopDRLNet(ckpt.net)
    net.load_state_dict({name: torch.from_numpy(array) for name, array in state.items()})
    return ckpt, net.eval()


def shipped_policy_dir(name: str = DEFAULT_POLICY) -> Path:
    """The shipped checkpoint folder (see :func:`slurmrl.rl.checkpoints.shipped_policy_dir`)."""
    return checkpoints.shipped_policy_dir(name)


class TopDRLPolicy(WindowPolicy):
    """Deterministic job picker over a trained network, with a placement for the GPUs."""

    learned = True  # a trained network: judged by gap closure against the heuristics

    def __init__(
        self,
        weights: NumpyTopDRL,
        obs: ObsConfig,
        placement: PlacementPolicy,
        *,
        allow_wait: bool = False,
        name: str = "topdrl",
        lead: Policy | None = None,
    ) -> None:
        super().__init__(obs, placement, allow_wait=allow_wait, name=name, lead=lead)
        self._infer = weights

    @classmethod
    def from_dir(
        cls, directory: Path | str, placement: PlacementPolicy | None = None, *, window: int | None = None
    ) -> TopDRLPolicy:
        """Load a checkpoint folder; ``window`` overrides K (the network works with any K)."""
        from slurmrl.policy.registry import make_placement

        directory = Path(directory)
        ckpt, state = read_checkpoint(directory)
        obs = ckpt.obs
        if window is not None:
            obs = ObsConfig(window, min(obs.oldest, window), obs.models)
        place = placement or make_placement(ckpt.placement)
        weights = NumpyTopDRL(ckpt.net, state)
        lead = lead_policy(ckpt.lead, place.name)
        if ckpt.run_times:
            hand_run_times(lead, read_run_times(directory / ckpt.run_times), directory / CONFIG)
        return cls(
            weights,
            obs,
            place,
            allow_wait=ckpt.allow_wait,
            name=f"topdrl:{directory.name}",
            lead=lead,
        )

    @classmethod
    def from_net(
        cls,
        net: TopDRLNet,
        obs: ObsConfig,
        placement: PlacementPolicy,
        *,
        allow_wait: bool = False,
        lead: str = "",
    ) -> TopDRLPolicy:
        """The policy of a network in training, on a numpy copy of its weights taken now."""
        weights = NumpyTopDRL(net.cfg, checkpoints.numpy_state(net))
        return cls(weights, obs, placement, allow_wait=allow_wait, lead=lead_policy(lead, placement.name))

    def _logits(self, jobs: np.ndarray, grid: np.ndarray, glob: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self._infer.logits(jobs, grid, glob, mask)


def make_topdrl(placement: PlacementPolicy) -> TopDRLPolicy:
    """Registry factory: the shipped Philly checkpoint with the given placement."""
    return TopDRLPolicy.from_dir(shipped_policy_dir(DEFAULT_POLICY), placement)


def load_policy(directory: Path, placement: PlacementPolicy | None) -> TopDRLPolicy:
    """Loader for :data:`slurmrl.rl.checkpoints.LOADERS`: a TopDRL checkpoint folder as a policy."""
    return TopDRLPolicy.from_dir(directory, placement)
