"""The MAIFS actor's decision path in numpy: what the deployed policy and rollouts run.

A step is a few small matrix products; numpy does them without torch's
per-operator overhead and without importing torch at all, reading the very
tensors :class:`~slurmrl.rl.maifs.network.MaifsNet` trains, by their
state-dict names. The critic is not needed to decide and is not computed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from slurmrl.rl.inference import MASKED, _Linear
from slurmrl.rl.maifs.netconfig import MaifsNetConfig


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


class NumpyMaifs:
    """Agent contexts and masked option logits from a MAIFS state dict (an :class:`AgentNet`)."""

    def __init__(self, cfg: MaifsNetConfig, state: Mapping[str, np.ndarray]) -> None:
        self.cfg = cfg
        try:
            self.enc1, self.enc2 = _Linear(state, "job_enc.0"), _Linear(state, "job_enc.2")
            self.q, self.k, self.v = (
                _Linear(state, "attn_q"),
                _Linear(state, "attn_k"),
                _Linear(state, "attn_v"),
            )
            self.out = _Linear(state, "attn_out")
            self.opt1, self.opt2 = _Linear(state, "option.0"), _Linear(state, "option.2")
        except KeyError as exc:
            raise ValueError(f"the weights have no tensor {exc.args[0]!r}") from None
        fo = cfg.option_features
        # The option head reads [option row, agent context]; the context part is one product per agent.
        self._opt_w, self._ctx_w = self.opt1.w[:fo], self.opt1.w[fo:]

    def encode(self, jobs: np.ndarray, glob: np.ndarray) -> np.ndarray:
        k = jobs.shape[0]
        x = np.concatenate([jobs, np.broadcast_to(glob, (k, glob.size))], axis=1)
        emb = _relu(self.enc2(_relu(self.enc1(x))))
        valid = jobs[:, 0] > 0.5
        scores = (self.q(emb) @ self.k(emb).T) / np.float32(math.sqrt(emb.shape[1]))
        scores = np.where(valid[None, :], scores, np.float32(-1e9))
        scores = scores - scores.max(axis=1, keepdims=True)
        w = np.exp(scores)
        w /= w.sum(axis=1, keepdims=True)
        return (emb + self.out(w @ self.v(emb))).astype(np.float32)

    def logits(self, context: np.ndarray, agent: int, options: np.ndarray, mask: np.ndarray) -> np.ndarray:
        hidden = _relu(options @ self._opt_w + (context[agent] @ self._ctx_w + self.opt1.b))
        scores = self.opt2(hidden)[:, 0]
        return np.where(mask, scores, np.float32(MASKED)).astype(np.float32)
