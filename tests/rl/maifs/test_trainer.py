"""A short MAPPO run: it updates the weights, logs PPO's diagnostics and leaves a loadable checkpoint."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from slurmrl.errors import ConfigError
from slurmrl.rl.maifs.env import EnvConfig
from slurmrl.rl.maifs.policy import LEAD_PLACEMENT, MaifsPolicy
from slurmrl.rl.maifs.trainer import MaifsConfig, config_from_request, train
from tests.rl.maifs.common import random_net, small_workload


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


@pytest.mark.parametrize("lead", ["sjf-limit", "gittins-limit"])
def test_a_led_run_keeps_the_lead_as_its_floor(tmp_path: Path, lead: str) -> None:
    """Update 0 of a led run is the lead itself: the kept checkpoint is never worse on the yardstick, and zero updates replay the lead."""
    from slurmrl.rl.maifs.env import ElasticEnv
    from slurmrl.rl.maifs.trainer import yardstick
    from slurmrl.sim.experiment import run_policy

    cfg = MaifsConfig(
        env=EnvConfig(episode_jobs=40, lead=lead),
        updates=2,
        episodes_per_update=1,
        hidden=16,
        eval_every=1,
        eval_jobs=40,
    )
    train(cfg, tmp_path / "run", workloads=[small_workload(60)])
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["lead"] == lead
    env = ElasticEnv(cfg.env, workloads=[small_workload(60)])
    windows = yardstick(env, cfg.eval_jobs)
    alone_runs = [run_policy(w, lead, placement=LEAD_PLACEMENT, settings=env.settings) for w in windows]
    floor = sum(float(r.summary["avg_jct"]) for r in alone_runs) / len(alone_runs)  # type: ignore[arg-type]
    assert config["training"]["yardstick_avg_jct"] <= round(floor, 1)

    train(replace(cfg, learning_rate=0.0), tmp_path / "zero", workloads=[small_workload(60)])
    policy = MaifsPolicy.from_dir(tmp_path / "zero")
    workload = small_workload(60)
    alone = run_policy(workload, lead, placement=LEAD_PLACEMENT, settings=env.settings)
    assert run_policy(workload, policy, settings=env.settings).records == alone.records


def test_led_steps_record_the_prior_the_update_adds() -> None:
    """The behaviour policy's log-probabilities are the network's logits plus the lead's prior, as MAPPO recomputes them."""
    import numpy as np
    import torch

    from slurmrl.rl.maifs.env import ElasticEnv
    from slurmrl.rl.maifs.policy import numpy_copy, sampling
    from slurmrl.rl.maifs.trainer import episode_batch, new_network

    cfg = MaifsConfig(env=EnvConfig(episode_jobs=40, lead="sjf-limit"), hidden=16)
    env = ElasticEnv(cfg.env, workloads=[small_workload(60)])
    net = new_network(cfg)
    episode = env.run(env.draw(np.random.default_rng(0)), numpy_copy(net), sampling(np.random.default_rng(1)))
    batch = episode_batch(net, [episode], cfg)
    assert batch.priors.abs().sum() > 0
    with torch.no_grad():
        logits, _ = net(batch.jobs, batch.glob, batch.options, batch.masks)
        logp = (
            torch.log_softmax(logits + batch.priors, dim=2).gather(2, batch.actions.unsqueeze(2)).squeeze(2)
        )
    assert torch.allclose(logp[batch.decides], batch.logps[batch.decides], atol=1e-4)


def test_cli_lead_reaches_the_config_and_must_be_a_heuristic() -> None:
    from click.testing import CliRunner

    from slurmrl.cli import main

    assert (
        config_from_request(("philly-512-week1",), steps=2000, seed=0, lead="sjf-limit").env.lead
        == "sjf-limit"
    )
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--policy",
            "maifs",
            "--lead",
            "sjf-oracle",
            "--scenario",
            "philly-512-week1",
            "--out",
            "x",
        ],
    )
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1
    assert "--lead: maifs follows a deployable heuristic, not 'sjf-oracle'" in result.output


def test_a_named_validation_window_replaces_the_yardstick() -> None:
    from slurmrl.rl.maifs.env import ElasticEnv
    from slurmrl.rl.maifs.trainer import checkpoint_windows

    cfg = config_from_request(("philly-512-week1",), steps=2000, seed=0, validate="philly-512-week2-val")
    assert cfg.validate == "philly-512-week2-val"
    env = ElasticEnv(cfg.env, workloads=[small_workload(60)])
    assert [w.label for w in checkpoint_windows(env, cfg)] == ["philly-512-week2-val"]
    assert [w.label for w in checkpoint_windows(env, replace(cfg, validate=""))] == ["test[-2000:]"]


def test_a_validation_replay_that_cannot_beat_the_best_is_abandoned() -> None:
    """The whole replay's figure when it may beat ``beat``; inf, without its end, when it cannot."""
    from slurmrl.rl.maifs.env import ElasticEnv
    from slurmrl.rl.maifs.trainer import evaluate

    env = ElasticEnv(EnvConfig(episode_jobs=40), workloads=[small_workload(80)])
    net = random_net()
    windows = [small_workload(200)]  # 32 GPUs for 200 jobs: a queue, so the floor rises early
    whole = evaluate(env, net, windows)
    assert math.isfinite(whole) and whole > 0
    assert evaluate(env, net, windows, beat=whole) == whole
    assert evaluate(env, net, windows, beat=0.5 * whole) == math.inf
