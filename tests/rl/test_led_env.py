"""The heuristic-led training environment: it replays its lead at zero, and pairs rewards with it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from slurmrl.errors import ConfigError
from slurmrl.policy.placement.topology import Topology
from slurmrl.rl.env import EnvConfig, build_env, env_config, trace_workload
from slurmrl.rl.features import ObsConfig
from slurmrl.rl.led_env import LedSchedEnv
from slurmrl.rl.ppo import zero_logit_heads
from slurmrl.rl.topdrl import TopDRLPolicy, new_network
from slurmrl.sim.experiment import run_policy
from slurmrl.traces.schema import Trace, TraceJob


def _trace(n: int = 80, seed: int = 0) -> Trace:
    """Bursty arrivals on 16 GPUs: the queue builds, so the order matters."""
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += float(rng.exponential(20.0))
        dur = float(rng.choice([60.0, 600.0, 6000.0]))
        gpus = int(rng.choice([1, 1, 2, 4, 8]))
        limit = dur * float(rng.choice([1.5, 3.0, 10.0]))
        jobs.append(TraceJob(f"j{i}", t, dur, gpus, user=f"u{i % 3}", vc=f"vc{i % 2}", time_limit=limit))
    return Trace(tuple(jobs), "test", "test")


WORKLOAD = trace_workload(_trace(), "1x2x8:v100")


def _env(lead: str = "srtf-limit", handovers=None, **changes) -> LedSchedEnv:
    cfg = EnvConfig(
        episode_jobs=60,
        obs=ObsConfig(window=8, oldest=2),
        compression=(1.0, 1.0),
        lead=lead,
        paired=True,
        warm_policy="slurm",
        warm_jobs=20,
        max_steps=10_000,
    )
    env = build_env(EnvConfig(**{**cfg.__dict__, **changes}), workloads=[WORKLOAD], handovers=handovers)
    assert isinstance(env, LedSchedEnv)
    return env


def _play(env: LedSchedEnv, choose) -> tuple[float, dict, int]:
    obs, _ = env.reset(seed=3, options={"start": 20})
    total, steps, done, info = 0.0, 0, False, {}
    while not done:
        obs, reward, term, trunc, info = env.step(choose(obs))
        total, steps, done = total + reward, steps + 1, term or trunc
    return total, info, steps


def _greedy(obs: dict[str, np.ndarray]) -> int:
    """The lead's own pick: the prior's argmax over what is allowed (a zero network's choice)."""
    return int(np.argmax(np.where(obs["mask"].astype(bool), obs["prior"], -np.inf)))


def _sampler(seed: int):
    rng = np.random.default_rng(seed)

    def choose(obs: dict[str, np.ndarray]) -> int:
        allowed = np.flatnonzero(obs["mask"])
        return int(rng.choice(allowed))

    return choose


@pytest.mark.parametrize("lead", ["srtf-limit", "qssf", "tiresias", "gittins-limit"])
def test_the_lead_own_picks_earn_a_paired_return_of_zero(lead: str) -> None:
    total, info, steps = _play(_env(lead, makespan_weight=0.005), _greedy)
    assert steps > 0 and np.isfinite(info["avg_jct"])
    assert total == pytest.approx(0.0, abs=1e-9)


def test_the_paired_return_is_the_plain_one_plus_the_lead_replay() -> None:
    """Same picks with and without pairing: the difference is the lead's mean JCT (and makespan) term."""
    paired_env, plain_env = _env(makespan_weight=0.005), _env(paired=False, makespan_weight=0.005)
    paired, info_p, _ = _play(paired_env, _sampler(7))
    plain, info_q, _ = _play(plain_env, _sampler(7))
    assert info_p["avg_jct"] == info_q["avg_jct"]
    curve, cfg = paired_env._curve, paired_env.config
    assert curve is not None
    lead_return = (
        curve.total / paired_env._jobs + cfg.makespan_weight * curve.elapsed(curve.times[-1])
    ) / 3600
    # Both returns leave out the stretch before the first decision, nobody's doing.
    assert paired - plain == pytest.approx(lead_return, rel=0.05)
    assert plain < 0 < lead_return


def test_random_picks_do_worse_than_the_lead_on_a_queue() -> None:
    worse = [_play(_env(), _sampler(s))[0] for s in range(3)]
    assert min(worse) < 0.0  # the lead's mean JCT beats random picks on this queue


@pytest.mark.parametrize("lead", ["srtf-limit", "gittins-limit"])
def test_zero_logit_heads_give_a_network_that_replays_its_lead_exactly(lead: str) -> None:
    """The trained architecture at its starting point is the heuristic, job by job."""
    torch.manual_seed(0)
    obs = ObsConfig(window=8, oldest=2)
    net = new_network(obs, hidden=16, conv=4)
    zero_logit_heads(net)
    policy = TopDRLPolicy.from_net(net, obs, Topology(), lead=lead)
    alone = run_policy(WORKLOAD, lead, placement="topology")
    assert run_policy(WORKLOAD, policy).records == alone.records


def test_a_lead_must_be_a_deployable_heuristic() -> None:
    with pytest.raises(ConfigError, match="deployable heuristic"):
        _env("srtf-oracle")
    with pytest.raises(ConfigError, match="EnvConfig.lead"):
        LedSchedEnv(EnvConfig(), workloads=[WORKLOAD])


def test_v2_is_led_by_srtf_limit_and_keeps_the_validation_days_out() -> None:
    cfg = env_config("topdrl-philly-v2")
    assert cfg.lead == "srtf-limit" and cfg.paired
    assert "philly-512-week2-val" not in cfg.scenarios and "philly-512-week2" not in cfg.scenarios


def _episodes(env: LedSchedEnv, seeds: range) -> list[tuple]:
    """Every step of one episode per reset seed, under seeded random picks: what a trainer sees."""
    steps: list[tuple] = []
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        choose, done = _sampler(seed), False
        steps.append((info["start"], {k: v.copy() for k, v in obs.items()}))
        while not done:
            obs, reward, term, trunc, info = env.step(choose(obs))
            done = term or trunc
            steps.append((reward, term, trunc, info.get("avg_jct"), {k: v.copy() for k, v in obs.items()}))
    return steps


def _same(a: list[tuple], b: list[tuple]) -> bool:
    def equal(x, y) -> bool:
        if isinstance(x, dict):
            return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)
        return x == y or (x != x and y != y)

    if len(a) != len(b):
        return False
    return all(
        len(s) == len(t) and all(equal(x, y) for x, y in zip(s, t, strict=True))
        for s, t in zip(a, b, strict=True)
    )


def test_episodes_from_a_kept_hand_over_are_those_a_fresh_warm_up_gives() -> None:
    """Starts at every 10th job recur: the second visit continues from a copy of the first's
    warm-up and paired replay, and sees step for step what playing them again would give."""
    kept, fresh = _env("sjf-limit", start_stride=10), _env("sjf-limit", start_stride=10)

    class Forgetting(type(fresh)):
        def reset(self, **kwargs):
            self.handovers.clear()
            return super().reset(**kwargs)

    fresh.__class__ = Forgetting
    seeds = range(8)
    a, b = _episodes(kept, seeds), _episodes(fresh, seeds)
    starts = [s[0] for s in a if isinstance(s[1], dict) and len(s) == 2]
    assert set(starts) <= {0, 10, 20} and len(set(starts)) < len(starts)  # some starts recur
    assert _same(a, b)
    warmed = sum(1 for s in set(starts) if s > 0)
    assert kept.warm_ups_played == warmed < fresh.warm_ups_played


def test_a_start_stride_starts_episodes_at_its_multiples_only() -> None:
    env = _env(start_stride=7)
    starts = {env.reset(seed=seed)[1]["start"] for seed in range(60)}
    assert starts == {0, 7, 14}  # 80 jobs, 60 a window: starts 0-20


def test_a_start_stride_needs_a_fixed_compression_and_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="fixed compression"):
        _env(start_stride=4, compression=(1.0, 2.0))
    with pytest.raises(ConfigError, match="start_stride must be at least 1"):
        _env(start_stride=0)


def test_environments_built_alike_share_their_hand_overs_and_others_are_refused() -> None:
    """A start one environment played is a copy for the next (as in one trainer's vector env)."""
    from slurmrl.rl.env import Handovers

    store = Handovers()
    first = _env("sjf-limit", start_stride=10, handovers=store)
    second = _env("sjf-limit", start_stride=10, handovers=store)
    alone = _env("sjf-limit", start_stride=10)
    a = _episodes(first, range(8))
    b, c = _episodes(second, range(8)), _episodes(alone, range(8))
    assert first.warm_ups_played > 0 and second.warm_ups_played == 0 < alone.warm_ups_played
    assert _same(a, b) and _same(b, c)
    with pytest.raises(ConfigError, match="one config"):
        _env("sjf-limit", start_stride=5, handovers=store)


@pytest.mark.parametrize(("size", "played"), [(1, 3), (2, 2)])
def test_a_full_store_drops_the_hand_over_used_least_recently(size: int, played: int) -> None:
    from slurmrl.rl.env import Handovers

    env = _env("sjf-limit", start_stride=10, handovers=Handovers(size=size))
    fresh = _env("sjf-limit", start_stride=10, handovers=Handovers(size=0))
    for start in (10, 20, 10):
        a, b = env.reset(seed=0, options={"start": start}), fresh.reset(seed=0, options={"start": start})
        assert all(np.array_equal(a[0][k], b[0][k]) for k in a[0])
    assert env.warm_ups_played == played and fresh.warm_ups_played == 3
