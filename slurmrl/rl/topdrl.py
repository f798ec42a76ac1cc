"""The trained TopDRL-style agent as a deployable :class:`~slurmrl.policy.base.Policy`.

At each decision point the agent scores the window of pending jobs; the best
feasible one starts on the GPUs the ``topology`` placement picks (the closest
free ones), and the agent is asked again with the updated cluster until it
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

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from slurmrl.errors import PolicyError
from slurmrl.policy.base import PlacementPolicy
from slurmrl.rl.features import CLUSTER_CHANNELS, GLOBAL_FEATURES, ObsConfig
from slurmrl.rl.inference import NumpyTopDRL, pick
from slurmrl.rl.netconfig import NetConfig, weight_shapes
from slurmrl.rl.window_policy import WindowPolicy

if TYPE_CHECKING:
    from slurmrl.rl.network import TopDRLNet

CHECKPOINT_FORMAT = "slurmrl-topdrl"
CHECKPOINT_VERSION = 1
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
DEFAULT_POLICY = "topdrl-philly"


@dataclass(frozen=True)
class Checkpoint:
    net: NetConfig
    obs: ObsConfig
    allow_wait: bool = False
    placement: str = "topology"


def new_network(obs: ObsConfig, *, hidden: int = 64, conv: int = 16) -> TopDRLNet:
    from slurmrl.rl.network import TopDRLNet

    cfg = NetConfig(obs.job_features, len(CLUSTER_CHANNELS), len(GLOBAL_FEATURES), hidden, conv)
    return TopDRLNet(cfg)


def save_checkpoint(
    directory: Path,
    net: TopDRLNet,
    obs: ObsConfig,
    *,
    allow_wait: bool = False,
    extra: Mapping[str, object] | None = None,
) -> None:
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    tmp = directory / (WEIGHTS + ".tmp")
    save_file(tensors, str(tmp))
    tmp.replace(directory / WEIGHTS)
    config = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "net": net.cfg.to_dict(),
        "obs": obs.to_dict(),
        "allow_wait": allow_wait,
        "placement": "topology",
    }
    if extra:
        config["training"] = dict(extra)
    (directory / CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def _require(path: Path) -> None:
    if not path.is_file():
        raise PolicyError(
            f"policy folder {path.parent} has no {path.name}",
            hint="a checkpoint folder holds model.safetensors and config.json; `slurmrl train --out DIR` writes one",
        )


def read_checkpoint_config(directory: Path) -> Checkpoint:
    """A checkpoint's config.json, checked; the weights are not read."""
    cfg_path = directory / CONFIG
    _require(cfg_path)
    _require(directory / WEIGHTS)
    try:
        raw = json.loads(cfg_path.read_text())
    except json.JSONDecodeError as exc:
        raise PolicyError(
            f"{cfg_path} is not valid JSON: {exc.msg}", file=str(cfg_path), line=exc.lineno, column=exc.colno
        ) from None
    if raw.get("format") != CHECKPOINT_FORMAT:
        raise PolicyError(
            f"{cfg_path} is not a TopDRL checkpoint config (format={raw.get('format')!r})", file=str(cfg_path)
        )
    if raw.get("version") != CHECKPOINT_VERSION:
        raise PolicyError(
            f"{cfg_path} has checkpoint version {raw.get('version')}; this slurmrl reads "
            f"version {CHECKPOINT_VERSION}",
            file=str(cfg_path),
            hint="retrain or upgrade slurmrl",
        )
    try:
        net_cfg = NetConfig(**raw["net"])
        obs = ObsConfig.from_dict(raw["obs"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PolicyError(
            f"bad or missing field in 'net'/'obs': {exc}", file=str(cfg_path)
        ) from None
    if net_cfg.job_features != obs.job_features:
        raise PolicyError(
            f"net.job_features={net_cfg.job_features} does not match the observation "
            f"layout ({obs.job_features} features)",
            file=str(cfg_path),
        )
    return Checkpoint(net_cfg, obs, bool(raw.get("allow_wait", False)), str(raw.get("placement", "topology")))


def read_checkpoint(directory: Path) -> tuple[Checkpoint, dict[str, np.ndarray]]:
    """A checkpoint's config and its weights as numpy arrays, every tensor checked against the config."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    ckpt = read_checkpoint_config(directory)
    net_cfg, weights = ckpt.net, directory / WEIGHTS
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError) as exc:
        raise PolicyError(f"cannot load weights {weights}: {exc}", file=str(weights)) from None
    expected = weight_shapes(net_cfg)
    problems = [f"no tensor {name}" for name in expected if name not in state]
    problems += [f"unexpected tensor {name}" for name in state if name not in expected]
    problems += [
        f"{name} has shape {tuple(state[name].shape)}, config.json implies {shape}"
        for name, shape in expected.items()
        if name in state and tuple(state[name].shape) != shape
    ]
    if problems:
        raise PolicyError(
            f"cannot load weights {weights}: {'; '.join(problems)}",
            file=str(weights),
            hint="the weights do not match config.json; re-export the checkpoint",
        )
    return ckpt, state


def load_checkpoint(directory: Path) -> tuple[Checkpoint, TopDRLNet]:
    """A checkpoint as a torch module, for training; deciding needs only :func:`read_checkpoint`."""
    import torch

    from slurmrl.rl.network import TopDRLNet

    ckpt, state = read_checkpoint(directory)
    net = TopDRLNet(ckpt.net)
    net.load_state_dict({name: torch.from_numpy(array) for name, array in state.items()})
    return ckpt, net.eval()


def shipped_policy_dir(name: str = DEFAULT_POLICY) -> Path:
    """A shipped checkpoint: ``policies/NAME`` in a source checkout, else the copy inside the package."""
    here = Path(__file__).resolve()
    for base in (here.parents[2] / "policies", here.parent / "shipped"):
        if (base / name / CONFIG).is_file():
            return base / name
    raise PolicyError(
        f"shipped policy '{name}' was not found",
        hint="reinstall slurmrl, or pass a checkpoint folder with --policy DIR",
    )


class TopDRLPolicy(WindowPolicy):
    """Deterministic job picker over a trained network, with a placement for the GPUs."""

    def __init__(
        self,
        weights: NumpyTopDRL,
        obs: ObsConfig,
        placement: PlacementPolicy,
        *,
        allow_wait: bool = False,
        name: str = "topdrl",
    ) -> None:
        super().__init__(obs, placement, allow_wait=allow_wait, name=name)
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
        return cls(weights, obs, place, allow_wait=ckpt.allow_wait, name=f"topdrl:{directory.name}")

    @classmethod
    def from_net(
        cls, net: TopDRLNet, obs: ObsConfig, placement: PlacementPolicy, *, allow_wait: bool = False
    ) -> TopDRLPolicy:
        """The policy of a network in training, on a numpy copy of its weights taken now."""
        state = {k: v.detach().cpu().numpy() for k, v in net.state_dict().items()}
        return cls(NumpyTopDRL(net.cfg, state), obs, placement, allow_wait=allow_wait)

    def _logits(self, jobs: np.ndarray, grid: np.ndarray, glob: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self._infer.logits(jobs, grid, glob, mask)


def make_topdrl(placement: PlacementPolicy) -> TopDRLPolicy:
    """Registry factory: the shipped Philly checkpoint with the given placement."""
    return TopDRLPolicy.from_dir(shipped_policy_dir(DEFAULT_POLICY), placement)


def load_policy(directory: Path, placement: PlacementPolicy | None) -> TopDRLPolicy:
    """Loader for :data:`slurmrl.rl.checkpoints.LOADERS`: a TopDRL checkpoint folder as a policy."""
    return TopDRLPolicy.from_dir(directory, placement)
