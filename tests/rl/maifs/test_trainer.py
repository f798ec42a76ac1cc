"""A short MAPPO run: it updates the weights, logs PPO's diagnostics and leaves a loadable checkpoint."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from slurmrl.errors import ConfigError
from slurmrl.rl.maifs.env import EnvConfig
from slurmrl.rl.maifs.policy import MaifsPolicy
from slurmrl.rl.maifs.trainer import MaifsConfig, config_from_request, train
from tests.rl.maifs.common import small_workload


def test_a_short_training_run(tmp_path: Path) -> None:
    cfg = MaifsConfig(
        env=EnvConfig(episode_jobs=40),
        updates=2,
        episodes_per_update=2,
        hidden=16,
        eval_every=1,
        eval_jobs=40,
    )
    result = train(cfg, tmp_path / "run", workloads=[small_workload(60)])
    assert result.updates == 2 and result.steps > 0
    rows = list(csv.DictReader((tmp_path / "run" / "log.csv").open()))
    assert [r["update"] for r in rows] == ["1", "2"]
    for col in ("approx_kl", "clip_fraction", "explained_variance", "eval_avg_jct", "decision_agents"):
        assert rows[0][col] != ""
    policy = MaifsPolicy.from_dir(tmp_path / "run")
    assert policy.net.cfg.hidden == 16
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["totals"]["updates"] == 2 and run["maifs"]["env"]["elastic"] == "fraction:0.5"
    with pytest.raises(ConfigError, match="already holds"):
        train(cfg, tmp_path / "run", workloads=[small_workload(60)])


def test_cli_overrides_reach_the_config() -> None:
    cfg = config_from_request(("philly-512-week1",), steps=10_000, seed=2, gamma=0.9, wall_limit=60.0)
    assert cfg.updates == 5 and cfg.seed == 2 and cfg.gamma == 0.9 and cfg.wall_limit_s == 60.0
    assert cfg.learning_rate == MaifsConfig().learning_rate
