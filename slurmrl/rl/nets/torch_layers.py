"""The torch building blocks the learned networks share: initialisation, MLPs, convolutions, attention.

Each block keeps ``nn.Sequential``'s numbering (a Linear at 0, its ReLU at 1,
...), so the state-dict names, and with them every checkpoint, stay as they
were when the networks spelled these layers out by hand. The numpy twins are
in :mod:`slurmrl.rl.nets.numpy_layers`.
"""

from __future__ import annotations

import itertools
import math
from typing import TypeVar

import torch
from torch import nn

from slurmrl.rl.nets.numpy_layers import MASKED

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


def init_hidden(net: nn.Module) -> None:
    """Every Linear and Conv2d of ``net`` at the hidden gain; output layers are re-initialised after."""
    for module in net.modules():
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            layer_init(module, HIDDEN_GAIN)


def mlp(*sizes: int, relu_out: bool = True) -> nn.Sequential:
    """Linear layers ``sizes[0] -> sizes[1] -> ...`` with a ReLU after each (after the last if ``relu_out``)."""
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(fan_in, fan_out))
        if relu_out or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def conv3x3(*channels: int) -> nn.Sequential:
    """3x3, padding-1 convolutions ``channels[0] -> channels[1] -> ...``, each followed by a ReLU."""
    layers: list[nn.Module] = []
    for fan_in, fan_out in itertools.pairwise(channels):
        layers += [nn.Conv2d(fan_in, fan_out, kernel_size=3, padding=1), nn.ReLU()]
    return nn.Sequential(*layers)


def masked_mean(x: torch.Tensor, valid: torch.Tensor, dim: int) -> torch.Tensor:
    """Mean of ``x`` over ``dim`` counting only rows where ``valid`` (0/1, broadcastable) is 1."""
    return (x * valid).sum(dim=dim) / valid.sum(dim=dim).clamp(min=1.0)


def dot_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Single-head scaled dot-product attention ``[B, K, h]``; keys where ``valid`` [B, K] is False are masked."""
    scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[2])
    scores = scores.masked_fill(~valid.unsqueeze(1), -1e9)
    return torch.softmax(scores, dim=2) @ v


def additive_scores(keys: torch.Tensor, query: torch.Tensor, v: nn.Linear) -> torch.Tensor:
    """Additive (Bahdanau) attention scores ``[B, N]`` of projected ``keys`` [B, N, h] for ``query`` [B, h]."""
    return v(torch.tanh(keys + query.unsqueeze(1))).squeeze(-1)


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Infeasible actions get a large negative logit (probability ~0, gradients stay finite)."""
    return torch.where(mask, logits, torch.full_like(logits, MASKED))
