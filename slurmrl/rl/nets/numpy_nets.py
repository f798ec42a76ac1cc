"""The learned networks' decision paths in numpy, composed from :mod:`slurmrl.rl.nets.numpy_layers`.

Only what a decision needs is computed (no value heads). Results match the
torch modules of :mod:`slurmrl.rl.nets.torch_nets` to float32 rounding;
:func:`slurmrl.rl.inference.pick` turns logits into a decision that does not
depend on the CPU's rounding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from slurmrl.rl.nets.config import HarmonyNetConfig, MaifsNetConfig, NetConfig
from slurmrl.rl.nets.numpy_layers import (
    MLP,
    ConvStack,
    Linear,
    SplitLinear,
    State,
    additive_scores,
    dot_attention,
    load,
    mask_logits,
    masked_mean,
    relu,
)

if TYPE_CHECKING:
    from slurmrl.rl.harmony.features import PlacementObs


class NumpyTopDRL:
    """Masked logits of one observation (last entry = wait) from a TopDRL state dict."""

    def __init__(self, cfg: NetConfig, state: State) -> None:
        self.cfg = cfg
        h = cfg.hidden
        self.grid = load(lambda: ConvStack(state, "grid", 2))
        self.cluster = load(lambda: MLP(state, "cluster_mlp", 1))
        self.job = load(lambda: MLP(state, "job_mlp", 2))
        # The score head sees [job embedding, cluster, mean job]: the context part once.
        self.score1 = load(lambda: SplitLinear(state, "score.0", h))
        self.score2 = load(lambda: Linear(state, "score.2"))
        self.wait = load(lambda: MLP(state, "wait", 2, relu_out=False))

    def logits(self, jobs: np.ndarray, grid: np.ndarray, glob: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``jobs`` [K, F], ``grid`` [C, R, N, G], ``glob`` [S], ``mask`` [K + 1] -> [K + 1]."""
        planes = np.ascontiguousarray(grid.transpose(1, 2, 3, 0))  # [R, N, G, C]
        feat = self.grid(planes)  # [R, N, G, c]
        cells = feat.reshape(feat.shape[0], -1, feat.shape[3])
        per_rack = np.concatenate([cells.mean(axis=1), cells.max(axis=1)], axis=1)  # [R, 2c]
        cl = self.cluster(np.concatenate([per_rack.mean(axis=0), per_rack.max(axis=0), glob]))  # [h]
        emb = self.job(jobs)  # [K, h]
        ctx = np.concatenate([cl, masked_mean(emb, jobs[:, :1])])
        scores = self.score2(relu(self.score1(emb, ctx)))[:, 0]
        return mask_logits(np.concatenate([scores, self.wait(ctx)]), mask)


class NumpyHarmony:
    """Masked node logits of one placement observation from a Harmony state dict."""

    def __init__(self, cfg: HarmonyNetConfig, state: State) -> None:
        self.cfg = cfg
        self.job_enc = load(lambda: MLP(state, "job_enc", 2))
        self.query = load(lambda: MLP(state, "query", 1))
        # The node encoder reads [node row, job row]: the job part once per decision.
        self.node1 = load(lambda: SplitLinear(state, "node_enc.0", cfg.node_features))
        self.node2 = load(lambda: Linear(state, "node_enc.2"))
        self.attn_node = load(lambda: Linear(state, "attn_node"))
        self.attn_query = load(lambda: Linear(state, "attn_query"))
        self.attn_v = load(lambda: Linear(state, "attn_v"))

    def logits(self, o: PlacementObs) -> np.ndarray:
        cur = self.job_enc(o.job)
        ctx = masked_mean(self.job_enc(o.window), o.window[:, :1])
        q = self.query(np.concatenate([cur, ctx, o.globals]))
        keys = relu(self.node2(relu(self.node1(o.nodes, o.job))))
        scores = additive_scores(self.attn_node(keys), self.attn_query(q), self.attn_v)
        return mask_logits(scores, o.mask)


class NumpyMaifs:
    """Agent contexts and masked option logits from a MAIFS state dict; the critic is not computed."""

    def __init__(self, cfg: MaifsNetConfig, state: State) -> None:
        self.cfg = cfg
        self.enc = load(lambda: MLP(state, "job_enc", 2))
        self.q, self.k, self.v, self.out = (
            load(lambda n=n: Linear(state, n)) for n in ("attn_q", "attn_k", "attn_v", "attn_out")
        )
        # The option head reads [option row, agent context]: the context part once per agent.
        self.opt1 = load(lambda: SplitLinear(state, "option.0", cfg.option_features))
        self.opt2 = load(lambda: Linear(state, "option.2"))

    def encode(self, jobs: np.ndarray, glob: np.ndarray) -> np.ndarray:
        k = jobs.shape[0]
        emb = self.enc(np.concatenate([jobs, np.broadcast_to(glob, (k, glob.size))], axis=1))
        message = dot_attention(self.q(emb), self.k(emb), self.v(emb), jobs[:, 0] > 0.5)
        return (emb + self.out(message)).astype(np.float32)

    def logits(self, context: np.ndarray, agent: int, options: np.ndarray, mask: np.ndarray) -> np.ndarray:
        scores = self.opt2(relu(self.opt1(options, context[agent])))[:, 0]
        return mask_logits(scores, mask)
