"""The TopDRL network's decision path in numpy, for deployment and evaluation.

A deployed policy scores one small observation at a time (a 32-job window, a
64-node grid), tens of thousands of times per replay. At that size torch's
per-operator dispatch, not arithmetic, is the cost: a forward pass took over a
millisecond, four fifths of it in fixed overheads. The same arithmetic in
numpy runs several times faster, needs no torch at all (the daemon loads a
checkpoint with ``safetensors.numpy``), and reads the very tensors
:class:`~slurmrl.rl.network.TopDRLNet` trains, by their state-dict names.

Only the logits are computed; the value head serves training alone. Results
match the torch module to float32 rounding (tests check both the numbers and
the decisions on random observations); :func:`pick` turns logits into a
decision that does not depend on the CPU's rounding.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from slurmrl.rl.netconfig import NetConfig

MASKED = -1e8  # the logit an infeasible action gets, as masked_logits gives it

# Logits closer than this to the best count as tied (absolute + relative to
# the best's magnitude). Rounding noise between CPUs is about 1e-8 on logits
# of order 1e-2, three orders of magnitude below it; learned preferences
# between distinct jobs are orders of magnitude above it.
TIE_ATOL = 1e-5
TIE_RTOL = 1e-5


def pick(logits: np.ndarray) -> int:
    """The chosen action: the lowest index whose logit is within the tie tolerance of the best.

    Identical window rows (equal jobs, empty slots) score equal in exact
    arithmetic, but matrix products sum in an order that depends on the CPU's
    vector width and on a row's position, so their last bits differ between
    machines and a plain ``argmax`` picks a different job on each. Taking the
    lowest index among near-ties makes the decision the same everywhere,
    except for a logit that lands within rounding noise of the tolerance
    edge itself: a far rarer event than an exact tie.
    """
    best = float(logits.max())
    tol = TIE_ATOL + TIE_RTOL * abs(best)
    return int(np.flatnonzero(logits >= best - tol)[0])


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0, out=x)


class _Linear:
    __slots__ = ("w", "b")

    def __init__(self, state: Mapping[str, np.ndarray], name: str) -> None:
        self.w = np.ascontiguousarray(state[f"{name}.weight"].T, dtype=np.float32)  # [in, out]
        self.b = np.asarray(state[f"{name}.bias"], dtype=np.float32)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x @ self.w + self.b


class _Conv3x3:
    """A 3x3, padding-1 convolution on channel-last planes ``[P, H, W, C]``.

    As one gather and one matrix product: the planes are copied into a
    zero-bordered buffer, each output cell's 3x3 neighbourhood is taken with a
    precomputed index (im2col), and the kernel, reordered to match, is applied
    to all cells at once.
    """

    __slots__ = ("w", "b", "_shape", "_buf", "_idx")

    def __init__(self, state: Mapping[str, np.ndarray], name: str) -> None:
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


class NumpyTopDRL:
    """Masked logits of one observation (last entry = wait) from a TopDRL state dict."""

    def __init__(self, cfg: NetConfig, state: Mapping[str, np.ndarray]) -> None:
        self.cfg = cfg
        try:
            self.conv1, self.conv2 = _Conv3x3(state, "grid.0"), _Conv3x3(state, "grid.2")
            self.cluster = _Linear(state, "cluster_mlp.0")
            self.job1, self.job2 = _Linear(state, "job_mlp.0"), _Linear(state, "job_mlp.2")
            self.score1, self.score2 = _Linear(state, "score.0"), _Linear(state, "score.2")
            self.wait1, self.wait2 = _Linear(state, "wait.0"), _Linear(state, "wait.2")
        except KeyError as exc:
            raise ValueError(f"the weights have no tensor {exc.args[0]!r}") from None
        h = cfg.hidden
        # The score head sees [job embedding, cluster, mean job]; split its first
        # layer so the two context parts are multiplied once, not once per row.
        self._score_job, self._score_ctx = self.score1.w[:h], self.score1.w[h:]

    def logits(self, jobs: np.ndarray, grid: np.ndarray, glob: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``jobs`` [K, F], ``grid`` [C, R, N, G], ``glob`` [S], ``mask`` [K + 1] -> [K + 1]."""
        planes = np.ascontiguousarray(grid.transpose(1, 2, 3, 0))  # [R, N, G, C]
        feat = _relu(self.conv2(_relu(self.conv1(planes))))  # [R, N, G, c]
        cells = feat.reshape(feat.shape[0], -1, feat.shape[3])
        per_rack = np.concatenate([cells.mean(axis=1), cells.max(axis=1)], axis=1)  # [R, 2c]
        pooled = np.concatenate([per_rack.mean(axis=0), per_rack.max(axis=0), glob])
        cl = _relu(self.cluster(pooled))  # [h]
        emb = _relu(self.job2(_relu(self.job1(jobs))))  # [K, h]
        valid = jobs[:, :1]
        mean_job = (emb * valid).sum(axis=0) / max(float(valid.sum()), 1.0)
        ctx = np.concatenate([cl, mean_job])
        hidden = _relu(emb @ self._score_job + (ctx @ self._score_ctx + self.score1.b))
        scores = self.score2(hidden)[:, 0]
        wait = self.wait2(_relu(self.wait1(ctx)))
        return np.where(mask, np.concatenate([scores, wait]), np.float32(MASKED))
