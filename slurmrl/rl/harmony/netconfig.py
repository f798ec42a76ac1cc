"""The Harmony network's constructor arguments and tensor shapes, without torch.

Read by the deployed policy (numpy inference) and by the trainer alike, so a
checkpoint whose weights do not match its config.json is refused by name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from slurmrl.rl.checkpoints import layer_shapes


@dataclass(frozen=True)
class HarmonyNetConfig:
    job_features: int
    node_features: int
    global_features: int
    hidden: int = 64

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def weight_shapes(cfg: HarmonyNetConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor of the state dict by name, with the shape ``cfg`` implies."""
    h, fj, fn, s = cfg.hidden, cfg.job_features, cfg.node_features, cfg.global_features
    layers = {
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
    return layer_shapes(layers)
