"""The placement environment: every recorded step's mask, action, placement and reward."""

from __future__ import annotations

import math

import numpy as np
import pytest

from slurmrl.errors import ConfigError
from slurmrl.rl.area import AreaCurve
from slurmrl.rl.harmony.env import EnvConfig, PlacementEnv, decision_reward, paired_rewards
from slurmrl.rl.harmony.placement import sampling_chooser
from slurmrl.rl.nets.numpy_nets import NumpyHarmony
from slurmrl.sim.records import Sample
from tests.rl.harmony.common import random_net, small_workload


def _env(jobs: int = 40) -> PlacementEnv:
    return PlacementEnv(EnvConfig(episode_jobs=jobs), workloads=[small_workload(60)])


def _episode(seed: int = 0):
    env = _env()
    net = random_net()
    infer = NumpyHarmony(net.cfg, {k: v.detach().numpy() for k, v in net.state_dict().items()})
    rng = np.random.default_rng(seed)
    return env.run(env.draw(rng), sampling_chooser(infer.logits, rng))


def test_steps_mask_nodes_that_hold_the_whole_job_and_act_inside_the_mask() -> None:
    ep = _episode()
    assert len(ep.steps) > 10
    for step in ep.steps:
        free = np.rint(step.obs.nodes[:, 1] * 8).astype(int)  # free GPUs, as the row scales them
        assert np.array_equal(step.obs.mask, free >= step.gpus)
        assert step.obs.mask[step.action]
        assert step.placement.nodes == (step.action,)
        assert step.placement.num_gpus == step.gpus
        assert step.logp <= 0.0


def test_multi_node_jobs_go_to_the_fallback_and_are_not_steps() -> None:
    ep = _episode()
    assert all(s.gpus <= 8 for s in ep.steps)
    assert len(ep.rewards) == len(ep.steps)
    assert np.all(ep.rewards <= 0.0)
    assert math.isfinite(ep.avg_jct)


def test_episodes_are_reproducible_from_the_seed() -> None:
    a, b = _episode(3), _episode(3)
    assert [s.action for s in a.steps] == [s.action for s in b.steps]
    assert np.array_equal(a.rewards, b.rewards)


def test_decision_reward_is_minus_gpus_times_log_slowdown() -> None:
    assert decision_reward(1, 100.0, 100.0) == 0.0
    assert math.isclose(decision_reward(4, 200.0, 100.0), -4 * math.log(2.0))
    assert decision_reward(2, float("nan"), 100.0) == 0.0


def _led(**kw: object) -> PlacementEnv:
    cfg = EnvConfig(episode_jobs=40, ordering="sjf-limit", fallback="type-aware", lead=True, **kw)  # type: ignore[arg-type]
    return PlacementEnv(cfg, workloads=[small_workload(80, 2)])


def _zero_chooser(obs):  # a zeroed led pointer, greedy: the heuristic's node
    prior = obs.prior if obs.prior is not None else np.zeros(len(obs.mask))
    return int(np.argmax(np.where(obs.mask, prior, -np.inf))), 0.0


def _emptiest_chooser(obs):  # the node with the most free GPUs: spreads small jobs
    return int(np.argmax(np.where(obs.mask, obs.nodes[:, 1], -1.0))), 0.0


def _lowest_chooser(obs):  # the first node with room
    return int(np.flatnonzero(obs.mask)[0]), 0.0


def test_the_paired_reward_is_zero_where_the_agent_places_as_its_heuristic() -> None:
    env = _led(reward="jct")
    ep = env.run(env.draw(np.random.default_rng(1)), _zero_chooser)
    assert len(ep.steps) > 10
    assert np.array_equal(ep.rewards, np.zeros(len(ep.steps), dtype=np.float32))


def test_the_paired_return_is_the_heuristics_total_jct_less_the_agents() -> None:
    """Spreading two 4-GPU jobs over both nodes keeps the 8-GPU job waiting; packing does not."""
    from slurmrl.rl.env import trace_workload
    from slurmrl.sim.experiment import run_policy
    from slurmrl.traces.schema import Trace, TraceJob

    jobs = (
        TraceJob("a", 0.0, 1000.0, 4, model="resnet50", time_limit=3000.0),
        TraceJob("b", 1.0, 1000.0, 4, model="resnet50", time_limit=3000.0),
        TraceJob("c", 2.0, 500.0, 8, model="resnet50", time_limit=1500.0),
        TraceJob("d", 3.0, 100.0, 2, model="lstm", time_limit=300.0),
    )
    workload = trace_workload(Trace(jobs, "test", "test"), "1x2x8:v100")
    cfg = EnvConfig(episode_jobs=4, ordering="sjf-limit", fallback="type-aware", lead=True, reward="jct")
    env = PlacementEnv(cfg, workloads=[workload])
    ep = env.run(env.draw(np.random.default_rng(0)), _emptiest_chooser)
    lead = run_policy(workload, "sjf-limit", placement="type-aware", settings=env.settings)
    assert [s.action for s in ep.steps[:2]] == [0, 1]
    assert ep.avg_jct > float(lead.summary["avg_jct"]) + 100.0  # the 8-GPU job waited
    expected = (float(lead.summary["avg_jct"]) - ep.avg_jct) * 4 / (3600.0 * 4)
    assert float(ep.rewards.sum(dtype=np.float64)) == pytest.approx(expected, rel=1e-4)
    assert ep.rewards[0] == 0.0  # nothing differs before the second job is placed


@pytest.mark.parametrize("ordering", ["srtf-limit", "gittins-limit"])
def test_under_a_preemptive_ordering_a_zero_pointer_is_its_heuristic_and_preemptions_are_decisions(
    ordering: str,
) -> None:
    """Led under a preemptive ordering, a zeroed pointer replays it with type-aware: same JCT, zero paired rewards.

    A preempted job placed again when it restarts is a second decision of the episode.
    """
    from slurmrl.sim.experiment import run_policy

    cfg = EnvConfig(episode_jobs=80, ordering=ordering, fallback="type-aware", lead=True, reward="jct")
    env = PlacementEnv(cfg, workloads=[small_workload(80, 2)])
    window = env.draw(np.random.default_rng(0))
    ep = env.run(window, _zero_chooser)
    heuristic = run_policy(window, ordering, placement="type-aware", settings=env.settings)
    assert ep.avg_jct == float(heuristic.summary["avg_jct"])
    assert np.array_equal(ep.rewards, np.zeros(len(ep.steps), dtype=np.float32))
    preempted = sum(r.preemptions for r in heuristic.records)
    assert preempted > 0
    placed = [s.job_id for s in ep.steps]
    assert len(placed) > len(set(placed))  # restarts are placed again
    moved = env.run(window, _emptiest_chooser)  # another pointer changes the schedule and the reward
    assert moved.avg_jct != ep.avg_jct and np.any(moved.rewards != 0.0)


def test_paired_rewards_split_the_area_difference_at_the_decision_times() -> None:
    agent = AreaCurve(
        [Sample(0.0, 0, 2, 0, 0.0), Sample(10.0, 0, 1, 0, 0.0), Sample(30.0, 0, 0, 0, 0.0)], 0.0
    )
    lead = AreaCurve([Sample(0.0, 0, 2, 0, 0.0), Sample(20.0, 0, 0, 0, 0.0)], 0.0)
    # agent: 2 jobs for 10 s, 1 for 20 s (40 job-s); lead: 2 jobs for 20 s (40 job-s)
    rewards = paired_rewards([5.0, 15.0], agent, lead, 10.0)
    assert rewards.tolist() == pytest.approx([0.5, -0.5])  # ahead until 15 s, behind after
    assert paired_rewards([], agent, lead, 10.0).shape == (0,)


def test_warm_windows_hand_over_at_the_first_window_job() -> None:
    env = _led(warm_jobs=25, reward="jct")
    jobs = env.workloads[0].trace.jobs
    for seed in range(8):
        w = env.draw(np.random.default_rng(seed))
        warm = len(w.trace.jobs) - 40
        assert 0 <= warm <= 25
        if warm:
            first = jobs.index(w.trace.jobs[warm])
            assert w.handover == jobs[first].submit_time and w.warm_policy == "sjf-limit"
            assert w.trace.jobs == jobs[first - warm : first + 40]
        else:
            assert w.handover is None
    window = next(w for seed in range(8) if (w := env.draw(np.random.default_rng(seed))).handover is not None)
    ep = env.run(window, _lowest_chooser)
    assert (
        ep.steps and min(s.time for s in ep.steps) >= window.handover
    )  # the warm-up placed the earlier ones


def test_bad_reward_or_warm_jobs_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="reward must be one of"):
        _led(reward="throughput")
    with pytest.raises(ConfigError, match="warm_jobs"):
        _led(warm_jobs=-1)
    with pytest.raises(ConfigError, match="warm_jobs needs reward 'jct'"):
        _led(warm_jobs=8)
