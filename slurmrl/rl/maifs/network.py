"""The MAIFS actor-critic in torch: shared agent encoder, self-attention between agents, option head, central critic.

* Each agent's job row, joined with the cluster scalars, goes through a shared
  MLP (parameter sharing across agents, as in MAPPO, Yu et al., NeurIPS 2022
  Datasets and Benchmarks).
* One single-head scaled dot-product self-attention layer (Vaswani et al.,
  NeurIPS 2017) over the window, padding agents masked out as keys, adds to
  each agent's embedding a message summarising what the others want: the
  attention-based communication of Multi-Actor-Attention-Critic (Iqbal & Sha,
  ICML 2019) and TarMAC (Das et al., ICML 2019), here in the actor.
* Each agent scores each of its (GPU count, target) options from the option's
  row joined with its own context; masked options get ``MASKED``.
* The critic (training only) reads every agent's context, mean- and
  max-pooled, and the cluster scalars: centralised training, decentralised
  execution.

No weight depends on the window size, the number of options or of racks.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from slurmrl.rl.maifs.netconfig import MaifsNetConfig
from slurmrl.rl.network import HIDDEN_GAIN, POLICY_GAIN, VALUE_GAIN, layer_init, masked_logits


class MaifsNet(nn.Module):
    def __init__(self, cfg: MaifsNetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        h = cfg.hidden
        self.job_enc = nn.Sequential(
            nn.Linear(cfg.job_features + cfg.global_features, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU()
        )
        self.attn_q, self.attn_k, self.attn_v, self.attn_out = (nn.Linear(h, h) for _ in range(4))
        self.option = nn.Sequential(nn.Linear(cfg.option_features + h, h), nn.ReLU(), nn.Linear(h, 1))
        self.value = nn.Sequential(nn.Linear(2 * h + cfg.global_features, h), nn.ReLU(), nn.Linear(h, 1))
        for module in self.modules():
            if isinstance(module, nn.Linear):
                layer_init(module, HIDDEN_GAIN)
        for module in (self.attn_q, self.attn_k, self.attn_v, self.attn_out):
            layer_init(module, 1.0)  # no ReLU after them
        layer_init(self.option[-1], POLICY_GAIN)
        layer_init(self.value[-1], VALUE_GAIN)

    def encode(self, jobs: torch.Tensor, glob: torch.Tensor) -> torch.Tensor:
        """Agent contexts ``[B, K, h]`` from ``jobs`` [B, K, F_j] and ``glob`` [B, S]."""
        k = jobs.shape[1]
        emb = self.job_enc(torch.cat([jobs, glob.unsqueeze(1).expand(-1, k, -1)], dim=2))
        valid = jobs[..., 0] > 0.5  # [B, K]
        scores = self.attn_q(emb) @ self.attn_k(emb).transpose(1, 2) / math.sqrt(emb.shape[2])
        scores = scores.masked_fill(~valid.unsqueeze(1), -1e9)
        weights = torch.softmax(scores, dim=2)
        return emb + self.attn_out(weights @ self.attn_v(emb))

    def forward(
        self, jobs: torch.Tensor, glob: torch.Tensor, options: torch.Tensor, masks: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``[B, K, O]`` and values ``[B]``; ``options`` [B, K, O, F_o], ``masks`` [B, K, O]."""
        ctx = self.encode(jobs, glob)
        o = options.shape[2]
        rows = torch.cat([options, ctx.unsqueeze(2).expand(-1, -1, o, -1)], dim=3)
        logits = self.option(rows).squeeze(-1)
        valid = jobs[..., :1]  # [B, K, 1]
        count = valid.sum(dim=1).clamp(min=1.0)
        mean = (ctx * valid).sum(dim=1) / count
        big = torch.where(valid > 0.5, ctx, torch.full_like(ctx, -1e9)).amax(dim=1)
        big = torch.where(big > -1e8, big, torch.zeros_like(big))
        value = self.value(torch.cat([mean, big, glob], dim=1)).squeeze(-1)
        return masked_logits(logits, masks), value
