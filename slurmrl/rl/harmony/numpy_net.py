"""The Harmony network's decision path in numpy: what the deployed policy and rollouts run.

Deciding one placement is a few small matrix products; numpy does them
without torch's per-operator overhead and without importing torch at all,
reading the very tensors :class:`~slurmrl.rl.harmony.network.HarmonyNet`
trains, by their state-dict names.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from slurmrl.rl.harmony.features import PlacementObs
from slurmrl.rl.harmony.netconfig import HarmonyNetConfig
from slurmrl.rl.inference import MASKED, _Linear


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


class NumpyHarmony:
    """Masked node logits of one observation from a Harmony state dict."""

    def __init__(self, cfg: HarmonyNetConfig, state: Mapping[str, np.ndarray]) -> None:
        self.cfg = cfg
        try:
            self.job1, self.job2 = _Linear(state, "job_enc.0"), _Linear(state, "job_enc.2")
            self.query = _Linear(state, "query.0")
            self.node1, self.node2 = _Linear(state, "node_enc.0"), _Linear(state, "node_enc.2")
            self.attn_node, self.attn_query = _Linear(state, "attn_node"), _Linear(state, "attn_query")
            self.attn_v = _Linear(state, "attn_v")
        except KeyError as exc:
            raise ValueError(f"the weights have no tensor {exc.args[0]!r}") from None
        fn = cfg.node_features
        # The node encoder reads [node row, job row]; the job part is one product per decision.
        self._node_w, self._job_w = self.node1.w[:fn], self.node1.w[fn:]

    def logits(self, o: PlacementObs) -> np.ndarray:
        cur = _relu(self.job2(_relu(self.job1(o.job))))
        emb = _relu(self.job2(_relu(self.job1(o.window))))
        valid = o.window[:, :1]
        ctx = (emb * valid).sum(axis=0) / max(float(valid.sum()), 1.0)
        q = _relu(self.query(np.concatenate([cur, ctx, o.globals])))
        hidden = _relu(o.nodes @ self._node_w + (o.job @ self._job_w + self.node1.b))
        keys = _relu(self.node2(hidden))
        att = np.tanh(self.attn_node(keys) + self.attn_query(q))
        scores = self.attn_v(att)[:, 0]
        return np.where(o.mask, scores, np.float32(MASKED)).astype(np.float32)
