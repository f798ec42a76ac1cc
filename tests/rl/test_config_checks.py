from __future__ import annotations

import pytest

from slurmrl.errors import ConfigError
from slurmrl.rl.harmony.train import HarmonyConfig
from slurmrl.rl.maifs.trainer import MaifsConfig
from slurmrl.rl.ppo import PPOConfig

BAD = [
    (PPOConfig, {"gamma": 1.5}),
    (PPOConfig, {"learning_rate": -1.0}),
    (PPOConfig, {"total_steps": 0}),
    (PPOConfig, {"target_kl": -1.0}),
    (PPOConfig, {"wall_limit_s": -5.0}),
    (HarmonyConfig, {"gamma": -0.1}),
    (HarmonyConfig, {"learning_rate": -1e-3}),
    (HarmonyConfig, {"episodes": 0}),
    (MaifsConfig, {"gae_lambda": 2.0}),
    (MaifsConfig, {"updates": 0}),
    (MaifsConfig, {"target_kl": 0.0}),
]


@pytest.mark.parametrize(("make", "bad"), BAD, ids=[f"{m.__name__}-{next(iter(b))}" for m, b in BAD])
def test_a_training_config_refuses_what_would_break_training_by_name(make, bad: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match=next(iter(bad))):
        make(**bad)


@pytest.mark.parametrize("make", [PPOConfig, HarmonyConfig, MaifsConfig])
def test_the_defaults_and_an_off_target_kl_pass(make) -> None:
    make()
    if make is not HarmonyConfig:
        make(target_kl=None)
