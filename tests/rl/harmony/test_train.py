"""A short training run: logs, reward sources, a loadable checkpoint."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from slurmrl.errors import ConfigError
from slurmrl.rl.harmony.env import EnvConfig
from slurmrl.rl.harmony.policy import HarmonyPolicy
from slurmrl.rl.harmony.train import HarmonyConfig, reads_simulator, train
from tests.rl.harmony.common import random_net, small_workload


def test_reward_sources_follow_warmup_and_period() -> None:
    cfg = HarmonyConfig(warmup_real=2, real_every=3)
    assert [reads_simulator(cfg, e) for e in range(1, 9)] == [
        True,
        True,
        False,
        False,
        True,
        False,
        False,
        True,
    ]
    assert all(reads_simulator(HarmonyConfig(real_every=1), e) for e in range(1, 20))
    with pytest.raises(ConfigError):
        reads_simulator(HarmonyConfig(real_every=0), 1)


def test_short_training_run(tmp_path: Path) -> None:
    cfg = HarmonyConfig(
        env=EnvConfig(episode_jobs=30),
        episodes=6,
        warmup_real=2,
        real_every=2,
        eval_every=3,
        eval_jobs=30,
        updates_per_episode=2,
        batch_size=32,
        reward_fit_steps=20,
        hidden=16,
    )
    result = train(cfg, tmp_path / "run", workloads=[small_workload(60, 1)])
    rows = list(csv.DictReader((tmp_path / "run" / "log.csv").open()))
    assert [r["reward_source"] for r in rows] == [
        "simulator",
        "simulator",
        "model",
        "simulator",
        "model",
        "simulator",
    ]
    assert result.real_rewards + result.predicted_rewards == result.decisions > 0
    assert int(rows[-1]["real_rewards"]) == result.real_rewards
    assert rows[2]["eval_avg_jct"] and rows[5]["eval_avg_jct"]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["training"]["seed"] == 0
    assert HarmonyPolicy.from_dir(tmp_path / "run").placement.obs == cfg.env.obs
    with pytest.raises(ConfigError, match="already holds"):
        train(cfg, tmp_path / "run", workloads=[small_workload(60, 1)])


def test_a_led_run_starts_as_its_heuristic(tmp_path: Path) -> None:
    """Led by ``type-aware``: the zeroed pointer is checked on the yardstick before episode 1 and is the heuristic."""
    from slurmrl.sim.experiment import SimSettings, run_policy

    workload = small_workload(60, 1)
    env = EnvConfig(episode_jobs=30, ordering="sjf-limit", fallback="type-aware", lead=True)
    cfg = HarmonyConfig(env=env, episodes=2, eval_every=5, eval_jobs=60, updates_per_episode=2, batch_size=32)
    train(cfg, tmp_path / "run", workloads=[workload])
    rows = list(csv.DictReader((tmp_path / "run" / "log.csv").open()))
    assert [r["episode"] for r in rows] == ["0", "1", "2"] and rows[0]["eval_avg_jct"]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["lead"] is True and config["placement"] == "type-aware"
    assert config["lead_bonus"] == env.lead_bonus
    assert config["training"]["episode"] == 0  # no later check: the kept weights are the untrained ones
    full = SimSettings(speed_model="full")
    heuristic = run_policy(workload, "sjf-limit", placement="type-aware", settings=full)
    assert float(rows[0]["eval_avg_jct"]) == pytest.approx(heuristic.summary["avg_jct"], abs=0.05)
    policy = HarmonyPolicy.from_dir(tmp_path / "run")
    assert policy.placement.lead and policy.placement.fallback.name == "type-aware"
    assert run_policy(workload, policy, settings=full).records == heuristic.records


def test_validate_replays_training_side_scenarios_whole_and_refuses_held_out_ones(tmp_path: Path) -> None:
    from slurmrl.rl.harmony.env import PlacementEnv
    from slurmrl.rl.harmony.train import check_windows
    from slurmrl.sim.experiment import prepare

    env = PlacementEnv(EnvConfig(episode_jobs=30), workloads=[small_workload(60, 1)])
    whole = check_windows(HarmonyConfig(validate=("gavel-msr-b436b2",)), env)
    assert [len(w.trace.jobs) for w in whole] == [
        len(prepare(scenario="gavel-msr-b436b2", seed=0).trace.jobs)
    ]
    assert [len(w.trace.jobs) for w in check_windows(HarmonyConfig(eval_jobs=25), env)] == [25]
    assert check_windows(HarmonyConfig(eval_every=0, validate=("gavel-msr-b436b2",)), env) == []
    with pytest.raises(ConfigError, match="not on the training side"):
        train(
            HarmonyConfig(validate=("gavel-msr-6214e9",)), tmp_path / "run", workloads=[small_workload(60, 1)]
        )
    assert not (tmp_path / "run").exists()


def test_forced_decisions_stay_out_of_the_replay_when_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With ``replay_forced=False`` only decisions with two or more nodes to choose from are replayed."""
    from slurmrl.rl.harmony import train as train_module

    stored: list[list[object]] = []
    real_extend = train_module.ReplayBuffer.extend

    def spy(self, items):
        items = list(items)
        stored.append([obs.mask.sum() for obs, *_ in items])
        return real_extend(self, items)

    monkeypatch.setattr(train_module.ReplayBuffer, "extend", spy)
    env = EnvConfig(episode_jobs=40, ordering="sjf-limit", fallback="type-aware", lead=True, reward="jct")
    for forced, out in ((True, "all"), (False, "choices")):
        stored.clear()
        cfg = HarmonyConfig(
            env=env, episodes=2, eval_every=0, updates_per_episode=1, batch_size=8, replay_forced=forced
        )
        train(cfg, tmp_path / out, workloads=[small_workload(60, 1, 3.0)])
        counts = [c for episode in stored for c in episode]
        if forced:
            assert any(c == 1 for c in counts)  # this window has decisions with one node to go to
        else:
            assert counts and all(c > 1 for c in counts)


def test_a_validation_replay_that_cannot_beat_the_best_is_abandoned() -> None:
    from slurmrl.rl.harmony.env import PlacementEnv
    from slurmrl.rl.harmony.train import evaluate

    env = PlacementEnv(EnvConfig(episode_jobs=30), workloads=[small_workload(60, 1)])
    net = random_net()
    windows = [small_workload(300, 2)]  # 32 GPUs for 300 jobs: a queue, so the floor rises early
    whole = evaluate(env, net, windows)
    assert math.isfinite(whole) and whole > 0
    assert evaluate(env, net, windows, beat=whole) == whole
    assert evaluate(env, net, windows, beat=0.5 * whole) == math.inf
