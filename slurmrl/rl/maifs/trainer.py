"""MAPPO for the MAIFS agents: shared actor, centralised critic, PPO's clipped updates.

The recipe of MAPPO (Yu et al., "The Surprising Effectiveness of PPO in
Cooperative Multi-Agent Games", NeurIPS 2022 Datasets and Benchmarks): one
actor shared by every agent, a critic over the whole state (every agent's
context and the cluster), one team reward, GAE on the critic's values, and
the clipped objective applied to each agent's own probability ratio with the
team advantage. Only agents that had a choice (two or more open options)
enter the policy loss; the rest carry no gradient.

Per update ``episodes_per_update`` episodes (:class:`~.env.ElasticEnv`) are
replayed with the current actor sampling; advantages come from
:func:`slurmrl.rl.ppo.compute_advantages`, epochs stop early on
:func:`slurmrl.rl.ppo.kl_exceeded`, and the log keeps approximate KL, clip
fraction and :func:`slurmrl.rl.ppo.explained_variance` as
:mod:`slurmrl.rl.ppo` does. Every ``eval_every`` updates the greedy actor
replays a fixed yardstick (the last ``eval_jobs`` jobs of each training
workload on their own timeline; never an evaluation scenario) and the weights
with the best yardstick average JCT so far are the checkpoint; a replay that
can no longer beat that best is abandoned and logged as ``inf``
(:func:`slurmrl.rl.yardstick.mean_jct`). Training stops
at ``updates`` or at the first update that ends past ``wall_limit_s``.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from slurmrl.errors import ConfigError
from slurmrl.rl.config_checks import check_numbers
from slurmrl.rl.maifs.coordination import MaifsStep
from slurmrl.rl.maifs.env import ElasticEnv, EnvConfig, Episode
from slurmrl.rl.maifs.policy import greedy, numpy_copy, sampling, save_checkpoint
from slurmrl.rl.nets.config import MaifsNetConfig
from slurmrl.rl.nets.torch_nets import MaifsNet
from slurmrl.rl.ppo import UpdateStats, UpdateTally, clipped_surrogate, compute_advantages
from slurmrl.rl.runs import RUN, fresh_run
from slurmrl.rl.yardstick import last_jobs, mean_jct, validation_workloads
from slurmrl.sim.cutoff import JctCutoff
from slurmrl.sim.experiment import Workload, run_policy

LOG = "log.csv"
LOG_FIELDS = (
    "update",
    "steps",
    "wall_s",
    "cpu_s",
    "episodes",
    "mean_return",
    "mean_episode_jct",
    "decision_agents",
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "explained_variance",
    "epochs",
    "eval_avg_jct",
)


@dataclass(frozen=True)
class MaifsConfig:
    env: EnvConfig = field(default_factory=EnvConfig)
    updates: int = 200
    wall_limit_s: float = 510.0  # stop after the update that crosses this (under 10 minutes per run in all)
    episodes_per_update: int = 2
    hidden: int = 64
    gamma: float = 0.99
    gae_lambda: float = 0.95
    learning_rate: float = 3e-3
    update_epochs: int = 4
    num_minibatches: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = 0.02
    eval_every: int = 5
    eval_jobs: int = 2000
    validate: str = ""  # a training-side scenario left out of the episodes, replayed instead of the yardstick
    validate_seeds: int = 1  # workload seeds of ``validate`` replayed per check (their mean is compared)
    seed: int = 0

    def __post_init__(self) -> None:
        check_numbers(
            "maifs",
            self,
            counts=("updates", "episodes_per_update", "update_epochs", "num_minibatches", "validate_seeds"),
            fractions=("gamma", "gae_lambda"),
            positive=("target_kl",),
            non_negative=("learning_rate", "wall_limit_s"),
        )


@dataclass(frozen=True)
class MaifsResult:
    out: Path
    updates: int
    steps: int
    wall_seconds: float
    cpu_seconds: float
    best_eval_jct: float


@dataclass(frozen=True)
class StepBatch:
    """Steps stacked into tensors, with their GAE advantages and returns."""

    jobs: torch.Tensor  # [T, K, F_j]
    glob: torch.Tensor  # [T, S]
    options: torch.Tensor  # [T, K, O, F_o]
    masks: torch.Tensor  # [T, K, O] bool
    actions: torch.Tensor  # [T, K]
    logps: torch.Tensor  # [T, K]
    priors: torch.Tensor  # [T, K, O]: the lead's bonus, part of the behaviour policy's logits
    decides: torch.Tensor  # [T, K] bool: real agents with a choice
    advantages: torch.Tensor  # [T]
    returns: torch.Tensor  # [T]
    values: torch.Tensor  # [T]

    def select(self, idx: torch.Tensor) -> StepBatch:
        return StepBatch(*(getattr(self, f)[idx] for f in self.__dataclass_fields__))


def stack_steps(steps: Sequence[MaifsStep]) -> dict[str, torch.Tensor]:
    return {
        "jobs": torch.as_tensor(np.stack([s.jobs for s in steps])),
        "glob": torch.as_tensor(np.stack([s.glob for s in steps])),
        "options": torch.as_tensor(np.stack([s.options for s in steps])),
        "masks": torch.as_tensor(np.stack([s.masks for s in steps])),
        "actions": torch.as_tensor(np.stack([s.actions for s in steps])),
        "logps": torch.as_tensor(np.stack([s.logps for s in steps])),
        "priors": torch.as_tensor(np.stack([s.priors for s in steps])),
    }


def episode_batch(net: MaifsNet, episodes: Sequence[Episode], cfg: MaifsConfig) -> StepBatch:
    """Every episode's steps with GAE advantages; each episode ends in a real end (no bootstrap)."""
    parts = []
    for ep in episodes:
        if not ep.steps:
            continue
        t = stack_steps(ep.steps)
        with torch.no_grad():
            _, values = net(t["jobs"], t["glob"], t["options"], t["masks"])
        n = len(ep.steps)
        terminated = torch.zeros(n, 1)
        terminated[-1] = 1.0
        adv, ret = compute_advantages(
            torch.as_tensor(ep.rewards).unsqueeze(1),
            values.unsqueeze(1),
            terminated,
            torch.zeros(1),
            cfg.gamma,
            cfg.gae_lambda,
        )
        decides = (t["jobs"][..., 0] > 0.5) & (t["masks"].sum(dim=2) > 1)
        parts.append(
            {**t, "decides": decides, "advantages": adv[:, 0], "returns": ret[:, 0], "values": values}
        )
    if not parts:
        raise ConfigError("no episode produced a step: the training windows start no job")
    return StepBatch(**{k: torch.cat([p[k] for p in parts]) for k in parts[0]})


def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def mappo_update(
    net: MaifsNet, opt: torch.optim.Optimizer, batch: StepBatch, cfg: MaifsConfig, *, shuffle_seed: int
) -> UpdateStats:
    """Clipped-objective epochs over shuffled minibatches of steps, each agent's ratio with the team advantage."""
    size = batch.actions.shape[0]
    idx = np.arange(size)
    mb = max(1, math.ceil(size / cfg.num_minibatches))
    tally = UpdateTally()
    for _ in range(cfg.update_epochs):
        np.random.default_rng(shuffle_seed + tally.epochs).shuffle(idx)
        for lo in range(0, size, mb):
            b = batch.select(torch.as_tensor(idx[lo : lo + mb]))
            logits, value = net(b.jobs, b.glob, b.options, b.masks)
            logp_all = torch.log_softmax(logits + b.priors, dim=2)
            logp = logp_all.gather(2, b.actions.unsqueeze(2)).squeeze(2)
            log_ratio = logp - b.logps
            ratio = log_ratio.exp()
            a = b.advantages
            a = ((a - a.mean()) / (a.std() + 1e-8)) if a.numel() > 1 else a * 0
            d = b.decides.float()
            pg = _masked_mean(clipped_surrogate(ratio, a.unsqueeze(1), cfg.clip_coef), d)
            v_clip = b.values + (value - b.values).clamp(-cfg.clip_coef, cfg.clip_coef)
            vl = 0.5 * torch.max((value - b.returns) ** 2, (v_clip - b.returns) ** 2).mean()
            ent = _masked_mean(-(logp_all.exp() * logp_all).sum(dim=2), d)
            with torch.no_grad():
                approx_kl = _masked_mean((ratio - 1) - log_ratio, d)
                clipped = _masked_mean(((ratio - 1).abs() > cfg.clip_coef).float(), d)
            tally.step(net, opt, (pg, vl, ent), cfg, approx_kl, clipped)
        if tally.end_epoch(cfg.target_kl):
            break
    return tally.stats(batch.values, batch.returns)


def yardstick(env: ElasticEnv, jobs: int) -> list[Workload]:
    """The last ``jobs`` jobs of each training workload (see :mod:`slurmrl.rl.yardstick`)."""
    return last_jobs(env.workloads, jobs)


def checkpoint_windows(env: ElasticEnv, cfg: MaifsConfig) -> list[Workload]:
    """What the kept checkpoint is chosen on: the validation window if named, else the yardstick."""
    if cfg.validate:
        return validation_workloads([cfg.validate], cfg.env.workload_seed, cfg.validate_seeds)
    return yardstick(env, cfg.eval_jobs)


def evaluate(env: ElasticEnv, net: MaifsNet, windows: Sequence[Workload], beat: float = math.inf) -> float:
    """Mean over ``windows`` of the greedy actor's average JCT (seconds); inf once it cannot beat ``beat``."""
    actor = numpy_copy(net)

    def replay(w: Workload, cutoff: JctCutoff | None) -> float:
        run = run_policy(w, env.policy(actor, greedy), settings=env.settings, cutoff=cutoff)
        return float(run.summary["avg_jct"])  # type: ignore[arg-type]

    return mean_jct(windows, replay, beat)


def new_network(cfg: MaifsConfig) -> MaifsNet:
    """A fresh network; led, its option head starts at zero, so the untrained agents *are* the lead."""
    obs = cfg.env.obs
    net = MaifsNet(MaifsNetConfig(obs.job_features, obs.option_features, obs.global_features, cfg.hidden))
    if cfg.env.lead:
        with torch.no_grad():
            net.option[-1].weight.zero_()
            net.option[-1].bias.zero_()
    return net


def train(cfg: MaifsConfig, out: Path, *, workloads: Sequence[Workload] | None = None) -> MaifsResult:
    """Train into ``out`` (weights of the best yardstick, config.json, run.json, log.csv)."""
    out = Path(out)
    rng = fresh_run(out, cfg.seed)
    env = ElasticEnv(cfg.env, workloads=workloads)
    net = new_network(cfg)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, eps=1e-5)
    windows = checkpoint_windows(env, cfg) if cfg.eval_every else []
    (out / RUN).write_text(json.dumps({"maifs": config_dict(cfg)}, indent=2) + "\n")
    t0, c0 = time.perf_counter(), time.process_time()
    best, steps_done, update = math.inf, 0, 0
    if windows and cfg.env.lead:
        # Update 0 is the lead itself: the floor every kept checkpoint must beat.
        best = evaluate(env, net, windows)
        _save(out, net, cfg, 0, 0, best, (time.perf_counter() - t0, time.process_time() - c0))
    with (out / LOG).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=LOG_FIELDS)
        writer.writeheader()
        for update in range(1, cfg.updates + 1):
            actor = numpy_copy(net)
            episodes = [env.run(env.draw(rng), actor, sampling(rng)) for _ in range(cfg.episodes_per_update)]
            batch = episode_batch(net, episodes, cfg)
            stats = mappo_update(net, opt, batch, cfg, shuffle_seed=cfg.seed * 100_003 + update)
            steps_done += int(batch.actions.shape[0])
            eval_jct = math.nan
            if windows and (update % cfg.eval_every == 0 or update == 1):
                eval_jct = evaluate(env, net, windows, best)
                if eval_jct < best:
                    best = eval_jct
                    _save(
                        out,
                        net,
                        cfg,
                        update,
                        steps_done,
                        eval_jct,
                        (time.perf_counter() - t0, time.process_time() - c0),
                    )
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            writer.writerow(_log_row(update, steps_done, wall, cpu, episodes, batch, stats, eval_jct))
            fh.flush()
            if wall >= cfg.wall_limit_s:
                break
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if not windows or not math.isfinite(best):
        _save(out, net, cfg, update, steps_done, best, (wall, cpu))
    _record_totals(out, update, steps_done, wall, cpu)
    return MaifsResult(out, update, steps_done, wall, cpu, best)


def _log_row(
    update: int,
    steps: int,
    wall: float,
    cpu: float,
    episodes: Sequence[Episode],
    batch: StepBatch,
    stats: UpdateStats,
    eval_jct: float,
) -> dict[str, object]:
    ev = stats.explained_variance
    return {
        "update": update,
        "steps": steps,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "episodes": len(episodes),
        "mean_return": round(float(np.mean([float(e.rewards.sum()) for e in episodes])), 5),
        "mean_episode_jct": round(float(np.mean([e.avg_jct for e in episodes])), 1),
        "decision_agents": int(batch.decides.sum()),
        "policy_loss": round(stats.policy_loss, 5),
        "value_loss": round(stats.value_loss, 5),
        "entropy": round(stats.entropy, 4),
        "approx_kl": round(stats.approx_kl, 5),
        "clip_fraction": round(stats.clip_fraction, 4),
        "explained_variance": "" if math.isnan(ev) else round(ev, 4),
        "epochs": stats.epochs,
        "eval_avg_jct": "" if math.isnan(eval_jct) else round(eval_jct, 1),
    }


def config_dict(cfg: MaifsConfig) -> dict[str, object]:
    d = asdict(cfg)
    d["env"]["obs"] = cfg.env.obs.to_dict()
    return d


def _save(
    out: Path,
    net: MaifsNet,
    cfg: MaifsConfig,
    update: int,
    steps: int,
    eval_jct: float,
    times: tuple[float, float],
) -> None:
    extra = {
        "update": update,
        "steps": steps,
        "seed": cfg.seed,
        "scenarios": list(cfg.env.scenarios),
        "elastic": cfg.env.elastic,
        "wall_seconds": round(times[0], 1),
        "cpu_seconds": round(times[1], 1),
        "yardstick_avg_jct": None if math.isinf(eval_jct) else round(eval_jct, 1),
        "chosen_on": cfg.validate or f"last {cfg.eval_jobs} jobs of each training scenario",
    }
    save_checkpoint(out, net, cfg.env.obs, extra, lead=cfg.env.lead)


def _record_totals(out: Path, updates: int, steps: int, wall: float, cpu: float) -> None:
    """The whole run's figures in run.json, next to its config (the checkpoint holds the best update's)."""
    run = json.loads((out / RUN).read_text())
    run["totals"] = {
        "updates": updates,
        "steps": steps,
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
    }
    (out / RUN).write_text(json.dumps(run, indent=2) + "\n")


def config_from_request(
    scenarios: tuple[str, ...],
    *,
    steps: int,
    seed: int,
    episode_jobs: int | None = None,
    gamma: float | None = None,
    learning_rate: float | None = None,
    target_kl: float | None = None,
    update_epochs: int | None = None,
    wall_limit: float | None = None,
    lead: str | None = None,
    validate: str | None = None,
    validate_seeds: int | None = None,
) -> MaifsConfig:
    """The trainer's config for ``slurmrl train --policy maifs``; None keeps the default.

    ``steps`` caps the agent steps: updates = steps / (the ~2,000 steps two
    1,000-job episodes give), the wall-time limit usually stopping it first.
    """
    env = EnvConfig(scenarios=scenarios, lead=lead or "")
    if episode_jobs is not None:
        env = replace(env, episode_jobs=episode_jobs)
    cfg = MaifsConfig(env=env, updates=max(1, steps // 2000), seed=seed)
    given = {
        "gamma": gamma,
        "learning_rate": learning_rate,
        "target_kl": target_kl,
        "update_epochs": update_epochs,
        "wall_limit_s": wall_limit,
        "validate": validate,
        "validate_seeds": validate_seeds,
    }
    return replace(cfg, **{k: v for k, v in given.items() if v is not None})
