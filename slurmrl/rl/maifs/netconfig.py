"""The MAIFS network's constructor arguments and tensor shapes, without torch.

Read by the deployed policy (numpy inference) and by the trainer alike, so a
checkpoint whose weights do not match its config.json is refused by name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from slurmrl.rl.checkpoints import layer_shapes


@dataclass(frozen=True)
class MaifsNetConfig:
    job_features: int
    option_features: int
    global_features: int
    hidden: int = 64

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def weight_shapes(cfg: MaifsNetConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor of the state dict by name, with the shape ``cfg`` implies."""
    h, fj, fo, s = cfg.hidden, cfg.job_features, cfg.option_features, cfg.global_features
    layers = {
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
    return layer_shapes(layers)
