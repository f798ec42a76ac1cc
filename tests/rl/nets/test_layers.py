"""Each numpy layer computes what its torch twin computes, reading the same state-dict names."""

from __future__ import annotations

import numpy as np
import pytest

from slurmrl.rl.checkpoints import numpy_state
from slurmrl.rl.nets import numpy_layers as npl

torch = pytest.importorskip("torch")
tl = pytest.importorskip("slurmrl.rl.nets.torch_layers")

TOL = {"rtol": 1e-4, "atol": 1e-5}


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("relu_out", [True, False])
def test_mlp_twin(relu_out: bool) -> None:
    torch.manual_seed(0)
    net = tl.mlp(5, 7, 3, relu_out=relu_out)
    assert [name for name, _ in net.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    x = _rand(np.random.default_rng(0), 4, 5)
    twin = npl.MLP({f"m.{k}": v for k, v in numpy_state(net).items()}, "m", 2, relu_out=relu_out)
    with torch.no_grad():
        want = net(torch.as_tensor(x)).numpy()
    np.testing.assert_allclose(twin(x), want, **TOL)
    assert (want.min() < 0) == (not relu_out)


def test_conv_stack_twin_on_channel_last_planes() -> None:
    torch.manual_seed(1)
    net = tl.conv3x3(3, 4, 4)
    planes = _rand(np.random.default_rng(1), 2, 5, 6, 3)  # [P, H, W, C]
    twin = npl.ConvStack({f"g.{k}": v for k, v in numpy_state(net).items()}, "g", 2)
    with torch.no_grad():
        want = net(torch.as_tensor(planes).permute(0, 3, 1, 2)).permute(0, 2, 3, 1).numpy()
    np.testing.assert_allclose(twin(planes), want, **TOL)


def test_split_linear_is_the_layer_over_joined_rows() -> None:
    torch.manual_seed(2)
    layer = torch.nn.Linear(5 + 3, 4)
    rng = np.random.default_rng(2)
    rows, shared = _rand(rng, 6, 5), _rand(rng, 3)
    twin = npl.SplitLinear({f"s.{k}": v for k, v in numpy_state(layer).items()}, "s", 5)
    joined = np.concatenate([rows, np.broadcast_to(shared, (6, 3))], axis=1)
    with torch.no_grad():
        want = layer(torch.as_tensor(joined)).numpy()
    np.testing.assert_allclose(twin(rows, shared), want, **TOL)


def test_dot_attention_twin_ignores_masked_keys() -> None:
    rng = np.random.default_rng(3)
    q, k, v = _rand(rng, 5, 8), _rand(rng, 5, 8), _rand(rng, 5, 8)
    valid = np.array([True, True, False, True, False])
    got = npl.dot_attention(q, k, v, valid)
    want = tl.dot_attention(*(torch.as_tensor(a)[None] for a in (q, k, v, valid)))[0].numpy()
    np.testing.assert_allclose(got, want, **TOL)
    changed = v.copy()
    changed[~valid] += 100.0
    np.testing.assert_allclose(npl.dot_attention(q, k, changed, valid), got, **TOL)


def test_additive_scores_and_masking_twins() -> None:
    torch.manual_seed(4)
    v = torch.nn.Linear(8, 1)
    rng = np.random.default_rng(4)
    keys, query = _rand(rng, 6, 8), _rand(rng, 8)
    got = npl.additive_scores(keys, query, npl.Linear({f"v.{k}": a for k, a in numpy_state(v).items()}, "v"))
    with torch.no_grad():
        want = tl.additive_scores(torch.as_tensor(keys)[None], torch.as_tensor(query)[None], v)[0].numpy()
    np.testing.assert_allclose(got, want, **TOL)
    mask = np.array([True, False, True, True, False, True])
    masked = npl.mask_logits(got, mask)
    np.testing.assert_array_equal(
        masked, tl.masked_logits(torch.as_tensor(got), torch.as_tensor(mask)).numpy()
    )
    assert masked.dtype == np.float32 and (masked[~mask] == np.float32(npl.MASKED)).all()


def test_masked_mean_twin_counts_only_valid_rows() -> None:
    rng = np.random.default_rng(5)
    x = _rand(rng, 4, 3)
    valid = np.array([[1.0], [0.0], [1.0], [0.0]], dtype=np.float32)
    got = npl.masked_mean(x, valid)
    np.testing.assert_allclose(got, x[[0, 2]].mean(axis=0), **TOL)
    np.testing.assert_allclose(
        tl.masked_mean(torch.as_tensor(x), torch.as_tensor(valid), dim=0).numpy(), got, **TOL
    )
    assert not npl.masked_mean(x, np.zeros_like(valid)).any()


def test_a_missing_tensor_is_named() -> None:
    with pytest.raises(ValueError, match="'absent.weight'"):
        npl.load(lambda: npl.Linear({}, "absent"))
