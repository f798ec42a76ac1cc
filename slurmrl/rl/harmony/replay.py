"""Experience replay: recorded (state, action, behaviour log-probability, return) tuples, reused.

Harmony trains off-policy from a buffer of past placement decisions instead
of only the latest episode's. Each sample keeps the log-probability the
behaviour policy gave its action, so an update can weight it by the
truncated importance ratio pi/mu (as in ACER, Wang et al., ICLR 2017). The
buffer is a ring: the oldest decisions make room for new ones. Clusters of
different sizes share it, their node rows padded to the largest (padded rows
are masked out and marked invalid).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from slurmrl.rl.harmony.features import HarmonyObs, PlacementObs


@dataclass(frozen=True)
class ReplayBatch:
    job: np.ndarray  # [B, Fj]
    window: np.ndarray  # [B, K, Fj]
    nodes: np.ndarray  # [B, N, Fn]
    globals: np.ndarray  # [B, S]
    mask: np.ndarray  # [B, N] bool
    actions: np.ndarray  # [B] int64
    logp: np.ndarray  # [B] behaviour log-probabilities
    returns: np.ndarray  # [B]
    prior: np.ndarray  # [B, N] the logit bonus the behaviour policy added (a led placement's), else 0


class ReplayBuffer:
    def __init__(self, capacity: int, obs: HarmonyObs, max_nodes: int) -> None:
        if capacity < 1 or max_nodes < 1:
            raise ValueError("a replay buffer needs a positive capacity and node count")
        k, fj, fn, s = obs.window, obs.job_features, obs.node_features, obs.global_features
        self.capacity = capacity
        self.job = np.zeros((capacity, fj), np.float32)
        self.window = np.zeros((capacity, k, fj), np.float32)
        self.nodes = np.zeros((capacity, max_nodes, fn), np.float32)
        self.globals = np.zeros((capacity, s), np.float32)
        self.mask = np.zeros((capacity, max_nodes), bool)
        self.actions = np.zeros(capacity, np.int64)
        self.logp = np.zeros(capacity, np.float32)
        self.returns = np.zeros(capacity, np.float32)
        self.prior = np.zeros((capacity, max_nodes), np.float32)
        self.size = 0
        self._next = 0

    def __len__(self) -> int:
        return self.size

    def add(self, obs: PlacementObs, action: int, logp: float, ret: float) -> None:
        i = self._next
        n = obs.nodes.shape[0]
        if n > self.nodes.shape[1]:
            raise ValueError(f"an observation of {n} nodes does not fit a buffer of {self.nodes.shape[1]}")
        self.job[i], self.window[i], self.globals[i] = obs.job, obs.window, obs.globals
        self.nodes[i] = 0.0
        self.nodes[i, :n] = obs.nodes
        self.mask[i] = False
        self.mask[i, :n] = obs.mask
        self.prior[i] = 0.0
        if obs.prior is not None:
            self.prior[i, :n] = obs.prior
        self.actions[i], self.logp[i], self.returns[i] = action, logp, ret
        self._next = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def extend(self, items: Sequence[tuple[PlacementObs, int, float, float]]) -> None:
        for obs, action, logp, ret in items:
            self.add(obs, action, logp, ret)

    def sample(self, batch: int, rng: np.random.Generator) -> ReplayBatch:
        """``batch`` stored decisions drawn uniformly with replacement."""
        if self.size == 0:
            raise ValueError("cannot sample an empty replay buffer")
        idx = rng.integers(0, self.size, size=batch)
        return ReplayBatch(
            self.job[idx],
            self.window[idx],
            self.nodes[idx],
            self.globals[idx],
            self.mask[idx],
            self.actions[idx],
            self.logp[idx],
            self.returns[idx],
            self.prior[idx],
        )


def discounted_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """``G_t = r_t + gamma G_{t+1}`` over one episode's decisions (the episode ends after the last)."""
    out = np.zeros(len(rewards), dtype=np.float32)
    acc = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = float(rewards[t]) + gamma * acc
        out[t] = acc
    return out
