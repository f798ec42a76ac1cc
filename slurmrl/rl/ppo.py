"""PPO with GAE and action masking for the TopDRL-style scheduler, in one readable pass.

The loop follows the usual single-file layout: collect ``num_steps`` decisions
from each of ``num_envs`` environments, compute advantages with GAE, then run
a few epochs of clipped-objective minibatch updates. Infeasible actions get a
large negative logit before the softmax (Huang & Ontañón, "A Closer Look at
Invalid Action Masking in Policy Gradient Algorithms", FLAIRS 2022), so the
agent never samples them and their gradients vanish.

Every ``checkpoint_every`` updates the run folder gets the current weights
(``model.safetensors`` + ``config.json``, the format the policy loads) and the
optimiser state (``train_state.pt``, loaded with ``weights_only=True``), so a
run can stop at any time and continue with ``resume=True``. ``log.csv`` gets
one row per update: episode returns and average JCT of finished training
episodes, losses, and every ``eval_every`` updates the average JCT of the
greedy policy on a fixed held-out window.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from slurmrl.errors import ConfigError
from slurmrl.rl.env import EnvConfig, SchedEnv, env_config
from slurmrl.rl.features import ObsConfig
from slurmrl.rl.network import TopDRLNet, masked_logits
from slurmrl.rl.topdrl import TopDRLPolicy, load_checkpoint, new_network, save_checkpoint
from slurmrl.sim.experiment import Workload

STATE = "train_state.pt"
LOG = "log.csv"
RUN = "run.json"


@dataclass(frozen=True)
class PPOConfig:
    env: str = "topdrl-philly-v0"
    env_overrides: dict[str, object] = field(default_factory=dict)
    total_steps: int = 200_000  # agent decisions over all environments
    num_envs: int = 2
    vector: str = "sync"  # "sync" or "async" (one process per environment)
    num_steps: int = 256  # decisions per environment per rollout
    gamma: float = 0.995
    gae_lambda: float = 0.95
    learning_rate: float = 3e-4
    anneal_lr: bool = True
    update_epochs: int = 4
    num_minibatches: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64
    conv: int = 16
    seed: int = 0
    checkpoint_every: int = 10  # updates
    eval_every: int = 10  # updates; 0 = never
    eval_jobs: int = 1024  # size of the held-out evaluation window
    eval_compression: float = 3.0

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return max(1, self.total_steps // self.batch_size)


@dataclass(frozen=True)
class TrainResult:
    out: Path
    updates: int
    steps: int
    wall_seconds: float
    last_eval_jct: float


def _env_fn(cfg: EnvConfig, workloads: Sequence[Workload] | None) -> Callable[[], gym.Env]:
    def make() -> gym.Env:
        torch.set_num_threads(1)
        return SchedEnv(cfg, workloads=workloads)

    return make


def _vector(cfg: PPOConfig, env_cfg: EnvConfig, workloads: Sequence[Workload] | None) -> gym.vector.VectorEnv:
    fns = [_env_fn(env_cfg, workloads) for _ in range(cfg.num_envs)]
    mode = gym.vector.AutoresetMode.SAME_STEP
    if cfg.vector == "async":
        return gym.vector.AsyncVectorEnv(fns, autoreset_mode=mode)
    if cfg.vector == "sync":
        return gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)
    raise ConfigError(f"unknown vector mode '{cfg.vector}'; choose sync or async")


def _to_torch(obs: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(v) for k, v in obs.items()}


def _policy_out(net: TopDRLNet, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    logits, value = net(obs["jobs"], obs["cluster"], obs["globals"])
    return masked_logits(logits, obs["mask"].bool()), value


def held_out_workload(
    env_cfg: EnvConfig, workloads: Sequence[Workload] | None, jobs: int, compression: float
) -> Workload:
    """The last ``jobs`` jobs of the last training workload, compressed: a fixed yardstick."""
    from slurmrl.rl.env import _scenario_workload

    wl = (
        list(workloads)
        if workloads is not None
        else [_scenario_workload(s, env_cfg.workload_seed) for s in env_cfg.scenarios]
    )[-1]
    chosen = wl.trace.jobs[-jobs:]
    t0 = chosen[0].submit_time
    chosen = tuple(replace(j, submit_time=t0 + (j.submit_time - t0) / compression) for j in chosen)
    return replace(wl, trace=replace(wl.trace, jobs=chosen), label=f"{wl.label}[-{jobs}:]x{compression:g}")


def evaluate_net(net: TopDRLNet, env_cfg: EnvConfig, workload: Workload) -> float:
    from slurmrl.policy.placement.topology import Topology
    from slurmrl.sim.experiment import run_policy

    policy = TopDRLPolicy.from_net(net, env_cfg.obs, Topology(), allow_wait=env_cfg.allow_wait)
    return float(run_policy(workload, policy).summary["avg_jct"])  # type: ignore[arg-type]


def train(
    cfg: PPOConfig,
    out: Path,
    *,
    resume: bool = False,
    workloads: Sequence[Workload] | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> TrainResult:
    """Train (or continue training) into ``out``; returns where the run ended."""
    out = Path(out)
    run_file = out / RUN
    if resume:
        if not run_file.is_file():
            raise ConfigError(f"cannot resume: {out} holds no {RUN}", hint="start a new run without --resume")
        saved = json.loads(run_file.read_text())
        stored = dict(saved["ppo"], env_overrides=_overrides_from_json(saved["ppo"]["env_overrides"]))
        cfg = replace(PPOConfig(**stored), total_steps=max(cfg.total_steps, stored["total_steps"]))
    elif run_file.is_file():
        raise ConfigError(
            f"{out} already holds a training run",
            hint="pass --resume to continue it, or pick another --out folder",
        )
    env_cfg = env_config(cfg.env, **cfg.env_overrides)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)
    envs = _vector(cfg, env_cfg, workloads)
    net = new_network(env_cfg.obs, hidden=cfg.hidden, conv=cfg.conv)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, eps=1e-5)
    start_update, steps_done, wall_before = 0, 0, 0.0
    if resume:
        _, loaded = load_checkpoint(out)
        net.load_state_dict(loaded.state_dict())
        state = torch.load(out / STATE, weights_only=True)
        opt.load_state_dict(state["optimizer"])
        start_update = int(state["update"])
        steps_done = int(state["steps"])
        wall_before = float(state["wall"])
    else:
        record = {"ppo": asdict(cfg), "env": _env_dict(env_cfg)}
        run_file.write_text(json.dumps(record, indent=2) + "\n")
    eval_wl = (
        held_out_workload(env_cfg, workloads, cfg.eval_jobs, cfg.eval_compression) if cfg.eval_every else None
    )

    n, t = cfg.num_envs, cfg.num_steps
    space = envs.single_observation_space
    buf_obs = {k: torch.zeros((t, n, *sp.shape), dtype=torch.float32) for k, sp in space.spaces.items()}
    buf_act = torch.zeros((t, n), dtype=torch.long)
    buf_logp = torch.zeros((t, n))
    buf_rew = torch.zeros((t, n))
    buf_done = torch.zeros((t, n))
    buf_val = torch.zeros((t, n))

    # Each resumed segment reseeds from (seed, update) so a resumed run is reproducible too.
    obs, _ = envs.reset(seed=cfg.seed + 1000 * start_update)
    next_obs = _to_torch(obs)
    next_done = torch.zeros(n)
    ep_returns: list[float] = []
    ep_jcts: list[float] = []
    running_ret = np.zeros(n)
    t0 = time.perf_counter()
    last_eval = math.nan
    log_path = out / LOG
    new_log = not log_path.is_file()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=cfg.num_updates, initial=start_update, desc="ppo", unit="update")
    with log_path.open("a", newline="") as fh:
        writer = csv.writer(fh)
        if new_log:
            writer.writerow(
                [
                    "update",
                    "steps",
                    "wall_s",
                    "episodes",
                    "mean_return",
                    "mean_episode_jct",
                    "policy_loss",
                    "value_loss",
                    "entropy",
                    "approx_kl",
                    "eval_avg_jct",
                ]
            )
        for update in range(start_update + 1, cfg.num_updates + 1):
            if cfg.anneal_lr:
                frac = 1.0 - (update - 1) / cfg.num_updates
                opt.param_groups[0]["lr"] = frac * cfg.learning_rate
            # -- rollout -----------------------------------------------------
            for step in range(t):
                for k in buf_obs:
                    buf_obs[k][step] = next_obs[k]
                buf_done[step] = next_done
                with torch.no_grad():
                    logits, value = _policy_out(net, next_obs)
                    dist = torch.distributions.Categorical(logits=logits)
                    action = dist.sample()
                buf_act[step] = action
                buf_logp[step] = dist.log_prob(action)
                buf_val[step] = value
                obs, reward, term, trunc, infos = envs.step(action.numpy())
                done = np.logical_or(term, trunc)
                buf_rew[step] = torch.as_tensor(reward, dtype=torch.float32)
                next_obs, next_done = _to_torch(obs), torch.as_tensor(done, dtype=torch.float32)
                running_ret += reward
                for i in np.flatnonzero(done):
                    ep_returns.append(float(running_ret[i]))
                    running_ret[i] = 0.0
                    final = infos.get("final_info", {})
                    if "avg_jct" in final and final.get("_avg_jct", np.ones(n, bool))[i]:
                        ep_jcts.append(float(final["avg_jct"][i]))
            # -- GAE -----------------------------------------------------------
            with torch.no_grad():
                _, next_value = _policy_out(net, next_obs)
                adv = torch.zeros((t, n))
                last = torch.zeros(n)
                for s in reversed(range(t)):
                    if s == t - 1:
                        nonterminal, nv = 1.0 - next_done, next_value
                    else:
                        nonterminal, nv = 1.0 - buf_done[s + 1], buf_val[s + 1]
                    delta = buf_rew[s] + cfg.gamma * nv * nonterminal - buf_val[s]
                    last = delta + cfg.gamma * cfg.gae_lambda * nonterminal * last
                    adv[s] = last
                returns = adv + buf_val
            # -- update ----------------------------------------------------------
            b_obs = {k: v.reshape(t * n, *v.shape[2:]) for k, v in buf_obs.items()}
            b_act, b_logp = buf_act.reshape(-1), buf_logp.reshape(-1)
            b_adv, b_ret, b_val = adv.reshape(-1), returns.reshape(-1), buf_val.reshape(-1)
            idx = np.arange(t * n)
            mb = max(1, (t * n) // cfg.num_minibatches)
            pg_l = v_l = ent_l = kl = 0.0
            for _ in range(cfg.update_epochs):
                np.random.default_rng(cfg.seed + update).shuffle(idx)
                for lo in range(0, t * n, mb):
                    sel = torch.as_tensor(idx[lo : lo + mb])
                    logits, value = _policy_out(net, {k: v[sel] for k, v in b_obs.items()})
                    dist = torch.distributions.Categorical(logits=logits)
                    logp = dist.log_prob(b_act[sel])
                    ratio = (logp - b_logp[sel]).exp()
                    a = b_adv[sel]
                    a = (a - a.mean()) / (a.std() + 1e-8)
                    pg = torch.max(-a * ratio, -a * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)).mean()
                    v_clip = b_val[sel] + (value - b_val[sel]).clamp(-cfg.clip_coef, cfg.clip_coef)
                    vl = 0.5 * torch.max((value - b_ret[sel]) ** 2, (v_clip - b_ret[sel]) ** 2).mean()
                    # Masked actions have probability 0 and a finite log-probability, so this stays finite.
                    ent = -(dist.probs * dist.logits).sum(-1).mean()
                    loss = pg + cfg.vf_coef * vl - cfg.ent_coef * ent
                    opt.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
                    opt.step()
                    with torch.no_grad():
                        kl = float(((ratio - 1) - (logp - b_logp[sel])).mean())
                    pg_l, v_l, ent_l = float(pg.detach()), float(vl.detach()), float(ent.detach())
            steps_done += t * n
            wall = wall_before + time.perf_counter() - t0
            eval_jct = math.nan
            if eval_wl is not None and (update % cfg.eval_every == 0 or update == cfg.num_updates):
                eval_jct = last_eval = evaluate_net(net, env_cfg, eval_wl)
            writer.writerow(
                [
                    update,
                    steps_done,
                    round(wall, 1),
                    len(ep_returns),
                    round(float(np.mean(ep_returns)), 5) if ep_returns else "",
                    round(float(np.mean(ep_jcts)), 1) if ep_jcts else "",
                    round(pg_l, 5),
                    round(v_l, 5),
                    round(ent_l, 4),
                    round(kl, 5),
                    "" if math.isnan(eval_jct) else round(eval_jct, 1),
                ]
            )
            fh.flush()
            if log is not None and not math.isnan(eval_jct):
                log(f"update {update}: eval avg JCT {eval_jct:.0f} s")
            ep_returns, ep_jcts = [], []
            if update % cfg.checkpoint_every == 0 or update == cfg.num_updates:
                _save(out, net, env_cfg, opt, update, steps_done, wall, cfg)
            if bar is not None:
                bar.update(1)
                if not math.isnan(last_eval):
                    bar.set_postfix(eval_jct=f"{last_eval:.0f}")
    if bar is not None:
        bar.close()
    envs.close()
    wall = wall_before + time.perf_counter() - t0
    return TrainResult(out, cfg.num_updates, steps_done, wall, last_eval)


def _overrides_from_json(data: dict[str, object]) -> dict[str, object]:
    """Undo what JSON did to the environment overrides (tuples became lists, ObsConfig a dict)."""
    out = dict(data)
    if isinstance(out.get("obs"), dict):
        out["obs"] = ObsConfig.from_dict(out["obs"])  # type: ignore[arg-type]
    for key in ("scenarios", "compression"):
        if isinstance(out.get(key), list):
            out[key] = tuple(out[key])  # type: ignore[arg-type]
    return out


def _env_dict(env_cfg: EnvConfig) -> dict[str, object]:
    d = asdict(env_cfg)
    d["obs"] = env_cfg.obs.to_dict()
    return d


def _save(
    out: Path,
    net: TopDRLNet,
    env_cfg: EnvConfig,
    opt: torch.optim.Optimizer,
    update: int,
    steps: int,
    wall: float,
    cfg: PPOConfig,
) -> None:
    extra = {
        "update": update,
        "steps": steps,
        "wall_seconds": round(wall, 1),
        "seed": cfg.seed,
        "env": _env_dict(env_cfg),
    }
    save_checkpoint(out, net, env_cfg.obs, allow_wait=env_cfg.allow_wait, extra=extra)
    tmp = out / (STATE + ".tmp")
    torch.save({"optimizer": opt.state_dict(), "update": update, "steps": steps, "wall": wall}, tmp)
    tmp.replace(out / STATE)
