"""The numpy twins of the shared layers: what deployed policies and rollouts decide with.

A deployed policy scores one small observation at a time, tens of thousands of
times per replay. At that size torch's per-operator dispatch, not arithmetic,
is the cost; the same arithmetic in numpy runs several times faster and needs
no torch at all (the daemon loads checkpoints with ``safetensors.numpy``).
Each layer reads the very tensors its torch twin
(:mod:`slurmrl.rl.nets.torch_layers`) trains, by their state-dict names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TypeVar

import numpy as np

MASKED = -1e8  # the logit an infeasible action gets, as masked_logits gives it

State = Mapping[str, np.ndarray]
_T = TypeVar("_T")


def relu(x: np.ndarray) -> np.ndarray:
    """ReLU in place: every caller passes a fresh product, never an observation."""
    return np.maximum(x, 0.0, out=x)


def load(build: Callable[[], _T]) -> _T:
    """``build()`` (which reads layers from a state dict), a missing tensor reported by name."""
    try:
        return build()
    except KeyError as exc:
        raise ValueError(f"the weights have no tensor {exc.args[0]!r}") from None


class Linear:
    """``x @ W.T + b`` from ``{name}.weight`` [out, in] and ``{name}.bias`` [out]."""

    __slots__ = ("w", "b")

    def __init__(self, state: State, name: str) -> None:
        self.w = np.ascontiguousarray(state[f"{name}.weight"].T, dtype=np.float32)  # [in, out]
        self.b = np.asarray(state[f"{name}.bias"], dtype=np.float32)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x @ self.w + self.b


class SplitLinear:
    """A linear layer over ``[rows, shared]`` with the shared part multiplied once, not once per row.

    Heads that score many rows against one context (jobs against the cluster,
    nodes against the job, options against the agent) read the rows joined
    with the context; splitting the weight at ``split`` gives the same sums
    for a fraction of the work.
    """

    __slots__ = ("rows", "shared", "b")

    def __init__(self, state: State, name: str, split: int) -> None:
        whole = Linear(state, name)
        self.rows, self.shared, self.b = whole.w[:split], whole.w[split:], whole.b

    def __call__(self, rows: np.ndarray, shared: np.ndarray) -> np.ndarray:
        return rows @ self.rows + (shared @ self.shared + self.b)


class MLP:
    """The twin of :func:`~slurmrl.rl.nets.torch_layers.mlp`: Linear layers at even indices, ReLUs between."""

    __slots__ = ("layers", "relu_out")

    def __init__(self, state: State, name: str, depth: int, relu_out: bool = True) -> None:
        self.layers = [Linear(state, f"{name}.{2 * i}") for i in range(depth)]
        self.relu_out = relu_out

    def __call__(self, x: np.ndarray) -> np.ndarray:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if self.relu_out or i < len(self.layers) - 1:
                x = relu(x)
        return x


class Conv3x3:
    """A 3x3, padding-1 convolution on channel-last planes ``[P, H, W, C]``.

    As one gather and one matrix product: the planes are copied into a
    zero-bordered buffer, each output cell's 3x3 neighbourhood is taken with a
    precomputed index (im2col), and the kernel, reordered to match, is applied
    to all cells at once.
    """

    __slots__ = ("w", "b", "_shape", "_buf", "_idx")

    def __init__(self, state: State, name: str) -> None:
        w = np.asarray(state[f"{name}.weight"], dtype=np.float32)  # [out, in, 3, 3]
        if w.shape[2:] != (3, 3):
            raise ValueError(f"{name}: expected a 3x3 kernel, got {w.shape[2:]}")
        self.w = np.ascontiguousarray(w.transpose(2, 3, 1, 0).reshape(-1, w.shape[0]))  # [(i, j, in), out]
        self.b = np.asarray(state[f"{name}.bias"], dtype=np.float32)
        self._shape: tuple[int, ...] = ()
        self._buf = np.zeros(0, dtype=np.float32)
        self._idx = np.zeros(0, dtype=np.int64)

    def _layout(self, shape: tuple[int, ...]) -> None:
        p, h, w, c = shape
        hp, wp = h + 2, w + 2
        rows = np.arange(h)[:, None, None, None] + np.arange(3)[None, None, :, None]  # [h, 1, 3, 1]
        cols = np.arange(w)[None, :, None, None] + np.arange(3)[None, None, None, :]  # [1, w, 1, 3]
        cell = (rows * wp + cols).reshape(h * w, 9)
        self._idx = (np.arange(p)[:, None, None] * (hp * wp) + cell[None]).reshape(-1)
        self._buf = np.zeros((p, hp, wp, c), dtype=np.float32)
        self._shape = shape

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if x.shape != self._shape:
            self._layout(x.shape)
        p, h, w, c = x.shape
        self._buf[:, 1 : h + 1, 1 : w + 1, :] = x
        cols = self._buf.reshape(-1, c).take(self._idx, axis=0).reshape(p * h * w, 9 * c)
        return (cols @ self.w + self.b).reshape(p, h, w, -1)


class ConvStack:
    """The twin of :func:`~slurmrl.rl.nets.torch_layers.conv3x3`: convolutions at even indices, each with a ReLU."""

    __slots__ = ("convs",)

    def __init__(self, state: State, name: str, depth: int) -> None:
        self.convs = [Conv3x3(state, f"{name}.{2 * i}") for i in range(depth)]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        for conv in self.convs:
            x = relu(conv(x))
        return x


def masked_mean(x: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Mean of the rows of ``x`` [K, h] whose ``valid`` [K, 1] (0/1) is 1; zeros when none is."""
    return (x * valid).sum(axis=0) / max(float(valid.sum()), 1.0)


def dot_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Scaled dot-product attention ``[K, h]``, keys where ``valid`` [K] is False masked out."""
    scores = (q @ k.T) / np.float32(math.sqrt(q.shape[1]))
    scores = np.where(valid[None, :], scores, np.float32(-1e9))
    scores = scores - scores.max(axis=1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=1, keepdims=True)
    return w @ v


def additive_scores(keys: np.ndarray, query: np.ndarray, v: Linear) -> np.ndarray:
    """Additive attention scores ``[N]`` of projected ``keys`` [N, h] for a projected ``query`` [h]."""
    return v(np.tanh(keys + query))[:, 0]


def mask_logits(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``scores`` where ``mask`` holds, :data:`MASKED` elsewhere (float32)."""
    return np.where(mask, scores, np.float32(MASKED)).astype(np.float32)
