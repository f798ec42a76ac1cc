"""The reward predictor learns a simple known function and is judged on unseen inputs."""

from __future__ import annotations

import numpy as np

from slurmrl.rl.harmony.reward_model import RewardModel, r_squared


def test_fits_a_known_function_on_held_out_inputs() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, size=(1500, 6)).astype(np.float32)

    def target(a: np.ndarray) -> np.ndarray:
        return -(2.0 * a[:, 0] * a[:, 1] + 0.5 * a[:, 2])

    model = RewardModel(6, seed=0)
    model.add(x[:1000], target(x[:1000]))
    stats = model.fit(steps=1500)
    assert stats.samples == 1000
    assert stats.r2 > 0.95
    assert r_squared(model.predict(x[1000:]), target(x[1000:])) > 0.95


def test_r_squared_edges() -> None:
    y = np.array([1.0, 2.0, 3.0])
    assert r_squared(y, y) == 1.0
    assert abs(r_squared(np.full(3, 2.0), y)) < 1e-12
    assert np.isnan(r_squared(y, np.ones(3)))
