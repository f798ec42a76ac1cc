"""Reptile meta-training of the Harmony placement network over the workload family.

Reptile (Nichol, Achiam and Schulman, "On First-Order Meta-Learning
Algorithms", 2018): per meta-iteration draw a task, train a copy of the
meta-weights on it for a few episodes (:func:`~slurmrl.rl.meta.inner.learn`)
and move the meta-weights a step ``eps`` towards the task-adapted ones; ``eps``
is annealed linearly, as in the paper. The result is an initialisation from
which a few episodes of ordinary training fit a new workload. The Harmony
network's pointer over nodes has no weight tied to the node count, so tasks on
clusters of different shapes share one set of weights.

Every ``eval_every`` meta-iterations the meta-weights replay a fixed
yardstick (the last ``eval_jobs`` jobs of each pool, greedy, unadapted) for
the log; the checkpoint is the final meta-weights, since Reptile's
initialisation is chosen for how it adapts, not for its zero-shot score.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from slurmrl.errors import ConfigError
from slurmrl.rl.harmony.env import PlacementEnv
from slurmrl.rl.harmony.features import HarmonyObs
from slurmrl.rl.harmony.policy import save_checkpoint
from slurmrl.rl.harmony.train import HarmonyConfig, evaluate, yardstick
from slurmrl.rl.meta.family import FamilyConfig, FamilySampler
from slurmrl.rl.meta.inner import learn
from slurmrl.rl.nets.config import HarmonyNetConfig
from slurmrl.rl.nets.torch_nets import HarmonyNet
from slurmrl.rl.runs import RUN, fresh_run

LOG = "log.csv"
LOG_FIELDS = (
    "iteration",
    "wall_s",
    "cpu_s",
    "eps",
    "task",
    "offered_load",
    "decisions",
    "first_avg_jct",
    "last_avg_jct",
    "mean_reward",
    "yardstick_avg_jct",
)


@dataclass(frozen=True)
class MetaConfig:
    family: FamilyConfig = field(default_factory=FamilyConfig)
    inner: HarmonyConfig = field(default_factory=lambda: HarmonyConfig(updates_per_episode=8, batch_size=128))
    iterations: int = 150
    inner_episodes: int = 3
    outer_step: tuple[float, float] = (1.0, 0.1)  # eps at the first and the last iteration
    hidden: int = 64
    wall_limit_s: float = 450.0  # stop after the iteration that crosses this
    eval_every: int = 25
    eval_jobs: int = 400
    seed: int = 0

    def __post_init__(self) -> None:
        if self.iterations < 1 or self.inner_episodes < 1:
            raise ConfigError("meta-training needs at least one iteration and one inner episode")


@dataclass(frozen=True)
class MetaResult:
    out: Path
    iterations: int
    episodes: int
    decisions: int
    wall_seconds: float
    cpu_seconds: float


def new_net(obs: HarmonyObs, hidden: int) -> HarmonyNet:
    return HarmonyNet(HarmonyNetConfig(obs.job_features, obs.node_features, obs.global_features, hidden))


def outer_step(cfg: MetaConfig, iteration: int) -> float:
    """``eps`` at ``iteration`` (1-based), linear from the first to the last value."""
    first, last = cfg.outer_step
    frac = (iteration - 1) / max(cfg.iterations - 1, 1)
    return first + (last - first) * frac


def reptile_step(
    meta: Mapping[str, torch.Tensor], adapted: Mapping[str, torch.Tensor], eps: float
) -> dict[str, torch.Tensor]:
    """``meta + eps * (adapted - meta)`` per tensor: Reptile's outer update."""
    if set(meta) != set(adapted):
        raise ValueError("meta and adapted weights name different tensors")
    return {k: meta[k] + eps * (adapted[k] - meta[k]) for k in meta}


def meta_train(cfg: MetaConfig, out: Path, *, sampler: FamilySampler | None = None) -> MetaResult:
    """Meta-train into ``out``: the final meta-weights as a Harmony checkpoint, run.json, log.csv."""
    out = Path(out)
    sampler = sampler or FamilySampler(cfg.family)  # a bad pool fails before the folder is made
    rng = fresh_run(out, cfg.seed, what="meta-training run")
    env_cfg = cfg.inner.env
    env = PlacementEnv(env_cfg, workloads=[p.workload for p in sampler.pools])
    net = new_net(env_cfg.obs, cfg.hidden)
    windows = yardstick(env, cfg.eval_jobs) if cfg.eval_every else []
    (out / RUN).write_text(json.dumps({"meta": config_dict(cfg)}, indent=2) + "\n")
    t0, c0 = time.perf_counter(), time.process_time()
    episodes = decisions = it = 0
    with (out / LOG).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=LOG_FIELDS)
        writer.writeheader()
        for it in range(1, cfg.iterations + 1):
            spec = sampler.sample(rng)
            task = sampler.build(spec)
            learner = copy.deepcopy(net)
            stats = learn(learner, env, lambda _r, w=task: w, cfg.inner_episodes, cfg.inner, rng)
            eps = outer_step(cfg, it)
            net.load_state_dict(reptile_step(net.state_dict(), learner.state_dict(), eps))
            episodes += len(stats)
            decisions += sum(s.decisions for s in stats)
            jct = evaluate(env, net, windows) if windows and it % cfg.eval_every == 0 else math.nan
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            writer.writerow(
                {
                    "iteration": it,
                    "wall_s": round(wall, 1),
                    "cpu_s": round(cpu, 1),
                    "eps": round(eps, 4),
                    "task": task.label,
                    "offered_load": round(task.offered_load, 3),
                    "decisions": sum(s.decisions for s in stats),
                    "first_avg_jct": round(stats[0].avg_jct, 1),
                    "last_avg_jct": round(stats[-1].avg_jct, 1),
                    "mean_reward": round(float(np.mean([s.mean_reward for s in stats])), 4),
                    "yardstick_avg_jct": "" if math.isnan(jct) else round(jct, 1),
                }
            )
            fh.flush()
            if wall >= cfg.wall_limit_s:
                break
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    extra = {
        "method": "reptile",
        "iterations": it,
        "episodes": episodes,
        "decisions": decisions,
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "seed": cfg.seed,
        "family": list(cfg.family.pools),
    }
    save_checkpoint(out, net, env_cfg.obs, env_cfg.ordering, extra)
    return MetaResult(out, it, episodes, decisions, wall, cpu)


def config_dict(cfg: MetaConfig) -> dict[str, object]:
    d = asdict(cfg)
    d["inner"]["env"]["obs"] = cfg.inner.env.obs.to_dict()
    return d


def train_request(
    pools: tuple[str, ...],
    *,
    steps: int,
    seed: int,
    out: Path,
    episode_jobs: int | None = None,
    wall_limit: float | None = None,
    ordering: str | None = None,
) -> str:
    """``slurmrl train --policy meta-rl``: ``steps`` placements spread over iterations; returns the summary line.

    ``ordering`` (``--lead``): the heuristic whose jobs the inner episodes place, saved in the checkpoint.
    """
    family = FamilyConfig(pools=pools, **({"jobs": episode_jobs} if episode_jobs else {}))
    base = MetaConfig(family=family, seed=seed)
    inner = base.inner
    if ordering:
        inner = replace(inner, env=replace(inner.env, ordering=ordering))
    iterations = max(1, steps // (base.inner_episodes * family.jobs))
    cfg = MetaConfig(
        family=family,
        inner=inner,
        iterations=iterations,
        seed=seed,
        **({"wall_limit_s": wall_limit} if wall_limit is not None else {}),
    )
    r = meta_train(cfg, out)
    return (
        f"meta-trained {r.iterations} Reptile iterations, {r.episodes} episodes, {r.decisions} placements "
        f"in {r.wall_seconds:.0f} s wall, {r.cpu_seconds:.0f} s CPU; checkpoint in {r.out}"
    )
