"""Every shipped checkpoint loads through :mod:`slurmrl.rl.nets` byte for byte and decides as it did.

``shipped_outputs.json`` holds, for every checkpoint folder under
``policies/`` and ``slurmrl/rl/shipped/``, the weights' digest and the logits
and decisions the per-family network code (before the shared toolkit)
computed on the fixed inputs of :mod:`tests.rl.nets.shipped_inputs` (a
checkpoint trained after the toolkit: what the toolkit computed when it was
trained, as its entry's ``recorded_with`` says). The
numpy twins must reproduce the decisions exactly and the logits to float32
rounding, and the torch modules must load each file strictly, with the same
tensor names and shapes, and agree with their numpy twins.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from slurmrl.rl import topdrl
from slurmrl.rl.checkpoints import WEIGHTS, checkpoint_format
from slurmrl.rl.harmony import policy as harmony
from slurmrl.rl.harmony.features import PlacementObs
from slurmrl.rl.inference import pick
from slurmrl.rl.maifs import policy as maifs
from slurmrl.rl.nets.config import weight_shapes
from slurmrl.rl.nets.numpy_nets import NumpyHarmony, NumpyMaifs, NumpyTopDRL
from tests.rl.nets.shipped_inputs import harmony_inputs, maifs_inputs, topdrl_inputs

ROOT = Path(__file__).resolve().parents[3]
RECORDED = json.loads((Path(__file__).parent / "shipped_outputs.json").read_text())["checkpoints"]
NAMES = sorted(RECORDED)  # checkpoint folders, relative to the repository root


def _family(name: str) -> str:
    return checkpoint_format(ROOT / name).removeprefix("slurmrl-")


def _load(name: str) -> tuple[object, dict[str, np.ndarray]]:
    """(net config, weights) of a shipped checkpoint, read by its family's loader."""
    directory = ROOT / name
    family = _family(name)
    if family == "topdrl":
        ckpt, state = topdrl.read_checkpoint(directory)
        return ckpt.net, state
    if family == "maifs":
        _obs, cfg, state = maifs.read_checkpoint(directory)
        return cfg, state
    ckpt, state = harmony.read_checkpoint(directory)
    return ckpt.net, state


def numpy_outputs(name: str) -> list[np.ndarray]:
    """The numpy twin's logits on every fixed input (MAIFS: all agents' option logits, joined)."""
    cfg, state = _load(name)
    family = _family(name)
    if family == "topdrl":
        net = NumpyTopDRL(cfg, state)
        return [net.logits(*case) for case in topdrl_inputs(cfg)]
    if family == "maifs":
        agents = NumpyMaifs(cfg, state)
        rows = []
        for jobs, glob, options, masks in maifs_inputs(cfg):
            ctx = agents.encode(jobs, glob)
            rows.append(
                np.concatenate([agents.logits(ctx, a, options[a], masks[a]) for a in range(len(jobs))])
            )
        return rows
    pointer = NumpyHarmony(cfg, state)
    return [pointer.logits(PlacementObs(*case)) for case in harmony_inputs(cfg)]


def torch_outputs(name: str) -> list[np.ndarray]:
    """The torch module's logits on the same inputs, its weights loaded strictly from the file."""
    torch = pytest.importorskip("torch")
    from slurmrl.rl.nets.torch_nets import HarmonyNet, MaifsNet, TopDRLNet

    cfg, state = _load(name)
    family = _family(name)
    t = {k: torch.as_tensor(v) for k, v in state.items()}
    rows = []
    with torch.no_grad():
        if family == "topdrl":
            net = TopDRLNet(cfg)
            net.load_state_dict(t, strict=True)
            for jobs, grid, glob, mask in topdrl_inputs(cfg):
                logits, _ = net(*(torch.as_tensor(x)[None] for x in (jobs, grid, glob)))
                rows.append(np.where(mask, logits[0].numpy(), np.float32(-1e8)))
        elif family == "maifs":
            net = MaifsNet(cfg)
            net.load_state_dict(t, strict=True)
            for case in maifs_inputs(cfg):
                logits, _ = net(*(torch.as_tensor(x)[None] for x in case))
                rows.append(logits[0].numpy().reshape(-1))
        else:
            net = HarmonyNet(cfg)
            net.load_state_dict(t, strict=True)
            for case in harmony_inputs(cfg):
                logits, _ = net(*(torch.as_tensor(x)[None] for x in case))
                rows.append(logits[0].numpy())
    return rows


@pytest.mark.parametrize("name", NAMES)
def test_shipped_weights_are_the_recorded_bytes(name: str) -> None:
    data = (ROOT / name / WEIGHTS).read_bytes()
    assert hashlib.sha256(data).hexdigest() == RECORDED[name]["sha256"]


@pytest.mark.parametrize("name", NAMES)
def test_shipped_tensor_names_and_shapes_are_the_configs(name: str) -> None:
    cfg, state = _load(name)
    assert {k: tuple(v.shape) for k, v in state.items()} == weight_shapes(cfg)


@pytest.mark.parametrize("name", NAMES)
def test_numpy_twin_decides_as_recorded(name: str) -> None:
    rows = numpy_outputs(name)
    assert [pick(r) for r in rows] == RECORDED[name]["picks"]
    for got, want in zip(rows, RECORDED[name]["logits"], strict=True):
        np.testing.assert_allclose(got, np.asarray(want, dtype=np.float32), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_torch_module_loads_and_agrees_with_numpy(name: str) -> None:
    for got, want in zip(torch_outputs(name), numpy_outputs(name), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        assert pick(got) == pick(want)


def test_shipped_policies_decide_without_torch() -> None:
    """The daemon's install may lack torch: every shipped checkpoint loads and decides as recorded without it."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from slurmrl.policy.registry import make_policy\n"
        "from slurmrl.rl.inference import pick\n"
        "from tests.rl.nets.test_shipped import NAMES, RECORDED, numpy_outputs\n"
        "for name in ('topdrl', 'harmony', 'meta-rl', 'maifs'):\n"
        "    make_policy(name)\n"
        "for name in NAMES:\n"
        "    assert [pick(r) for r in numpy_outputs(name)] == RECORDED[name]['picks'], name\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
