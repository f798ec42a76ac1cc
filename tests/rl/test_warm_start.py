"""Warm-started episodes and the reward's components."""

from __future__ import annotations

import math

import numpy as np
import pytest

from slurmrl.errors import ConfigError
from slurmrl.rl.env import EnvConfig, SchedEnv, env_config, trace_workload
from slurmrl.rl.features import ObsConfig
from slurmrl.traces.schema import Trace, TraceJob


def _busy_trace(n: int = 120) -> Trace:
    """One-GPU to 8-GPU jobs every 20 s, each running 10-60 minutes: 16 GPUs queue quickly."""
    rng = np.random.default_rng(11)
    jobs = []
    for i in range(n):
        dur = float(rng.choice([600.0, 1800.0, 3600.0]))
        gpus = int(rng.choice([1, 2, 4, 8]))
        jobs.append(
            TraceJob(f"j{i}", 20.0 * i, dur, gpus, user=f"u{i % 4}", vc=f"vc{i % 2}", time_limit=2 * dur)
        )
    return Trace(tuple(jobs), "busy", "test")


def _env(**changes: object) -> SchedEnv:
    base = dict(episode_jobs=40, obs=ObsConfig(window=8, oldest=2), compression=(1.0, 1.0))
    cfg = EnvConfig(**{**base, **changes})  # type: ignore[arg-type]
    return SchedEnv(cfg, workloads=[trace_workload(_busy_trace(), "1x2x8:v100")])


def _play_first(env: SchedEnv, seed: int, start: int | None = None) -> tuple[float, dict, float]:
    """An episode picking the first feasible job every time: (return, info of reset, first decision time)."""
    options = {"start": start} if start is not None else None
    _, info = env.reset(seed=seed, options=options)
    first = env.sim.now
    total = 0.0
    while True:
        _, r, term, trunc, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
        total += r
        if term or trunc:
            return total, info, first


def test_warm_start_hands_over_a_busy_cluster_with_a_queue() -> None:
    env = _env(warm_policy="fifo-backfill", warm_jobs=60)
    _, info = env.reset(seed=0, options={"start": 70})
    sim = env.sim
    assert info["warm_jobs"] == 60 and info["handover"] == pytest.approx(20.0 * 70)
    # The agent's first decision comes at or after the hand-over, with a backlog waiting.
    assert sim.now >= info["handover"]
    assert len(sim.pending) > 1
    assert len(sim.running) > 0
    # The heuristic's starts are in the records: jobs of the warm part started before the hand-over.
    records = sim.result().records
    warm_started = [r for r in records if r.start_time == r.start_time and r.start_time < info["handover"]]
    assert len(warm_started) >= 5
    assert all(int(r.job_id[1:]) < 70 for r in warm_started)
    # The featuriser saw what the heuristic's finished jobs ran.
    assert env.featurizer.users.stats


def test_without_warm_start_the_episode_starts_on_an_empty_cluster() -> None:
    env = _env()
    env.reset(seed=0, options={"start": 70})
    records = env.sim.result().records
    assert min(r.submit_time for r in records) == pytest.approx(20.0 * 70)
    assert not any(r.start_time < 20.0 * 70 for r in records)


def test_a_forced_move_is_played_without_asking() -> None:
    """Every decision the agent is asked for has at least two jobs to choose from."""
    env = _env(warm_policy="slurm", warm_jobs=40)
    env.reset(seed=1, options={"start": 50})
    asked = 0
    while True:
        mask = env.action_masks()
        assert mask[:-1].sum() >= 2
        asked += 1
        _, _, term, trunc, _ = env.step(int(np.flatnonzero(mask)[-1]))
        if term or trunc:
            break
    assert asked > 1


def test_warm_start_needs_a_deployable_policy_and_sane_numbers() -> None:
    with pytest.raises(ConfigError, match="deployable"):
        _env(warm_policy="sjf-oracle", warm_jobs=10)
    with pytest.raises(ConfigError):
        _env(warm_jobs=-1)
    with pytest.raises(ConfigError):
        _env(makespan_weight=-0.5)


def test_makespan_term_adds_minus_the_elapsed_time() -> None:
    """Same episode and picks with and without the term: the returns differ by the weight x elapsed time."""
    r0, info, first = _play_first(_env(warm_policy="slurm", warm_jobs=40), 3, start=50)
    env = _env(warm_policy="slurm", warm_jobs=40, makespan_weight=0.5)
    r1, _, first1 = _play_first(env, 3, start=50)
    end = env.sim.samples[-1].time
    assert first1 == first
    elapsed = end - first
    assert elapsed > 0
    assert (r0 - r1) * env.config.reward_time_s == pytest.approx(0.5 * elapsed, rel=1e-6)


def test_jct_term_is_the_waiting_area_after_the_first_decision() -> None:
    env = _env(warm_policy="slurm", warm_jobs=40)
    ret, _, first = _play_first(env, 3, start=50)
    samples = env.sim.samples
    area = sum(
        (a.pending_jobs + a.running_jobs) * (b.time - a.time)
        for a, b in zip(samples, samples[1:], strict=False)
        if a.time >= first
    )
    unfinished = sum(1 for r in env.sim.result().records if not r.end_time <= first)
    assert -ret * env.config.reward_time_s == pytest.approx(area / unfinished, rel=1e-6)


def test_v1_environment_is_warm_started_and_sees_makespan() -> None:
    cfg = env_config("topdrl-philly-v1")
    assert cfg.warm_policy and cfg.warm_jobs > 0 and cfg.makespan_weight > 0
    assert cfg.scenarios == ("philly-512-week1", "philly-512-week2")
    assert not math.isnan(cfg.reward_time_s)
