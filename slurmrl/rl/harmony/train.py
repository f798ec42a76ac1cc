"""Harmony's trainer: off-policy actor-critic from experience replay, most rewards predicted.

Per episode (:class:`~slurmrl.rl.harmony.env.PlacementEnv`): the current
network, sampling, places the jobs of a drawn trace window. The episode's
rewards come from the simulator (the finished jobs' lost GPU-hours) on the
first ``warmup_real`` episodes and on every ``real_every``-th after that; on
all other episodes the learned :class:`~slurmrl.rl.harmony.reward_model.RewardModel`
predicts them at decision time, and no simulator reward is read. Returns are
discounted sums over the episode's decisions; every decision goes into the
replay buffer with its behaviour log-probability, and ``updates_per_episode``
minibatches drawn from the buffer update the actor (policy gradient weighted
by the truncated importance ratio, ACER's rho-bar = 1) and the critic.

``real_every=1`` turns the reward model off (every reward from the
simulator): the model-free reference the card compares with. The paired
``jct`` reward (:mod:`~slurmrl.rl.harmony.env`) is always the simulator's:
the model predicts a job's own slowdown from what the decision saw. Every
``eval_every`` episodes the greedy policy replays a fixed yardstick (the last
``eval_jobs`` jobs of each training workload; never an evaluation scenario)
and the weights with the best yardstick average JCT so far are the checkpoint
(a replay that can no longer beat that best is abandoned and logged as
``inf``: :func:`slurmrl.rl.yardstick.mean_jct`).
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from slurmrl.rl.checkpoints import numpy_state
from slurmrl.rl.config_checks import check_numbers
from slurmrl.rl.harmony.env import EnvConfig, Episode, PlacementEnv
from slurmrl.rl.harmony.features import HarmonyObs
from slurmrl.rl.harmony.placement import greedy_chooser, sampling_chooser
from slurmrl.rl.harmony.policy import save_checkpoint
from slurmrl.rl.harmony.replay import ReplayBatch, ReplayBuffer, discounted_returns
from slurmrl.rl.harmony.reward_model import RewardModel, r_squared, reward_inputs
from slurmrl.rl.nets.config import HarmonyNetConfig
from slurmrl.rl.nets.numpy_nets import NumpyHarmony
from slurmrl.rl.nets.torch_nets import HarmonyNet
from slurmrl.rl.runs import RUN, fresh_run
from slurmrl.rl.yardstick import last_jobs, mean_jct, validation_workloads
from slurmrl.sim.cutoff import JctCutoff
from slurmrl.sim.experiment import Workload, run_policy

LOG = "log.csv"


@dataclass(frozen=True)
class HarmonyConfig:
    env: EnvConfig = field(default_factory=EnvConfig)
    episodes: int = 200
    wall_limit_s: float = 840.0  # stop after the episode that crosses this
    hidden: int = 64
    gamma: float = 0.9
    learning_rate: float = 1e-3
    updates_per_episode: int = 8
    batch_size: int = 256
    replay_capacity: int = 50_000
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    rho_bar: float = 1.0
    max_grad_norm: float = 1.0
    warmup_real: int = 6  # first episodes whose rewards all come from the simulator
    real_every: int = 4  # afterwards every k-th episode reads simulator rewards; 1 = model-free
    reward_fit_steps: int = 300
    eval_every: int = 20  # episodes between yardstick checks (the card's checkpoint rule)
    eval_jobs: int = 800  # yardstick: the last this many jobs of each training workload
    # Training-side scenarios replayed whole instead of the yardstick (the checks then judge the
    # workloads as a whole, not their last jobs).
    validate: tuple[str, ...] = ()
    # Workload seeds each ``validate`` scenario is replayed under per check (from ``env.workload_seed``):
    # one replay of a full VC is a noisy draw, several average the noise down.
    validate_seeds: int = 1
    # Whether decisions with one node to choose from go into the replay buffer: they carry no
    # policy gradient, and on warm-started episodes they are almost all of them.
    replay_forced: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        check_numbers(
            "harmony",
            self,
            counts=(
                "episodes",
                "updates_per_episode",
                "batch_size",
                "replay_capacity",
                "real_every",
                "validate_seeds",
            ),
            fractions=("gamma",),
            non_negative=("learning_rate", "wall_limit_s"),
        )


@dataclass(frozen=True)
class HarmonyResult:
    out: Path
    episodes: int
    decisions: int
    real_rewards: int
    predicted_rewards: int
    wall_seconds: float
    cpu_seconds: float
    best_eval_jct: float


LOG_FIELDS = (
    "episode",
    "wall_s",
    "cpu_s",
    "decisions",
    "reward_source",
    "real_rewards",
    "predicted_rewards",
    "mean_reward",
    "episode_avg_jct",
    "rm_heldout_r2",
    "rm_fit_r2",
    "policy_loss",
    "value_loss",
    "entropy",
    "mean_rho",
    "eval_avg_jct",
)


def yardstick(env: PlacementEnv, jobs: int) -> list[Workload]:
    """The last ``jobs`` jobs of each training workload (see :mod:`slurmrl.rl.yardstick`)."""
    return last_jobs(env.workloads, jobs)


def check_windows(cfg: HarmonyConfig, env: PlacementEnv) -> list[Workload]:
    """What the checks replay: the ``validate`` scenarios whole (each under ``validate_seeds`` workload seeds), else the yardstick (none without checks)."""
    if not cfg.eval_every:
        return []
    if cfg.validate:
        return validation_workloads(cfg.validate, cfg.env.workload_seed, cfg.validate_seeds)
    return yardstick(env, cfg.eval_jobs)


def zero_pointer(net: HarmonyNet) -> None:
    """Zero the pointer's output layer: every node's logit is 0, so a led pointer starts as its heuristic."""
    with torch.no_grad():
        net.attn_v.weight.zero_()
        net.attn_v.bias.zero_()


def evaluate(
    env: PlacementEnv, net: HarmonyNet, windows: Sequence[Workload], beat: float = math.inf
) -> float:
    """Mean over ``windows`` of the greedy policy's average JCT (seconds); inf once it cannot beat ``beat``."""
    infer = _numpy(net)

    def replay(w: Workload, cutoff: JctCutoff | None) -> float:
        policy = env.policy(greedy_chooser(infer.logits))
        return float(run_policy(w, policy, settings=env.settings, cutoff=cutoff).summary["avg_jct"])  # type: ignore[arg-type]

    return mean_jct(windows, replay, beat)


def _numpy(net: HarmonyNet) -> NumpyHarmony:
    return NumpyHarmony(net.cfg, numpy_state(net))


@dataclass(frozen=True)
class UpdateStats:
    policy_loss: float
    value_loss: float
    entropy: float
    mean_rho: float


def update(
    net: HarmonyNet, opt: torch.optim.Optimizer, batch: ReplayBatch, cfg: HarmonyConfig
) -> UpdateStats:
    """One actor-critic step on replayed decisions, weighted by min(rho_bar, pi/mu)."""
    t = {
        k: torch.as_tensor(getattr(batch, k)) for k in ("job", "window", "nodes", "globals", "mask", "prior")
    }
    logits, value = net(t["job"], t["window"], t["nodes"], t["globals"], t["mask"])
    logits = logits + t["prior"]  # what the behaviour policy sampled from (a led placement's bonus)
    logp_all = torch.log_softmax(logits, dim=1)
    actions = torch.as_tensor(batch.actions)
    logp = logp_all.gather(1, actions.unsqueeze(1)).squeeze(1)
    rho = torch.exp(logp.detach() - torch.as_tensor(batch.logp)).clamp(max=cfg.rho_bar)
    returns = torch.as_tensor(batch.returns)
    adv = (returns - value).detach()
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    pg = -(rho * adv * logp).mean()
    vl = 0.5 * ((returns - value) ** 2).mean()
    ent = -(logp_all.exp() * logp_all).sum(dim=1).mean()
    loss = pg + cfg.vf_coef * vl - cfg.ent_coef * ent
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
    opt.step()
    return UpdateStats(float(pg.detach()), float(vl.detach()), float(ent.detach()), float(rho.mean()))


def reads_simulator(cfg: HarmonyConfig, episode: int) -> bool:
    """Whether episode ``episode`` (1-based) takes its rewards from the simulator."""
    return episode <= cfg.warmup_real or (episode - cfg.warmup_real) % cfg.real_every == 0


def train(cfg: HarmonyConfig, out: Path, *, workloads: Sequence[Workload] | None = None) -> HarmonyResult:
    """Train into ``out`` (weights of the best yardstick, config.json, run.json, log.csv)."""
    out = Path(out)
    env = PlacementEnv(cfg.env, workloads=workloads)
    windows = check_windows(cfg, env)  # a bad validation scenario fails before the folder is made
    rng = fresh_run(out, cfg.seed)
    obs: HarmonyObs = cfg.env.obs
    net = HarmonyNet(HarmonyNetConfig(obs.job_features, obs.node_features, obs.global_features, cfg.hidden))
    if cfg.env.lead:
        zero_pointer(net)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate)
    max_nodes = max(len(w.cluster.nodes) for w in env.workloads)
    buffer = ReplayBuffer(cfg.replay_capacity, obs, max_nodes)
    model = RewardModel(obs.job_features + obs.node_features + obs.global_features, seed=cfg.seed)
    (out / RUN).write_text(json.dumps({"harmony": _config_dict(cfg)}, indent=2) + "\n")
    t0, c0 = time.perf_counter(), time.process_time()
    best = math.inf
    real = predicted = decisions = 0
    episode = 0
    with (out / LOG).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=LOG_FIELDS)
        writer.writeheader()
        if windows and cfg.env.lead:  # the untrained pointer is the fallback heuristic: the bar to beat
            best = evaluate(env, net, windows)
            _save(out, net, cfg, 0, 0, 0, 0, best)
            writer.writerow({"episode": 0, "eval_avg_jct": round(best, 1)})
        for episode in range(1, cfg.episodes + 1):
            ep = env.run(env.draw(rng), sampling_chooser(_numpy(net).logits, rng))
            row = _learn_rewards(cfg, episode, ep, model)
            rewards = row.pop("rewards")
            if row["reward_source"] == "simulator":
                real += len(ep.steps)
            else:
                predicted += len(ep.steps)
            decisions += len(ep.steps)
            returns = discounted_returns(rewards, cfg.gamma)
            buffer.extend(
                [
                    (s.obs, s.action, s.logp, float(g))
                    for s, g in zip(ep.steps, returns, strict=True)
                    if cfg.replay_forced or s.obs.mask.sum() > 1
                ]
            )
            stats = (
                [
                    update(net, opt, buffer.sample(cfg.batch_size, rng), cfg)
                    for _ in range(cfg.updates_per_episode)
                ]
                if len(buffer)
                else []
            )
            eval_jct = math.nan
            if windows and (episode % cfg.eval_every == 0):
                eval_jct = evaluate(env, net, windows, best)
                if eval_jct < best:
                    best = eval_jct
                    _save(out, net, cfg, episode, decisions, real, predicted, eval_jct)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            writer.writerow(
                {
                    "episode": episode,
                    "wall_s": round(wall, 1),
                    "cpu_s": round(cpu, 1),
                    "decisions": len(ep.steps),
                    "real_rewards": real,
                    "predicted_rewards": predicted,
                    "mean_reward": round(float(np.mean(rewards)), 4) if len(rewards) else "",
                    "episode_avg_jct": round(ep.avg_jct, 1),
                    **row,
                    **_mean_stats(stats),
                    "eval_avg_jct": "" if math.isnan(eval_jct) else round(eval_jct, 1),
                }
            )
            fh.flush()
            if wall >= cfg.wall_limit_s:
                break
    if not windows or not math.isfinite(best):
        _save(out, net, cfg, episode, decisions, real, predicted, best)
    return HarmonyResult(
        out, episode, decisions, real, predicted, time.perf_counter() - t0, time.process_time() - c0, best
    )


def _learn_rewards(cfg: HarmonyConfig, episode: int, ep: Episode, model: RewardModel) -> dict[str, object]:
    """The rewards training uses for ``ep``: the simulator's (and a refit) or the model's."""
    if cfg.env.reward != "slowdown":  # nothing for the model to learn: it predicts a job's slowdown
        return {"rm_heldout_r2": "", "rm_fit_r2": "", "reward_source": "simulator", "rewards": ep.rewards}
    x = np.stack([reward_inputs(s.obs, s.action) for s in ep.steps]) if ep.steps else np.zeros((0, 1))
    row: dict[str, object] = {"rm_heldout_r2": "", "rm_fit_r2": ""}
    if reads_simulator(cfg, episode) or not model.samples:
        if model.samples and len(ep.rewards):
            row["rm_heldout_r2"] = _round(r_squared(model.predict(x), ep.rewards))
        if len(ep.rewards):
            model.add(x, ep.rewards)
            row["rm_fit_r2"] = _round(model.fit(cfg.reward_fit_steps).r2)
        row.update(reward_source="simulator", rewards=ep.rewards)
        return row
    rewards = np.minimum(model.predict(x), 0.0).astype(np.float32) if len(x) else ep.rewards
    row.update(reward_source="model", rewards=rewards)
    return row


def _round(x: float) -> float | str:
    return "" if math.isnan(x) else round(x, 4)


def _mean_stats(stats: list[UpdateStats]) -> dict[str, object]:
    if not stats:
        return {}
    return {k: round(float(np.mean([getattr(s, k) for s in stats])), 5) for k in asdict(stats[0])}


def _config_dict(cfg: HarmonyConfig) -> dict[str, object]:
    d = asdict(cfg)
    d["env"]["obs"] = cfg.env.obs.to_dict()
    return d


def _save(
    out: Path,
    net: HarmonyNet,
    cfg: HarmonyConfig,
    episode: int,
    decisions: int,
    real: int,
    predicted: int,
    eval_jct: float,
) -> None:
    extra = {
        "episode": episode,
        "decisions": decisions,
        "real_rewards": real,
        "predicted_rewards": predicted,
        "yardstick_avg_jct": None if math.isinf(eval_jct) else round(eval_jct, 1),
        "seed": cfg.seed,
        "scenarios": list(cfg.env.scenarios),
    }
    save_checkpoint(
        out,
        net,
        cfg.env.obs,
        cfg.env.ordering,
        extra,
        lead=cfg.env.lead,
        placement=cfg.env.fallback,
        lead_bonus=cfg.env.lead_bonus,
    )
