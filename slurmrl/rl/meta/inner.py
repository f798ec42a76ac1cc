"""A few episodes of the Harmony trainer's updates on one workload: the inner loop and adaptation.

Both Reptile's inner loop and adaptation to a shifted workload are ordinary
Harmony training (:func:`slurmrl.rl.harmony.train.update`, off-policy
actor-critic from a replay buffer) started from given weights. With a handful
of episodes the learned reward model has too few samples to help, so every
reward here is the simulator's (Harmony's ``real_every=1``, model-free).
Each call starts a fresh replay buffer and Adam state: what carries over
between tasks is the weights alone, as in Reptile (Nichol et al., 2018).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from slurmrl.rl.harmony.env import PlacementEnv
from slurmrl.rl.harmony.placement import sampling_chooser
from slurmrl.rl.harmony.replay import ReplayBuffer, discounted_returns
from slurmrl.rl.harmony.train import HarmonyConfig, _numpy, update
from slurmrl.rl.nets.torch_nets import HarmonyNet
from slurmrl.sim.experiment import Workload


@dataclass(frozen=True)
class EpisodeStat:
    """One inner episode: what the behaviour policy achieved and how much it learned from."""

    decisions: int
    avg_jct: float
    mean_reward: float


def learn(
    net: HarmonyNet,
    env: PlacementEnv,
    draw: Callable[[np.random.Generator], Workload],
    episodes: int,
    cfg: HarmonyConfig,
    rng: np.random.Generator,
    *,
    after: Callable[[int], None] | None = None,
) -> list[EpisodeStat]:
    """``episodes`` sampled episodes, each followed by ``cfg.updates_per_episode`` updates of ``net``.

    ``after(k)`` runs after episode ``k`` (1-based): the adaptation curve's hook.
    """
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate)
    buffer: ReplayBuffer | None = None
    stats = []
    for k in range(1, episodes + 1):
        workload = draw(rng)
        ep = env.run(workload, sampling_chooser(_numpy(net).logits, rng))
        if buffer is None or buffer.nodes.shape[1] < len(workload.cluster.nodes):
            buffer = ReplayBuffer(cfg.replay_capacity, env.config.obs, len(workload.cluster.nodes))
        returns = discounted_returns(ep.rewards, cfg.gamma)
        buffer.extend([(s.obs, s.action, s.logp, float(g)) for s, g in zip(ep.steps, returns, strict=True)])
        if len(buffer):
            for _ in range(cfg.updates_per_episode):
                update(net, opt, buffer.sample(cfg.batch_size, rng), cfg)
        mean = float(np.mean(ep.rewards)) if len(ep.rewards) else 0.0
        stats.append(EpisodeStat(len(ep.steps), ep.avg_jct, mean))
        if after is not None:
            after(k)
    return stats
