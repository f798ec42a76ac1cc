"""A short seeded PPO run learns shortest-time-limit-first where it clearly wins."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from slurmrl.policy.placement.topology import Topology
from slurmrl.rl.env import trace_workload
from slurmrl.rl.features import ObsConfig
from slurmrl.rl.ppo import PPOConfig, train
from slurmrl.rl.topdrl import TopDRLPolicy, load_checkpoint
from slurmrl.sim.experiment import run_policy
from slurmrl.traces.schema import Trace, TraceJob


def _bursts(seed: int, bursts: int = 40) -> Trace:
    """Bursts of 12 one-GPU jobs on a 4-GPU node, 8 short and 4 long, in random order."""
    rng = np.random.default_rng(seed)
    jobs = []
    for b in range(bursts):
        kinds = rng.permutation([0] * 8 + [1] * 4)
        for i, long in enumerate(kinds):
            dur = 3000.0 if long else 100.0
            jobs.append(TraceJob(f"b{b}-{i}", b * 14400.0, dur, 1, time_limit=dur * 2))
    return Trace(tuple(jobs), f"bursts-{seed}", "test")


class _Random:
    name, deployable = "random", True

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.place = Topology()

    def bind_oracle(self, durations) -> None: ...

    def decide(self, view):
        from slurmrl.policy.view import Decisions, Start

        pool, starts = view.pool.copy(), []
        for job in self.rng.permutation(np.array(list(view.pending), dtype=object)):
            p = self.place.place(job, pool, view)
            if p is not None:
                pool.allocate(p)
                starts.append(Start(job.job_id, p))
        return Decisions(starts=tuple(starts))


@pytest.mark.slow
def test_ppo_learns_short_jobs_first(tmp_path: Path) -> None:
    train_wl = trace_workload(_bursts(0), "1x1x4:v100")
    eval_wl = trace_workload(_bursts(1, 20), "1x1x4:v100")
    obs = ObsConfig(window=8, oldest=8)
    cfg = PPOConfig(
        env="topdrl-philly-v0",
        env_overrides={"episode_jobs": 96, "obs": obs, "compression": (1.0, 1.0), "reward_time_s": 100.0},
        total_steps=6144,
        num_steps=256,
        num_envs=2,
        eval_every=0,
        learning_rate=2e-3,
        gamma=0.95,
        update_epochs=8,
        hidden=32,
        conv=8,
        seed=0,
        checkpoint_every=100,
    )
    train(cfg, tmp_path, workloads=[train_wl], progress=False)
    _, net = load_checkpoint(tmp_path)
    agent = TopDRLPolicy.from_net(net, obs, Topology())
    learned = run_policy(eval_wl, agent).summary["avg_jct"]
    fifo = run_policy(eval_wl, "fifo", placement="topology").summary["avg_jct"]
    rand = run_policy(eval_wl, _Random(0)).summary["avg_jct"]
    # Short-first: the short jobs finish in two 100 s rounds and the long ones start after;
    # FIFO or random order leaves short jobs queued behind 3000 s ones.
    # Measured: ~0.77 x FIFO after this budget (shortest-first itself reaches ~0.65 x).
    assert learned < 0.85 * fifo
    assert learned < 0.85 * rand
