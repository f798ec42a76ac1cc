"""The placement environment: every recorded step's mask, action, placement and reward."""

from __future__ import annotations

import math

import numpy as np

from slurmrl.rl.harmony.env import EnvConfig, PlacementEnv, decision_reward
from slurmrl.rl.harmony.placement import sampling_chooser
from slurmrl.rl.nets.numpy_nets import NumpyHarmony
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
