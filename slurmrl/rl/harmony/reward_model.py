"""A learned reward predictor: scores a placement from what the agent saw when it made it.

Harmony (Bao et al., INFOCOM 2019) cuts the costly collection of real
rewards by training a model on recorded (state, action, reward) samples and
letting it supply most training rewards. A simulator reward here is known only
once the placed job has finished; the model predicts it at decision time from
the job's row, the chosen node's row and the cluster scalars. It is refitted
on every batch of real rewards, and its error is measured on each new batch
before that batch is fitted (an honest held-out figure).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from slurmrl.rl.harmony.features import PlacementObs


def reward_inputs(obs: PlacementObs, action: int) -> np.ndarray:
    """The model's input for one decision: [job row, chosen node row, cluster scalars]."""
    return np.concatenate([obs.job, obs.nodes[action], obs.globals]).astype(np.float32)


@dataclass(frozen=True)
class FitStats:
    samples: int
    mse: float
    r2: float  # on the data just fitted


class RewardModel:
    """A small MLP regressor, refitted incrementally on all real rewards seen so far."""

    def __init__(self, inputs: int, *, hidden: int = 64, lr: float = 1e-3, seed: int = 0) -> None:
        with torch.random.fork_rng():  # seeded weights without touching the caller's torch RNG
            torch.manual_seed(seed)
            self.net = nn.Sequential(
                nn.Linear(inputs, hidden),
                nn.ReLU(),
                nn.Linear(hidden, hidden),
                nn.ReLU(),
                nn.Linear(hidden, 1),
            )
        self.opt = torch.optim.Adam(self.net.parameters(), lr=lr)
        self._x: list[np.ndarray] = []
        self._y: list[np.ndarray] = []
        self._rng = np.random.default_rng(seed)

    @property
    def samples(self) -> int:
        return sum(len(y) for y in self._y)

    def add(self, x: np.ndarray, y: np.ndarray) -> None:
        self._x.append(np.asarray(x, np.float32))
        self._y.append(np.asarray(y, np.float32))

    def fit(self, steps: int = 200, batch: int = 256) -> FitStats:
        """``steps`` Adam steps on minibatches of every real sample so far."""
        x = np.concatenate(self._x)
        y = np.concatenate(self._y)
        xt, yt = torch.as_tensor(x), torch.as_tensor(y)
        for _ in range(steps):
            idx = torch.as_tensor(self._rng.integers(0, len(y), size=min(batch, len(y))))
            loss = ((self.net(xt[idx]).squeeze(-1) - yt[idx]) ** 2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        pred = self.predict(x)
        return FitStats(len(y), float(np.mean((pred - y) ** 2)), r_squared(pred, y))

    def predict(self, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.net(torch.as_tensor(np.asarray(x, np.float32))).squeeze(-1).numpy()


def r_squared(pred: np.ndarray, target: np.ndarray) -> float:
    """``1 - SS_res / SS_tot``; NaN when the targets do not vary."""
    var = float(np.var(target))
    if var == 0.0:
        return float("nan")
    return 1.0 - float(np.mean((target - pred) ** 2)) / var
