"""The numpy decision path against the torch network it mirrors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from slurmrl.rl.features import CLUSTER_CHANNELS, GLOBAL_FEATURES, ObsConfig
from slurmrl.rl.inference import MASKED, TIE_ATOL, TIE_RTOL, pick
from slurmrl.rl.nets.numpy_nets import NumpyTopDRL
from slurmrl.rl.nets.torch_layers import masked_logits
from slurmrl.rl.topdrl import load_checkpoint, new_network, shipped_policy_dir


def _torch_logits(net: torch.nn.Module, jobs, grid, glob, mask) -> np.ndarray:
    with torch.inference_mode():
        logits, _ = net(
            torch.from_numpy(jobs)[None], torch.from_numpy(grid)[None], torch.from_numpy(glob)[None]
        )
        return masked_logits(logits, torch.from_numpy(mask)[None])[0].numpy()


def _numpy_of(net: torch.nn.Module) -> NumpyTopDRL:
    return NumpyTopDRL(net.cfg, {k: v.numpy() for k, v in net.state_dict().items()})


ATOL = RTOL = 1e-4  # numpy against torch: float32 rounding in different summation orders


def _tie_tolerance(logits: np.ndarray) -> float:
    return TIE_ATOL + TIE_RTOL * abs(float(logits.max()))


def _decisive(logits: np.ndarray) -> bool:
    """No logit lies near the tie tolerance's edge, where rounding could move it in or out."""
    gaps = float(logits.max()) - logits
    edge = _tie_tolerance(logits)
    return not np.any(np.abs(gaps - edge) <= 2 * (ATOL + RTOL * np.abs(logits)))


def _lead(logits: np.ndarray) -> float:
    top = np.sort(logits)[::-1]
    return float(top[0] - top[1])


@pytest.mark.parametrize("shape", [(8, 8, 8), (2, 4, 8), (3, 5, 4), (1, 1, 2)])
def test_numpy_logits_match_torch_on_random_observations(shape: tuple[int, int, int]) -> None:
    torch.manual_seed(1)
    obs = ObsConfig(window=16, oldest=4, models=("resnet50", "bert"))
    net = new_network(obs).eval()
    fast = _numpy_of(net)
    rng = np.random.default_rng(2)
    argmax_checked = 0
    for _ in range(20):
        jobs = rng.random((16, obs.job_features), dtype=np.float32)
        jobs[rng.integers(1, 17) :, :] = 0.0  # a partly filled window: empty rows are zeros
        grid = rng.random((len(CLUSTER_CHANNELS), *shape), dtype=np.float32)
        glob = rng.random(len(GLOBAL_FEATURES), dtype=np.float32)
        mask = rng.random(17) < 0.7
        want = _torch_logits(net, jobs, grid, glob, mask)
        got = fast.logits(jobs, grid, glob, mask)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
        # Where the best logit leads by more than both sides' rounding, the plain
        # argmax is the same; where it does not (equal empty rows), only the
        # tie-broken pick is defined, and it agrees too.
        if _lead(want) > 2 * (ATOL + RTOL * abs(float(want.max()))):
            assert int(got.argmax()) == int(want.argmax())
            argmax_checked += 1
        if _decisive(want):
            assert pick(got) == pick(want)
    assert argmax_checked >= 10  # most draws have a clear winner: the comparison is not vacuous


def test_pick_takes_the_lowest_index_among_near_ties() -> None:
    base = np.array([0.1, 5.604059e-03, 0.3, 0.3, -1e8], dtype=np.float32)
    assert pick(base) == 2
    for noise in (1e-8, -1e-8, 3e-7):
        shaken = base.copy()
        shaken[3] += np.float32(noise)  # another CPU's rounding of an equal row
        assert pick(shaken) == 2
    clear = base.copy()
    clear[3] += np.float32(1e-3)  # a real preference is not a tie
    assert pick(clear) == 3


def test_pick_with_every_action_masked_is_the_first() -> None:
    assert pick(np.full(5, MASKED, dtype=np.float32)) == 0


def test_numpy_logits_match_torch_for_the_shipped_checkpoint() -> None:
    ckpt, net = load_checkpoint(shipped_policy_dir())
    fast = _numpy_of(net)
    rng = np.random.default_rng(3)
    k = ckpt.obs.window
    jobs = rng.random((k, ckpt.obs.job_features), dtype=np.float32)
    grid = rng.random((len(CLUSTER_CHANNELS), 8, 8, 8), dtype=np.float32)
    glob = rng.random(len(GLOBAL_FEATURES), dtype=np.float32)
    mask = np.ones(k + 1, dtype=bool)
    np.testing.assert_allclose(
        fast.logits(jobs, grid, glob, mask), _torch_logits(net, jobs, grid, glob, mask), rtol=1e-4, atol=1e-4
    )


def test_missing_tensor_is_named() -> None:
    obs = ObsConfig(window=4, oldest=2, models=())
    net = new_network(obs)
    state = {k: v.numpy() for k, v in net.state_dict().items() if not k.startswith("wait.2")}
    with pytest.raises(ValueError, match="wait.2"):
        NumpyTopDRL(net.cfg, state)


def test_weight_shapes_are_those_of_the_torch_network() -> None:
    from slurmrl.rl.nets.config import weight_shapes

    for hidden, conv in [(64, 16), (16, 4)]:
        net = new_network(ObsConfig(window=4, oldest=2), hidden=hidden, conv=conv)
        assert weight_shapes(net.cfg) == {k: tuple(v.shape) for k, v in net.state_dict().items()}
