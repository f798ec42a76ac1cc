"""The TopDRL network's constructor arguments and the tensors they imply, without torch.

A checkpoint is read by the daemon and by evaluation, which decide in numpy
(:mod:`slurmrl.rl.inference`) and need not pay for importing torch; only
training builds the torch module (:mod:`slurmrl.rl.network`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from slurmrl.rl.checkpoints import layer_shapes


@dataclass(frozen=True)
class NetConfig:
    """Constructor arguments; saved with every checkpoint."""

    job_features: int
    cluster_channels: int
    global_features: int
    hidden: int = 64
    conv: int = 16

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def weight_shapes(cfg: NetConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor of the network's state dict, by name, with the shape ``cfg`` gives it.

    Checked against each checkpoint before it is used, so weights that do not
    match their config.json are refused by name instead of failing inside a
    matrix product at the first decision.
    """
    h, c = cfg.hidden, cfg.conv
    layers = {
        "grid.0": (c, cfg.cluster_channels, 3, 3),
        "grid.2": (c, c, 3, 3),
        "cluster_mlp.0": (h, 4 * c + cfg.global_features),
        "job_mlp.0": (h, cfg.job_features),
        "job_mlp.2": (h, h),
        "score.0": (h, 3 * h),
        "score.2": (1, h),
        "wait.0": (h, 2 * h),
        "wait.2": (1, h),
        "value.0": (h, 3 * h),
        "value.2": (1, h),
    }
    return layer_shapes(layers)
