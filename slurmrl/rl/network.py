"""The TopDRL-style multi-branch network: a CNN over the GPU grid, a job branch, a pointer head.

Branches, after TopDRL (Pham et al., "TopDRL: topology-aware deep RL for GPU
job scheduling"): the cluster grid goes through 2-D convolutions over each
rack's node x GPU plane, pooled over GPUs, nodes and racks; each job row goes
through the same small MLP (a kernel-1 1-D convolution over the window).
The head scores each job from its own embedding joined with the cluster's,
so one network serves any window size K and any cluster shape: the number of
racks, nodes and GPUs only changes how much is pooled, not the weights.
"""

from __future__ import annotations

import math
from typing import TypeVar

import torch
from torch import nn

from slurmrl.rl.netconfig import NetConfig

__all__ = ["NetConfig", "TopDRLNet", "layer_init"]

HIDDEN_GAIN = math.sqrt(2.0)  # layers followed by a ReLU
POLICY_GAIN = 0.01  # layers giving logits: a near-uniform policy at the start
VALUE_GAIN = 1.0  # the layer giving the value

_Layer = TypeVar("_Layer", bound=nn.Module)


def layer_init(layer: _Layer, gain: float = HIDDEN_GAIN, bias: float = 0.0) -> _Layer:
    """Orthogonal weights scaled by ``gain`` and a constant bias; returns ``layer``.

    The convention of CleanRL's ppo.py (github.com/vwxyzjn/cleanrl, ``layer_init``):
    sqrt(2) for hidden layers, 0.01 for the policy output, 1 for the value output,
    zero biases. Convolution kernels are made orthogonal over their flattened shape.
    """
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.constant_(layer.bias, bias)
    return layer


class TopDRLNet(nn.Module):
    def __init__(self, cfg: NetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        h, c = cfg.hidden, cfg.conv
        self.grid = nn.Sequential(
            nn.Conv2d(cfg.cluster_channels, c, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(c, c, kernel_size=3, padding=1),
            nn.ReLU(),
        )
        self.cluster_mlp = nn.Sequential(nn.Linear(4 * c + cfg.global_features, h), nn.ReLU())
        self.job_mlp = nn.Sequential(nn.Linear(cfg.job_features, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU())
        self.score = nn.Sequential(nn.Linear(3 * h, h), nn.ReLU(), nn.Linear(h, 1))
        self.wait = nn.Sequential(nn.Linear(2 * h, h), nn.ReLU(), nn.Linear(h, 1))
        self.value = nn.Sequential(nn.Linear(3 * h, h), nn.ReLU(), nn.Linear(h, 1))
        self._init_weights()

    def _init_weights(self) -> None:
        """Orthogonal init (:func:`layer_init`); the layers and their shapes stay as declared."""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                layer_init(module, HIDDEN_GAIN)
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

    def forward(
        self, jobs: torch.Tensor, grid: torch.Tensor, glob: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``[B, K + 1]`` (last = wait) and values ``[B]``; masking is the caller's."""
        cl = self._cluster(grid, glob)  # [b, h]
        emb = self.job_mlp(jobs)  # [b, k, h]
        valid = jobs[..., :1]  # column 0 marks real rows
        count = valid.sum(dim=1).clamp(min=1.0)
        mean_job = (emb * valid).sum(dim=1) / count
        max_job = (emb * valid).amax(dim=1)
        k = jobs.shape[1]
        ctx = torch.cat([cl, mean_job], dim=1)
        scores = self.score(torch.cat([emb, ctx.unsqueeze(1).expand(-1, k, -1)], dim=2)).squeeze(-1)
        wait = self.wait(ctx)
        value = self.value(torch.cat([cl, mean_job, max_job], dim=1)).squeeze(-1)
        return torch.cat([scores, wait], dim=1), value


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Infeasible actions get a large negative logit (probability ~0, gradients stay finite)."""
    return torch.where(mask, logits, torch.full_like(logits, -1e8))
