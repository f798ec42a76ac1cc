"""Each learned network's constructor arguments and the tensors they imply, without torch.

A checkpoint is read by the daemon and by evaluation, which decide in numpy
and need not pay for importing torch; only training builds the torch modules.
Every config is saved with its checkpoint (``config.json``'s ``net``) and
names each layer's weight shape, so weights that do not match are refused by
name instead of failing inside a matrix product at the first decision.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol, Self

from slurmrl.rl.checkpoints import layer_shapes
from slurmrl.rl.config_fields import whole_fields


class _Layered(Protocol):
    def layers(self) -> dict[str, tuple[int, ...]]: ...


@dataclass(frozen=True)
class _Config:
    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """config.json's ``net``: every size a whole number in range, no field unknown."""
        return whole_fields(cls, data, "net")


@dataclass(frozen=True)
class NetConfig(_Config):
    """TopDRL: job rows, cluster grid channels, global scalars."""

    job_features: int
    cluster_channels: int
    global_features: int
    hidden: int = 64
    conv: int = 16

    def layers(self) -> dict[str, tuple[int, ...]]:
        h, c = self.hidden, self.conv
        return {
            "grid.0": (c, self.cluster_channels, 3, 3),
            "grid.2": (c, c, 3, 3),
            "cluster_mlp.0": (h, 4 * c + self.global_features),
            "job_mlp.0": (h, self.job_features),
            "job_mlp.2": (h, h),
            "score.0": (h, 3 * h),
            "score.2": (1, h),
            "wait.0": (h, 2 * h),
            "wait.2": (1, h),
            "value.0": (h, 3 * h),
            "value.2": (1, h),
        }


@dataclass(frozen=True)
class HarmonyNetConfig(_Config):
    """Harmony: the job being placed (and its window), node rows, global scalars."""

    job_features: int
    node_features: int
    global_features: int
    hidden: int = 64

    def layers(self) -> dict[str, tuple[int, ...]]:
        h, fj, fn, s = self.hidden, self.job_features, self.node_features, self.global_features
        return {
            "job_enc.0": (h, fj),
            "job_enc.2": (h, h),
            "query.0": (h, 2 * h + s),
            "node_enc.0": (h, fn + fj),
            "node_enc.2": (h, h),
            "attn_node": (h, h),
            "attn_query": (h, h),
            "attn_v": (1, h),
            "value.0": (h, 2 * h),
            "value.2": (1, h),
        }


@dataclass(frozen=True)
class MaifsNetConfig(_Config):
    """MAIFS: agent (job) rows, option rows, global scalars."""

    job_features: int
    option_features: int
    global_features: int
    hidden: int = 64

    def layers(self) -> dict[str, tuple[int, ...]]:
        h, fj, fo, s = self.hidden, self.job_features, self.option_features, self.global_features
        return {
            "job_enc.0": (h, fj + s),
            "job_enc.2": (h, h),
            "attn_q": (h, h),
            "attn_k": (h, h),
            "attn_v": (h, h),
            "attn_out": (h, h),
            "option.0": (h, fo + h),
            "option.2": (1, h),
            "value.0": (h, 2 * h + s),
            "value.2": (1, h),
        }


def weight_shapes(cfg: _Layered) -> dict[str, tuple[int, ...]]:
    """Every tensor of a network's state dict, by name, with the shape ``cfg`` gives it."""
    return layer_shapes(cfg.layers())
