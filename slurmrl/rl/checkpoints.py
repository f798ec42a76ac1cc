"""Where trained checkpoints live, and loading any of them as a policy by its format.

Every learned policy saves a folder with ``config.json`` (whose ``format``
names the policy family) and ``model.safetensors``; the commands that take
``--policy DIR`` (simulate, compare, evaluate) load it here, so a new family
needs one entry in :data:`LOADERS` and nothing in the commands.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurmrl.errors import PolicyError
from slurmrl.policy.base import PlacementPolicy, Policy

if TYPE_CHECKING:
    import numpy as np
    import torch

CONFIG = "config.json"
WEIGHTS = "model.safetensors"

# config.json ``format`` -> "module:function(directory, placement) -> Policy".
LOADERS = {
    "slurmrl-topdrl": "slurmrl.rl.topdrl:load_policy",
    "slurmrl-harmony": "slurmrl.rl.meta.policy:load_policy",
    "slurmrl-maifs": "slurmrl.rl.maifs.policy:load_policy",
}
# config.json ``format`` -> the registered policy of that family (its Entry: cost, summary).
FAMILIES = {"slurmrl-topdrl": "topdrl", "slurmrl-harmony": "harmony", "slurmrl-maifs": "maifs"}


def layer_shapes(layers: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Weight and bias shapes of layers given by their weight shapes (bias = the weight's first axis)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for name, weight in layers.items():
        shapes[f"{name}.weight"] = weight
        shapes[f"{name}.bias"] = (weight[0],)
    return shapes


def shipped_policy_dir(name: str) -> Path:
    """A shipped checkpoint: ``policies/NAME`` in a source checkout, else the copy inside the package."""
    here = Path(__file__).resolve()
    for base in (here.parents[2] / "policies", here.parent / "shipped"):
        if (base / name / CONFIG).is_file():
            return base / name
    raise PolicyError(
        f"shipped policy '{name}' was not found",
        hint="reinstall slurmrl, or pass a checkpoint folder with --policy DIR",
    )


def checkpoint_format(directory: Path | str) -> str:
    """The ``format`` field of a checkpoint folder's config.json ("" when it has none)."""
    path = Path(directory) / CONFIG
    if not path.is_file():
        raise PolicyError(f"policy folder {directory} has no {CONFIG}", hint="pass a checkpoint folder")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise PolicyError(f"not valid JSON: {exc.msg}", file=str(path), line=exc.lineno) from None
    return str(raw.get("format", "")) if isinstance(raw, dict) else ""


def policy_from_dir(directory: Path | str, placement: PlacementPolicy | None) -> Policy:
    """Any trained checkpoint folder as a policy, by the format its config.json names."""
    fmt = checkpoint_format(directory)
    target = LOADERS.get(fmt)
    if target is None:
        raise PolicyError(
            f"{Path(directory) / CONFIG}: unknown checkpoint format '{fmt}'",
            hint=f"known formats: {', '.join(sorted(LOADERS))}",
        )
    module, function = target.split(":")
    return getattr(importlib.import_module(module), function)(Path(directory), placement)


def numpy_state(net: torch.nn.Module) -> dict[str, np.ndarray]:
    """A numpy copy of a network's weights as they are now: what rollouts and evaluations decide with."""
    return {k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()}


def write_checkpoint(directory: Path, state: Mapping[str, torch.Tensor], config: Mapping[str, Any]) -> None:
    """Weights (safetensors, replaced atomically) and config.json: a folder any loader here reads."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (WEIGHTS + ".tmp")
    save_file({k: v.detach().cpu().contiguous() for k, v in state.items()}, str(tmp))
    tmp.replace(directory / WEIGHTS)
    (directory / CONFIG).write_text(json.dumps(dict(config), indent=2, sort_keys=True) + "\n")


def read_config(directory: Path, fmt: str, version: int, family: str) -> dict[str, Any]:
    """A checkpoint folder's config.json, checked to be ``family``'s ``fmt`` at ``version``."""
    cfg_path = directory / CONFIG
    for path in (cfg_path, directory / WEIGHTS):
        if not path.is_file():
            raise PolicyError(
                f"policy folder {directory} has no {path.name}",
                hint=f"a checkpoint folder holds {WEIGHTS} and {CONFIG}; `slurmrl train --out DIR` writes one",
            )
    try:
        raw = json.loads(cfg_path.read_text())
    except json.JSONDecodeError as exc:
        raise PolicyError(
            f"not valid JSON: {exc.msg}", file=str(cfg_path), line=exc.lineno, column=exc.colno
        ) from None
    if not isinstance(raw, dict) or raw.get("format") != fmt:
        found = raw.get("format") if isinstance(raw, dict) else None
        raise PolicyError(f"not a {family} checkpoint config (format={found!r})", file=str(cfg_path))
    if raw.get("version") != version:
        raise PolicyError(
            f"checkpoint version {raw.get('version')!r}; this slurmrl reads version {version}",
            file=str(cfg_path),
            hint="retrain or upgrade slurmrl",
        )
    return raw


def read_weights(directory: Path, expected: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """The folder's weights as numpy arrays, every tensor's name and shape checked against ``expected``."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    weights = directory / WEIGHTS
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError) as exc:
        raise PolicyError(f"cannot load weights: {exc}", file=str(weights)) from None
    problems = [f"no tensor {name}" for name in expected if name not in state]
    problems += [f"unexpected tensor {name}" for name in state if name not in expected]
    problems += [
        f"{name} has shape {tuple(state[name].shape)}, config.json implies {shape}"
        for name, shape in expected.items()
        if name in state and tuple(state[name].shape) != tuple(shape)
    ]
    if problems:
        raise PolicyError(
            f"cannot load weights: {'; '.join(problems)}",
            file=str(weights),
            hint="the weights do not match config.json; re-export the checkpoint",
        )
    return state
