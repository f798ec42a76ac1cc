"""Rewards: the jobs-in-system integral, so an episode's rewards add up to minus its average JCT in hours."""

from __future__ import annotations

import math

import numpy as np

from slurmrl.rl.maifs.env import ElasticEnv, EnvConfig, jobs_in_system_integral, step_rewards
from slurmrl.rl.maifs.policy import numpy_copy, sampling
from slurmrl.sim.records import JobRecord
from tests.rl.maifs.common import random_net, small_workload


def _rec(i: int, submit: float, end: float) -> JobRecord:
    nan = math.nan
    return JobRecord(f"j{i}", "", "", "", 1, submit, submit, end, end - submit, end - submit, 0, 1, 1, 0, nan)


def test_the_integral_counts_waiting_and_running_jobs() -> None:
    recs = [_rec(0, 0.0, 10.0), _rec(1, 5.0, 20.0)]
    got = jobs_in_system_integral(recs, np.array([0.0, 5.0, 10.0, 20.0, 30.0]))
    np.testing.assert_allclose(got, [0.0, 5.0, 15.0, 25.0, 25.0])


def test_rewards_add_up_to_minus_total_jct_from_the_first_step() -> None:
    recs = [_rec(0, 0.0, 10.0), _rec(1, 5.0, 20.0), _rec(2, 6.0, 7.0)]
    r = step_rewards(recs, np.array([0.0, 6.0, 6.0, 12.0]))
    total_jct = sum(x.jct for x in recs)
    assert math.isclose(float(r.sum()) * 3600.0 * len(recs), -total_jct, rel_tol=1e-6)
    assert r[1] == 0.0  # two steps at one instant: nothing happens between them


def test_an_episode_records_steps_and_rewards() -> None:
    env = ElasticEnv(EnvConfig(episode_jobs=50, compression=(1.0, 2.0)), workloads=[small_workload()])
    rng = np.random.default_rng(0)
    wl = env.draw(rng)
    assert len(wl.trace.jobs) == 50
    ep = env.run(wl, numpy_copy(random_net()), sampling(rng))
    assert len(ep.steps) == ep.rewards.size > 0
    assert (ep.rewards <= 0).all()
    assert ep.avg_jct > 0
