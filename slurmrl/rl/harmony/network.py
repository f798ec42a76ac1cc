"""The Harmony actor-critic: an encoder over the jobs to place, a pointer decoder over the nodes.

After Bao et al. ("Deep Learning-based Job Placement in Distributed Machine
Learning Clusters", INFOCOM 2019), which encodes the jobs to place and decodes
one placement per job with attention. Here the encoder embeds the job being
placed and the window of jobs ranked behind it (a shared MLP, mean-pooled
into a context); each node is embedded together with the job's features, and
the decoder's query (job, context, cluster scalars) scores every node with
additive attention (Bahdanau et al., ICLR 2015), used as a pointer over the
nodes as in pointer networks (Vinyals et al., NeurIPS 2015). Decoding is
autoregressive through the cluster state: a job placed earlier in the pass
changes the node rows the next job is decoded from. The critic reads the
query and the mean node embedding. No weight depends on the number of nodes
or the window size.
"""

from __future__ import annotations

import torch
from torch import nn

from slurmrl.rl.harmony.netconfig import HarmonyNetConfig
from slurmrl.rl.network import HIDDEN_GAIN, POLICY_GAIN, VALUE_GAIN, layer_init, masked_logits

__all__ = ["HarmonyNet", "masked_logits"]


class HarmonyNet(nn.Module):
    def __init__(self, cfg: HarmonyNetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        h = cfg.hidden
        self.job_enc = nn.Sequential(nn.Linear(cfg.job_features, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU())
        self.query = nn.Sequential(nn.Linear(2 * h + cfg.global_features, h), nn.ReLU())
        self.node_enc = nn.Sequential(
            nn.Linear(cfg.node_features + cfg.job_features, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU()
        )
        self.attn_node = nn.Linear(h, h)
        self.attn_query = nn.Linear(h, h)
        self.attn_v = nn.Linear(h, 1)
        self.value = nn.Sequential(nn.Linear(2 * h, h), nn.ReLU(), nn.Linear(h, 1))
        for module in self.modules():
            if isinstance(module, nn.Linear):
                layer_init(module, HIDDEN_GAIN)
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
        emb = self.job_enc(window)
        valid = window[..., :1]
        ctx = (emb * valid).sum(dim=1) / valid.sum(dim=1).clamp(min=1.0)
        q = self.query(torch.cat([cur, ctx, glob], dim=1))
        n = nodes.shape[1]
        node_in = torch.cat([nodes, job.unsqueeze(1).expand(-1, n, -1)], dim=2)
        keys = self.node_enc(node_in)
        scores = self.attn_v(torch.tanh(self.attn_node(keys) + self.attn_query(q).unsqueeze(1))).squeeze(-1)
        real = nodes[..., :1]
        pooled = (keys * real).sum(dim=1) / real.sum(dim=1).clamp(min=1.0)
        value = self.value(torch.cat([q, pooled], dim=1)).squeeze(-1)
        return masked_logits(scores, mask), value
