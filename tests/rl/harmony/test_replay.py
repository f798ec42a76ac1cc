"""Experience replay: storing, padding, ring overwrite, sampling; discounted returns."""

from __future__ import annotations

import numpy as np
import pytest

from slurmrl.rl.harmony.features import HarmonyObs, PlacementObs
from slurmrl.rl.harmony.replay import ReplayBuffer, discounted_returns

OBS = HarmonyObs(window=3)


def _obs(nodes: int, value: float) -> PlacementObs:
    mask = np.zeros(nodes, bool)
    mask[0] = True
    return PlacementObs(
        np.full(OBS.job_features, value, np.float32),
        np.zeros((OBS.window, OBS.job_features), np.float32),
        np.full((nodes, OBS.node_features), value, np.float32),
        np.zeros(OBS.global_features, np.float32),
        mask,
    )


def test_smaller_clusters_are_padded_with_masked_invalid_rows() -> None:
    buf = ReplayBuffer(4, OBS, max_nodes=5)
    buf.add(_obs(3, 1.0), 0, -0.5, -2.0)
    batch = buf.sample(6, np.random.default_rng(0))
    assert batch.nodes.shape == (6, 5, OBS.node_features)
    assert np.all(batch.nodes[:, 3:] == 0.0) and not batch.mask[:, 3:].any()
    assert np.all(batch.returns == -2.0) and np.all(batch.logp == -0.5)


def test_the_ring_overwrites_the_oldest_and_sampling_covers_what_is_stored() -> None:
    buf = ReplayBuffer(3, OBS, max_nodes=2)
    for i in range(5):
        buf.add(_obs(2, float(i)), 0, 0.0, float(i))
    assert len(buf) == 3
    seen = set(buf.sample(200, np.random.default_rng(1)).returns.tolist())
    assert seen == {2.0, 3.0, 4.0}


def test_too_many_nodes_and_empty_buffers_are_refused() -> None:
    buf = ReplayBuffer(2, OBS, max_nodes=2)
    with pytest.raises(ValueError):
        buf.sample(1, np.random.default_rng(0))
    with pytest.raises(ValueError):
        buf.add(_obs(3, 0.0), 0, 0.0, 0.0)


def test_discounted_returns() -> None:
    got = discounted_returns(np.array([1.0, 0.0, 2.0], np.float32), 0.5)
    assert np.allclose(got, [1.5, 1.0, 2.0])


def test_a_led_decision_keeps_its_prior_padded_like_the_nodes() -> None:
    buf = ReplayBuffer(4, OBS, max_nodes=5)
    led = _obs(3, 1.0)
    buf.add(
        PlacementObs(led.job, led.window, led.nodes, led.globals, led.mask, np.array([0, 1, 0], np.float32)),
        0,
        0.0,
        1.0,
    )
    buf.add(_obs(3, 2.0), 0, 0.0, 1.0)
    assert buf.prior[0].tolist() == [0, 1, 0, 0, 0]
    assert not buf.prior[1].any()
    assert buf.sample(8, np.random.default_rng(0)).prior.shape == (8, 5)
