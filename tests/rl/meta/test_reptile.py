from __future__ import annotations

import copy
import csv
from pathlib import Path

import numpy as np
import pytest
import torch

from slurmrl.errors import ConfigError
from slurmrl.rl.harmony.env import EnvConfig, PlacementEnv
from slurmrl.rl.harmony.features import HarmonyObs
from slurmrl.rl.harmony.policy import read_checkpoint
from slurmrl.rl.harmony.train import HarmonyConfig
from slurmrl.rl.meta.family import FamilyConfig, FamilySampler, pool_of
from slurmrl.rl.meta.inner import learn
from slurmrl.rl.meta.reptile import MetaConfig, meta_train, new_net, outer_step, reptile_step
from tests.rl.meta.common import small_workload

INNER = HarmonyConfig(
    env=EnvConfig(episode_jobs=40), updates_per_episode=4, batch_size=32, learning_rate=1e-2
)


def _flat(state: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([v.flatten() for _, v in sorted(state.items())])


def test_one_reptile_step_moves_weights_towards_the_adapted_ones() -> None:
    torch.manual_seed(0)
    wl = small_workload()
    env = PlacementEnv(INNER.env, workloads=[wl])
    net = new_net(HarmonyObs(), 16)
    learner = copy.deepcopy(net)
    learn(learner, env, env.draw, 2, INNER, np.random.default_rng(0))
    meta, adapted = net.state_dict(), learner.state_dict()
    before = torch.linalg.norm(_flat(meta) - _flat(adapted))
    assert before > 0  # the inner loop changed the weights
    stepped = reptile_step(meta, adapted, 0.25)
    after = torch.linalg.norm(_flat(stepped) - _flat(adapted))
    assert float(after) == pytest.approx(0.75 * float(before), rel=1e-4)
    moved = _flat(stepped) - _flat(meta)
    assert float(moved @ (_flat(adapted) - _flat(meta))) > 0  # in the adapted direction
    full = reptile_step(meta, adapted, 1.0)
    assert torch.allclose(_flat(full), _flat(adapted))


def test_reptile_step_refuses_mismatched_weights() -> None:
    state = new_net(HarmonyObs(), 8).state_dict()
    with pytest.raises(ValueError):
        reptile_step(state, {k: v for k, v in state.items() if k != "attn_v.bias"}, 0.5)


def test_outer_step_anneals_linearly() -> None:
    cfg = MetaConfig(iterations=5, outer_step=(1.0, 0.2))
    assert [round(outer_step(cfg, i), 3) for i in range(1, 6)] == [1.0, 0.8, 0.6, 0.4, 0.2]


def test_meta_train_writes_a_loadable_checkpoint(tmp_path: Path) -> None:
    pools = [pool_of(small_workload(seed=3)), pool_of(small_workload(seed=4, cluster="1x2x8:v100"))]
    sampler = FamilySampler(FamilyConfig(jobs=30), pools=pools)
    cfg = MetaConfig(
        family=FamilyConfig(jobs=30), inner=INNER, iterations=3, inner_episodes=1, hidden=16, eval_every=0
    )
    result = meta_train(cfg, tmp_path / "run", sampler=sampler)
    assert result.iterations == 3 and result.episodes == 3
    ckpt, state = read_checkpoint(tmp_path / "run")
    assert ckpt.net.hidden == 16
    torch.manual_seed(cfg.seed)
    init = new_net(HarmonyObs(), 16).state_dict()
    assert any(not np.allclose(state[k], init[k].numpy()) for k in init)
    rows = list(csv.DictReader((tmp_path / "run" / "log.csv").open()))
    assert [r["iteration"] for r in rows] == ["1", "2", "3"]
    assert {r["task"].split("~")[0] for r in rows} <= {"test"}
    with pytest.raises(ConfigError, match="already holds"):
        meta_train(cfg, tmp_path / "run", sampler=sampler)
