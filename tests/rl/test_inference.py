"""The numpy decision path against the torch network it mirrors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from slurmrl.rl.features import CLUSTER_CHANNELS, GLOBAL_FEATURES, ObsConfig
from slurmrl.rl.inference import NumpyTopDRL
from slurmrl.rl.network import masked_logits
from slurmrl.rl.topdrl import load_checkpoint, new_network, shipped_policy_dir


def _torch_logits(net: torch.nn.Module, jobs, grid, glob, mask) -> np.ndarray:
    with torch.inference_mode():
        logits, _ = net(torch.from_numpy(jobs)[None], torch.from_numpy(grid)[None], torch.from_numpy(glob)[None])
        return masked_logits(logits, torch.from_numpy(mask)[None])[0].numpy()


def _numpy_of(net: torch.nn.Module) -> NumpyTopDRL:
    return NumpyTopDRL(net.cfg, {k: v.numpy() for k, v in net.state_dict().items()})


@pytest.mark.parametrize("shape", [(8, 8, 8), (2, 4, 8), (3, 5, 4), (1, 1, 2)])
def test_numpy_logits_match_torch_on_random_observations(shape: tuple[int, int, int]) -> None:
    torch.manual_seed(1)
    obs = ObsConfig(window=16, oldest=4, models=("resnet50", "bert"))
    net = new_network(obs).eval()
    fast = _numpy_of(net)
    rng = np.random.default_rng(2)
    for _ in range(20):
        jobs = rng.random((16, obs.job_features), dtype=np.float32)
        jobs[rng.integers(1, 17) :, :] = 0.0  # a partly filled window: empty rows are zeros
        grid = rng.random((len(CLUSTER_CHANNELS), *shape), dtype=np.float32)
        glob = rng.random(len(GLOBAL_FEATURES), dtype=np.float32)
        mask = rng.random(17) < 0.7
        want = _torch_logits(net, jobs, grid, glob, mask)
        got = fast.logits(jobs, grid, glob, mask)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        assert int(got.argmax()) == int(want.argmax())


def test_numpy_logits_match_torch_for_the_shipped_checkpoint() -> None:
    ckpt, net = load_checkpoint(shipped_policy_dir())
    fast = _numpy_of(net)
    rng = np.random.default_rng(3)
    k = ckpt.obs.window
    jobs = rng.random((k, ckpt.obs.job_features), dtype=np.float32)
    grid = rng.random((len(CLUSTER_CHANNELS), 8, 8, 8), dtype=np.float32)
    glob = rng.random(len(GLOBAL_FEATURES), dtype=np.float32)
    mask = np.ones(k + 1, dtype=bool)
    np.testing.assert_allclose(fast.logits(jobs, grid, glob, mask), _torch_logits(net, jobs, grid, glob, mask), rtol=1e-4, atol=1e-4)


def test_missing_tensor_is_named() -> None:
    obs = ObsConfig(window=4, oldest=2, models=())
    net = new_network(obs)
    state = {k: v.numpy() for k, v in net.state_dict().items() if not k.startswith("wait.2")}
    with pytest.raises(ValueError, match="wait.2"):
        NumpyTopDRL(net.cfg, state)


def test_weight_shapes_are_those_of_the_torch_network() -> None:
    from slurmrl.rl.netconfig import weight_shapes

    for hidden, conv in [(64, 16), (16, 4)]:
        net = new_network(ObsConfig(window=4, oldest=2), hidden=hidden, conv=conv)
        assert weight_shapes(net.cfg) == {k: tuple(v.shape) for k, v in net.state_dict().items()}
