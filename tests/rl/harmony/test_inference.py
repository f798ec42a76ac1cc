"""Numpy inference matches the torch network; checkpoints round-trip and bad ones are refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from slurmrl.errors import PolicyError
from slurmrl.rl.harmony.features import HarmonyObs, PlacementObs
from slurmrl.rl.harmony.policy import HarmonyPolicy, read_checkpoint, save_checkpoint
from slurmrl.rl.inference import pick
from slurmrl.rl.nets.numpy_nets import NumpyHarmony
from tests.rl.harmony.common import random_net

OBS = HarmonyObs(window=4)


def _random_obs(rng: np.random.Generator, nodes: int) -> PlacementObs:
    mask = rng.random(nodes) < 0.6
    mask[int(rng.integers(nodes))] = True
    window = rng.random((OBS.window, OBS.job_features)).astype(np.float32)
    window[:, 0] = (rng.random(OBS.window) < 0.7).astype(np.float32)
    return PlacementObs(
        rng.random(OBS.job_features).astype(np.float32),
        window,
        rng.random((nodes, OBS.node_features)).astype(np.float32),
        rng.random(OBS.global_features).astype(np.float32),
        mask,
    )


def test_numpy_logits_and_decisions_match_torch() -> None:
    net = random_net(OBS, seed=1)
    infer = NumpyHarmony(net.cfg, {k: v.detach().numpy() for k, v in net.state_dict().items()})
    rng = np.random.default_rng(2)
    for nodes in (3, 10, 40):
        o = _random_obs(rng, nodes)
        with torch.no_grad():
            ref, _ = net(*(torch.as_tensor(a)[None] for a in (o.job, o.window, o.nodes, o.globals, o.mask)))
        got = infer.logits(o)
        ref = ref[0].numpy()
        assert np.allclose(got[o.mask], ref[o.mask], atol=1e-5)
        assert np.all(got[~o.mask] <= -1e7)
        assert pick(got) == int(np.argmax(ref))


def test_checkpoint_round_trip_without_torch_in_the_loader(tmp_path: Path) -> None:
    net = random_net(OBS, seed=3)
    save_checkpoint(tmp_path, net, OBS, "slurm", {"seed": 3})
    ckpt, state = read_checkpoint(tmp_path)
    assert ckpt.ordering == "slurm" and ckpt.obs == OBS and ckpt.net == net.cfg
    for name, tensor in net.state_dict().items():
        assert np.array_equal(state[name], tensor.numpy())
    assert HarmonyPolicy.from_dir(tmp_path).name == f"harmony:{tmp_path.name}"


def test_bad_checkpoints_are_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no config.json"):
        read_checkpoint(tmp_path)
    save_checkpoint(tmp_path, random_net(OBS), OBS, "qssf")
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["net"]["hidden"] = 16
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(PolicyError, match="shape"):
        read_checkpoint(tmp_path)
    cfg["format"] = "slurmrl-topdrl"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(PolicyError, match="not a Harmony checkpoint"):
        read_checkpoint(tmp_path)
