"""The learned networks in torch (training), composed from :mod:`slurmrl.rl.nets.torch_layers`.

* :class:`TopDRLNet`, after TopDRL (Pham et al., "TopDRL: topology-aware deep
  RL for GPU job scheduling"): 2-D convolutions over each rack's node x GPU
  plane, pooled over GPUs, nodes and racks; a shared MLP per job row; a
  pointer head scoring each job against the cluster, plus a wait logit.
* :class:`HarmonyNet`, after Bao et al. ("Deep Learning-based Job Placement in
  Distributed Machine Learning Clusters", INFOCOM 2019): an encoder over the
  job to place and its window, node rows embedded with the job, scored by
  additive attention (Bahdanau et al., ICLR 2015) used as a pointer over the
  nodes (Vinyals et al., NeurIPS 2015).
* :class:`MaifsNet`: a shared agent encoder (parameter sharing as in MAPPO, Yu
  et al., NeurIPS 2022), one scaled dot-product self-attention layer between
  agents (Vaswani et al., NeurIPS 2017; the attention-based communication of
  Iqbal & Sha, ICML 2019 and TarMAC, Das et al., ICML 2019), an option head
  per agent and a central critic over pooled contexts.

No weight depends on the window size, the number of nodes, options or racks.
Attribute names are the state-dict names checkpoints store; do not rename.
"""

from __future__ import annotations

import torch
from torch import nn

from slurmrl.rl.nets.config import HarmonyNetConfig, MaifsNetConfig, NetConfig
from slurmrl.rl.nets.torch_layers import (
    POLICY_GAIN,
    VALUE_GAIN,
    additive_scores,
    conv3x3,
    dot_attention,
    init_hidden,
    layer_init,
    masked_logits,
    masked_mean,
    mlp,
)


class TopDRLNet(nn.Module):
    def __init__(self, cfg: NetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        h, c = cfg.hidden, cfg.conv
        self.grid = conv3x3(cfg.cluster_channels, c, c)
        self.cluster_mlp = mlp(4 * c + cfg.global_features, h)
        self.job_mlp = mlp(cfg.job_features, h, h)
        self.score = mlp(3 * h, h, 1, relu_out=False)
        self.wait = mlp(2 * h, h, 1, relu_out=False)
        self.value = mlp(3 * h, h, 1, relu_out=False)
        init_hidden(self)
        layer_init(self.score[-1], POLICY_GAIN)  # per-job logits
        layer_init(self.wait[-1], POLICY_GAIN)  # the wait logit
        layer_init(self.value[-1], VALUE_GAIN)

    def _cluster(self, grid: torch.Tensor, glob: torch.Tensor) -> torch.Tensor:
        b, ch, r, n, g = grid.shape
        planes = grid.permute(0, 2, 1, 3, 4).reshape(b * r, ch, n, g)
        feat = self.grid(planes)  # [b*r, c, n, g]
        per_rack = torch.cat([feat.mean(dim=(2, 3)), feat.amax(dim=(2, 3))], dim=1).view(b, r, -1)
        pooled = torch.cat([per_rack.mean(dim=1), per_rack.amax(dim=1)], dim=1)  # [b, 4c]
        return self.cluster_mlp(torch.cat([pooled, glob], dim=1))

    def _embed(
        self, jobs: torch.Tensor, grid: torch.Tensor, glob: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The cluster ``[b, h]``, the job rows ``[b, k, h]``, and their masked mean and max ``[b, h]``."""
        cl = self._cluster(grid, glob)
        emb = self.job_mlp(jobs)
        valid = jobs[..., :1]  # column 0 marks real rows
        return cl, emb, masked_mean(emb, valid, dim=1), (emb * valid).amax(dim=1)

    def forward(
        self, jobs: torch.Tensor, grid: torch.Tensor, glob: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``[B, K + 1]`` (last = wait) and values ``[B]``; masking is the caller's."""
        cl, emb, mean_job, max_job = self._embed(jobs, grid, glob)
        k = jobs.shape[1]
        ctx = torch.cat([cl, mean_job], dim=1)
        scores = self.score(torch.cat([emb, ctx.unsqueeze(1).expand(-1, k, -1)], dim=2)).squeeze(-1)
        wait = self.wait(ctx)
        value = self.value(torch.cat([cl, mean_job, max_job], dim=1)).squeeze(-1)
        return torch.cat([scores, wait], dim=1), value

    def values(self, jobs: torch.Tensor, grid: torch.Tensor, glob: torch.Tensor) -> torch.Tensor:
        """:meth:`forward`'s values alone, for a separate critic: its per-job scores are never read."""
        cl, _, mean_job, max_job = self._embed(jobs, grid, glob)
        return self.value(torch.cat([cl, mean_job, max_job], dim=1)).squeeze(-1)


class HarmonyNet(nn.Module):
    def __init__(self, cfg: HarmonyNetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        h = cfg.hidden
        self.job_enc = mlp(cfg.job_features, h, h)
        self.query = mlp(2 * h + cfg.global_features, h)
        self.node_enc = mlp(cfg.node_features + cfg.job_features, h, h)
        self.attn_node = nn.Linear(h, h)
        self.attn_query = nn.Linear(h, h)
        self.attn_v = nn.Linear(h, 1)
        self.value = mlp(2 * h, h, 1, relu_out=False)
        init_hidden(self)
        layer_init(self.attn_v, POLICY_GAIN)
        layer_init(self.value[-1], VALUE_GAIN)

    def forward(
        self,
        job: torch.Tensor,
        window: torch.Tensor,
        nodes: torch.Tensor,
        glob: torch.Tensor,
        mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked node logits ``[B, N]`` and values ``[B]``.

        ``job`` [B, Fj], ``window`` [B, K, Fj], ``nodes`` [B, N, Fn], ``glob`` [B, S],
        ``mask`` [B, N] bool (nodes that can host the job).
        """
        cur = self.job_enc(job)
        ctx = masked_mean(self.job_enc(window), window[..., :1], dim=1)
        q = self.query(torch.cat([cur, ctx, glob], dim=1))
        n = nodes.shape[1]
        keys = self.node_enc(torch.cat([nodes, job.unsqueeze(1).expand(-1, n, -1)], dim=2))
        scores = additive_scores(self.attn_node(keys), self.attn_query(q), self.attn_v)
        pooled = masked_mean(keys, nodes[..., :1], dim=1)
        value = self.value(torch.cat([q, pooled], dim=1)).squeeze(-1)
        return masked_logits(scores, mask), value


class MaifsNet(nn.Module):
    def __init__(self, cfg: MaifsNetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        h = cfg.hidden
        self.job_enc = mlp(cfg.job_features + cfg.global_features, h, h)
        self.attn_q, self.attn_k, self.attn_v, self.attn_out = (nn.Linear(h, h) for _ in range(4))
        self.option = mlp(cfg.option_features + h, h, 1, relu_out=False)
        self.value = mlp(2 * h + cfg.global_features, h, 1, relu_out=False)
        init_hidden(self)
        for module in (self.attn_q, self.attn_k, self.attn_v, self.attn_out):
            layer_init(module, 1.0)  # no ReLU after them
        layer_init(self.option[-1], POLICY_GAIN)
        layer_init(self.value[-1], VALUE_GAIN)

    def encode(self, jobs: torch.Tensor, glob: torch.Tensor) -> torch.Tensor:
        """Agent contexts ``[B, K, h]`` from ``jobs`` [B, K, F_j] and ``glob`` [B, S]."""
        k = jobs.shape[1]
        emb = self.job_enc(torch.cat([jobs, glob.unsqueeze(1).expand(-1, k, -1)], dim=2))
        message = dot_attention(self.attn_q(emb), self.attn_k(emb), self.attn_v(emb), jobs[..., 0] > 0.5)
        return emb + self.attn_out(message)

    def forward(
        self, jobs: torch.Tensor, glob: torch.Tensor, options: torch.Tensor, masks: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``[B, K, O]`` and values ``[B]``; ``options`` [B, K, O, F_o], ``masks`` [B, K, O]."""
        ctx = self.encode(jobs, glob)
        o = options.shape[2]
        rows = torch.cat([options, ctx.unsqueeze(2).expand(-1, -1, o, -1)], dim=3)
        logits = self.option(rows).squeeze(-1)
        valid = jobs[..., :1]  # [B, K, 1]
        mean = masked_mean(ctx, valid, dim=1)
        big = torch.where(valid > 0.5, ctx, torch.full_like(ctx, -1e9)).amax(dim=1)
        big = torch.where(big > -1e8, big, torch.zeros_like(big))
        value = self.value(torch.cat([mean, big, glob], dim=1)).squeeze(-1)
        return masked_logits(logits, masks), value
