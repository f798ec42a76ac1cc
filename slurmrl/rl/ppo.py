"""PPO with GAE and action masking for the TopDRL-style scheduler.

Laid out like CleanRL's single-file ``ppo.py`` (github.com/vwxyzjn/cleanrl), split
into the steps a reader checks one at a time:

* :func:`collect_rollout` steps ``num_envs`` environments ``num_steps`` times;
* :func:`compute_advantages` runs GAE, bootstrapping truncated episodes from the
  value of their last observation instead of treating the cut as an end;
* :func:`ppo_update` runs the clipped-objective minibatch epochs (stopping early
  when ``target_kl`` is set and exceeded) and returns :class:`UpdateStats`;
* :func:`train` ties them together with resume, checkpoints and evaluation.

Infeasible actions get a large negative logit before the softmax (Huang &
Ontañón, "A Closer Look at Invalid Action Masking in Policy Gradient
Algorithms", FLAIRS 2022), so the agent never samples them and their gradients
vanish.

Every ``checkpoint_every`` updates the run folder gets the current weights
(``model.safetensors`` + ``config.json``, the format the policy loads) and the
optimiser state (``train_state.pt``, loaded with ``weights_only=True``), so a
run can stop at any time and continue with ``resume=True``. ``log.csv`` gets
one row per update: episode returns and average JCT of finished training
episodes, policy and value loss, entropy, approximate KL, clip fraction,
explained variance of the value head, epochs run, every ``eval_every``
updates the average JCT of the greedy policy on a fixed held-out window, and
every ``validate_every`` updates its mean over the validation windows (the
best of which is kept in ``best/``; ``inf`` where the replays were abandoned,
unable to beat it: :func:`slurmrl.rl.yardstick.mean_jct`).
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from slurmrl.errors import ConfigError
from slurmrl.rl.config_checks import check_numbers
from slurmrl.rl.env import EnvConfig, Handovers, build_env, env_config
from slurmrl.rl.features import ObsConfig
from slurmrl.rl.nets.torch_layers import masked_logits
from slurmrl.rl.nets.torch_nets import TopDRLNet
from slurmrl.rl.runs import one_core
from slurmrl.rl.topdrl import PLACEMENT, TopDRLPolicy, load_checkpoint, new_network, save_checkpoint
from slurmrl.rl.yardstick import mean_jct, validation_workloads
from slurmrl.sim.cutoff import JctCutoff
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
    eval_jobs: int = 1024  # size of the held-out evaluation window; 0 = the whole last workload
    eval_compression: float = 3.0
    # Stop an update's epochs once the approximate KL to the rollout policy exceeds this;
    # None = always run ``update_epochs`` (CleanRL's ``--target-kl``, off by default there too).
    target_kl: float | None = None
    # Stop after the update that takes the run's wall time past this many seconds
    # (0 = never): the learning-rate schedule still assumes ``total_steps``.
    wall_limit_s: float = 0.0
    # A critic of its own (a second network; only its value head is read), trained
    # with its own optimiser and gradient clipping, so the value loss, large while
    # returns are being learned, never crowds the policy gradient out of the
    # shared clipping budget. The actor's own value head is then unused.
    separate_critic: bool = False
    # A scenario of the training side ("" = none) on which the greedy policy is
    # replayed at the start and every ``validate_every`` updates; the best replay's
    # weights are kept in ``out/best`` (the checkpoint to ship).
    validate: str = ""
    validate_every: int = 10
    validate_seeds: int = 1  # workload seeds of ``validate`` replayed per check (their mean is compared)

    def __post_init__(self) -> None:
        check_numbers(
            "PPO",
            self,
            counts=(
                "total_steps",
                "num_envs",
                "num_steps",
                "update_epochs",
                "num_minibatches",
                "validate_seeds",
            ),
            fractions=("gamma", "gae_lambda"),
            positive=("target_kl",),
            non_negative=("learning_rate", "wall_limit_s"),
        )

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return max(1, self.total_steps // self.batch_size)


# A separate value network and its optimiser (PPOConfig.separate_critic).
Critic = tuple[TopDRLNet, torch.optim.Optimizer]


@dataclass(frozen=True)
class TrainResult:
    out: Path
    updates: int
    steps: int
    wall_seconds: float
    last_eval_jct: float
    cpu_seconds: float = 0.0  # CPU time of this process (all threads) over the run's segments


def _env_fn(
    cfg: EnvConfig, workloads: Sequence[Workload] | None, handovers: Handovers | None
) -> Callable[[], gym.Env]:
    def make() -> gym.Env:
        one_core()
        return build_env(cfg, workloads=workloads, handovers=handovers)

    return make


def _vector(cfg: PPOConfig, env_cfg: EnvConfig, workloads: Sequence[Workload] | None) -> gym.vector.VectorEnv:
    # Environments stepped in this process share the hand-overs of strided starts;
    # one process each (async) keeps its own.
    shared = Handovers() if cfg.vector == "sync" else None
    fns = [_env_fn(env_cfg, workloads, shared) for _ in range(cfg.num_envs)]
    # SAME_STEP: a done step returns the next episode's first observation and puts the
    # episode's last one in infos["final_obs"], which collect_rollout bootstraps truncations from.
    mode = gym.vector.AutoresetMode.SAME_STEP
    if cfg.vector == "async":
        return gym.vector.AsyncVectorEnv(fns, autoreset_mode=mode)
    if cfg.vector == "sync":
        return gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)
    raise ConfigError(f"unknown vector mode '{cfg.vector}'; choose sync or async")


def _to_torch(obs: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(v) for k, v in obs.items()}


def _policy_out(
    net: TopDRLNet, obs: dict[str, torch.Tensor], critic: TopDRLNet | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Masked logits (plus a led environment's ``prior``) and values, from ``critic`` when there is one."""
    logits, value = net(obs["jobs"], obs["cluster"], obs["globals"])
    if "prior" in obs:
        logits = logits + obs["prior"]
    if critic is not None:
        value = critic.values(obs["jobs"], obs["cluster"], obs["globals"])
    return masked_logits(logits, obs["mask"].bool()), value


def zero_logit_heads(net: TopDRLNet) -> None:
    """Zero the layers giving the logits: the network outputs 0, so a led policy starts as its lead.

    Gradients still reach them (their inputs are not zero), so learning moves
    the policy away from the heuristic only where the returns say so.
    """
    with torch.no_grad():
        for layer in (net.score[-1], net.wait[-1]):
            layer.weight.zero_()
            layer.bias.zero_()


def held_out_workload(
    env_cfg: EnvConfig, workloads: Sequence[Workload] | None, jobs: int, compression: float
) -> Workload:
    """The last ``jobs`` jobs (0: all) of the last training workload, compressed: a fixed yardstick.

    Windows of a few thousand jobs replayed from an empty cluster hardly queue on the
    Philly weeks (every heuristic gives the same average JCT on them), so the
    ``topdrl-philly-v1`` trainer measures on the whole last training week instead.
    """
    from slurmrl.rl.env import _scenario_workload

    wl = (
        list(workloads)
        if workloads is not None
        else [_scenario_workload(s, env_cfg.workload_seed) for s in env_cfg.scenarios]
    )[-1]
    chosen = wl.trace.jobs[-jobs:] if jobs else wl.trace.jobs
    if compression == 1.0:
        return replace(wl, trace=replace(wl.trace, jobs=chosen), label=f"{wl.label}[-{jobs or len(chosen)}:]")
    t0 = chosen[0].submit_time
    chosen = tuple(replace(j, submit_time=t0 + (j.submit_time - t0) / compression) for j in chosen)
    return replace(wl, trace=replace(wl.trace, jobs=chosen), label=f"{wl.label}[-{jobs}:]x{compression:g}")


def evaluate_net(
    net: TopDRLNet, env_cfg: EnvConfig, windows: Sequence[Workload], beat: float = math.inf
) -> float:
    """Mean over ``windows`` of the greedy policy's (with its lead) average JCT, as `slurmrl evaluate` gives it.

    ``math.inf`` once the replays can no longer come in under ``beat`` (see :func:`mean_jct`).
    """
    from slurmrl.policy.registry import make_placement
    from slurmrl.sim.experiment import run_policy

    def replay(w: Workload, cutoff: JctCutoff | None) -> float:
        policy = TopDRLPolicy.from_net(
            net, env_cfg.obs, make_placement(PLACEMENT), allow_wait=env_cfg.allow_wait, lead=env_cfg.lead
        )
        return float(run_policy(w, policy, cutoff=cutoff).summary["avg_jct"])  # type: ignore[arg-type]

    return mean_jct(windows, replay, beat)


# -- rollout ---------------------------------------------------------------------


@dataclass(frozen=True)
class Rollout:
    """``num_steps`` x ``num_envs`` decisions; row ``s`` holds the step taken from ``obs[s]``.

    ``terminated``/``truncated`` describe how step ``s`` ended (gymnasium's flags), and
    ``final_values`` holds the value of the episode's last observation where step ``s``
    truncated it (zero elsewhere). ``next_obs``/``next_done`` are what the next rollout
    starts from; ``running_return`` carries the returns of unfinished episodes over.
    """

    obs: dict[str, torch.Tensor]
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_values: torch.Tensor
    next_obs: dict[str, torch.Tensor]
    next_done: torch.Tensor
    running_return: np.ndarray
    episode_returns: tuple[float, ...]
    episode_jcts: tuple[float, ...]


def _stack_obs(items: Sequence[dict[str, np.ndarray]]) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(np.stack([o[k] for o in items])) for k in items[0]}


def collect_rollout(
    net: TopDRLNet,
    envs: gym.vector.VectorEnv,
    next_obs: dict[str, torch.Tensor],
    running_return: np.ndarray,
    num_steps: int,
    critic: TopDRLNet | None = None,
) -> Rollout:
    """Step every environment ``num_steps`` times with actions sampled from ``net``.

    The vector env runs gymnasium's SAME_STEP autoreset: the observation returned with a
    done flag is already the next episode's first one, and the episode's last observation
    is in ``infos["final_obs"]``. Where an episode was truncated (a step cap, not a real
    end) its value is computed from that final observation so GAE can bootstrap from it.
    """
    n = envs.num_envs
    space = envs.single_observation_space
    obs_buf = {
        k: torch.zeros((num_steps, n, *sp.shape), dtype=torch.float32) for k, sp in space.spaces.items()
    }
    actions = torch.zeros((num_steps, n), dtype=torch.long)
    logprobs, values, rewards = (torch.zeros((num_steps, n)) for _ in range(3))
    terminated, truncated, final_values = (torch.zeros((num_steps, n)) for _ in range(3))
    running = running_return.copy()
    ep_returns: list[float] = []
    ep_jcts: list[float] = []
    done = np.zeros(n, dtype=bool)
    for step in range(num_steps):
        for k in obs_buf:
            obs_buf[k][step] = next_obs[k]
        with torch.inference_mode():  # a rollout step's sampling: no autograd bookkeeping
            logits, value = _policy_out(net, next_obs, critic)
            dist = torch.distributions.Categorical(logits=logits, validate_args=False)
            action = dist.sample()
            logprob = dist.log_prob(action)
        actions[step] = action
        logprobs[step] = logprob
        values[step] = value
        obs, reward, term, trunc, infos = envs.step(action.numpy())
        term, trunc = np.asarray(term, dtype=bool), np.asarray(trunc, dtype=bool)
        done = term | trunc
        rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
        terminated[step] = torch.as_tensor(term, dtype=torch.float32)
        truncated[step] = torch.as_tensor(trunc & ~term, dtype=torch.float32)
        cut = np.flatnonzero(trunc & ~term)
        if len(cut):
            final_obs = _stack_obs([infos["final_obs"][i] for i in cut])
            with torch.no_grad():
                _, v_final = _policy_out(net, final_obs, critic)
            final_values[step, torch.as_tensor(cut)] = v_final.float()
        next_obs = _to_torch(obs)
        running += reward
        for i in np.flatnonzero(done):
            ep_returns.append(float(running[i]))
            running[i] = 0.0
            final = infos.get("final_info", {})
            if "avg_jct" in final and final.get("_avg_jct", np.ones(n, bool))[i]:
                ep_jcts.append(float(final["avg_jct"][i]))
    return Rollout(
        obs=obs_buf,
        actions=actions,
        logprobs=logprobs,
        values=values,
        rewards=rewards,
        terminated=terminated,
        truncated=truncated,
        final_values=final_values,
        next_obs=next_obs,
        next_done=torch.as_tensor(done, dtype=torch.float32),
        running_return=running,
        episode_returns=tuple(ep_returns),
        episode_jcts=tuple(ep_jcts),
    )


# -- advantages --------------------------------------------------------------------


def compute_advantages(
    rewards: torch.Tensor,
    values: torch.Tensor,
    terminated: torch.Tensor,
    last_value: torch.Tensor,
    gamma: float,
    gae_lambda: float,
    *,
    truncated: torch.Tensor | None = None,
    final_values: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation (Schulman et al., 2016) over ``[T, N]`` arrays.

    Step ``s`` moved from the state valued ``values[s]`` and ended the episode if
    ``terminated[s]`` (no future value) or ``truncated[s]`` (cut short: the future is
    worth ``final_values[s]``, the value of the episode's last observation). Either
    way the advantage does not flow back across the end, since ``values[s + 1]``
    belongs to the next episode. ``last_value`` is the value of the observation after
    step ``T - 1``. Returns ``(advantages, returns)`` with ``returns = advantages + values``.
    """
    rewards, values = torch.as_tensor(rewards), torch.as_tensor(values)
    terminated = torch.as_tensor(terminated, dtype=rewards.dtype)
    next_values = torch.cat([values[1:], torch.as_tensor(last_value, dtype=values.dtype).unsqueeze(0)])
    ended = terminated
    if truncated is not None:
        if final_values is None:
            raise ValueError("truncated steps need final_values to bootstrap from")
        cut = torch.as_tensor(truncated, dtype=rewards.dtype)
        next_values = torch.where(cut.bool(), torch.as_tensor(final_values, dtype=values.dtype), next_values)
        ended = torch.clamp(terminated + cut, max=1.0)
    delta = rewards + gamma * next_values * (1.0 - terminated) - values
    advantages = torch.zeros_like(delta)
    last = torch.zeros_like(delta[0])
    for s in reversed(range(delta.shape[0])):
        last = delta[s] + gamma * gae_lambda * (1.0 - ended[s]) * last
        advantages[s] = last
    return advantages, advantages + values


def explained_variance(predicted: torch.Tensor, target: torch.Tensor) -> float:
    """``1 - Var[target - predicted] / Var[target]``: 1 is perfect, 0 no better than the mean.

    NaN when the targets do not vary (nothing to explain).
    """
    var_y = float(torch.var(target, unbiased=False))
    if var_y == 0.0:
        return math.nan
    return 1.0 - float(torch.var(target - predicted, unbiased=False)) / var_y


# -- update ----------------------------------------------------------------------


class Batch(NamedTuple):
    """A rollout flattened to ``T * N`` samples, ready for minibatches."""

    obs: dict[str, torch.Tensor]
    actions: torch.Tensor
    logprobs: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    values: torch.Tensor


def make_batch(rollout: Rollout, advantages: torch.Tensor, returns: torch.Tensor) -> Batch:
    return Batch(
        obs={k: v.reshape(-1, *v.shape[2:]) for k, v in rollout.obs.items()},
        actions=rollout.actions.reshape(-1),
        logprobs=rollout.logprobs.reshape(-1),
        advantages=advantages.reshape(-1),
        returns=returns.reshape(-1),
        values=rollout.values.reshape(-1),
    )


@dataclass(frozen=True)
class UpdateStats:
    """What one PPO update did; losses, entropy and clip fraction are means over its minibatches."""

    policy_loss: float
    value_loss: float
    entropy: float
    approx_kl: float  # mean over the minibatches of the last epoch run
    clip_fraction: float  # share of samples whose ratio left [1 - clip, 1 + clip]
    explained_variance: float  # of the rollout's values for the GAE returns
    epochs: int  # epochs run; fewer than update_epochs when target_kl stopped them


class LossWeights(Protocol):
    """The part of a trainer's config one gradient step reads."""

    vf_coef: float
    ent_coef: float
    max_grad_norm: float


@dataclass
class UpdateTally:
    """Running sums over one update's minibatches, and the per-epoch KL that decides the early stop.

    Shared by every PPO-style update here (single-agent and multi-agent), so
    their training logs report the same statistics computed the same way.
    """

    pg: float = 0.0
    value: float = 0.0
    entropy: float = 0.0
    clip: float = 0.0
    count: int = 0
    epochs: int = 0
    epoch_kl: float = 0.0
    kls: list[float] = field(default_factory=list)

    def step(
        self,
        net: nn.Module,
        opt: torch.optim.Optimizer,
        losses: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        cfg: LossWeights,
        approx_kl: torch.Tensor,
        clip_fraction: torch.Tensor,
        critic: tuple[nn.Module, torch.optim.Optimizer] | None = None,
    ) -> None:
        """One gradient step on ``pg + vf_coef * value - ent_coef * entropy``, its figures recorded.

        With a separate ``critic`` (network, optimiser) each network's gradient is
        clipped to ``max_grad_norm`` on its own.
        """
        pg, vl, ent = losses
        loss = pg + cfg.vf_coef * vl - cfg.ent_coef * ent
        pairs = [(net, opt)] + ([critic] if critic is not None else [])
        for _, o in pairs:
            o.zero_grad()
        loss.backward()
        for module, o in pairs:
            nn.utils.clip_grad_norm_(module.parameters(), cfg.max_grad_norm)
            o.step()
        self.kls.append(float(approx_kl))
        self.clip += float(clip_fraction)
        self.pg += float(pg.detach())
        self.value += float(vl.detach())
        self.entropy += float(ent.detach())
        self.count += 1

    def end_epoch(self, target_kl: float | None) -> bool:
        """Close an epoch; True when its mean KL says to stop."""
        self.epochs += 1
        self.epoch_kl = float(np.mean(self.kls)) if self.kls else 0.0
        self.kls = []
        return kl_exceeded(self.epoch_kl, target_kl)

    def stats(self, values: torch.Tensor, returns: torch.Tensor) -> UpdateStats:
        n = max(self.count, 1)
        return UpdateStats(
            policy_loss=self.pg / n,
            value_loss=self.value / n,
            entropy=self.entropy / n,
            approx_kl=self.epoch_kl,
            clip_fraction=self.clip / n,
            explained_variance=explained_variance(values, returns),
            epochs=self.epochs,
        )


def clipped_surrogate(ratio: torch.Tensor, adv: torch.Tensor, clip: float) -> torch.Tensor:
    """PPO's per-sample clipped objective, as a loss (Schulman et al., 2017)."""
    return torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip))


def kl_exceeded(approx_kl: float, target_kl: float | None) -> bool:
    """The early-stop rule: stop the epochs once the policy moved further than ``target_kl``."""
    return target_kl is not None and approx_kl > target_kl


def ppo_update(
    net: TopDRLNet,
    opt: torch.optim.Optimizer,
    batch: Batch,
    cfg: PPOConfig,
    *,
    shuffle_seed: int = 0,
    critic: Critic | None = None,
) -> UpdateStats:
    """Clipped-objective epochs over shuffled minibatches (Schulman et al., 2017).

    Advantages are normalised per minibatch and the value loss is clipped around the
    rollout's values, as CleanRL's ppo.py does. After each epoch the mean approximate
    KL (the ``(r - 1) - log r`` estimator, J. Schulman, "Approximating KL divergence",
    2020) is checked against ``cfg.target_kl``.
    """
    size = batch.actions.shape[0]
    idx = np.arange(size)
    mb = max(1, size // cfg.num_minibatches)
    tally = UpdateTally()
    for _ in range(cfg.update_epochs):
        np.random.default_rng(shuffle_seed).shuffle(idx)
        for lo in range(0, size, mb):
            sel = torch.as_tensor(idx[lo : lo + mb])
            logits, value = _policy_out(
                net, {k: v[sel] for k, v in batch.obs.items()}, critic[0] if critic else None
            )
            dist = torch.distributions.Categorical(logits=logits)
            logp = dist.log_prob(batch.actions[sel])
            log_ratio = logp - batch.logprobs[sel]
            ratio = log_ratio.exp()
            a = batch.advantages[sel]
            a = (a - a.mean()) / (a.std() + 1e-8)
            pg = clipped_surrogate(ratio, a, cfg.clip_coef).mean()
            old_v, ret = batch.values[sel], batch.returns[sel]
            v_clip = old_v + (value - old_v).clamp(-cfg.clip_coef, cfg.clip_coef)
            vl = 0.5 * torch.max((value - ret) ** 2, (v_clip - ret) ** 2).mean()
            # Masked actions have probability 0 and a finite log-probability, so this stays finite.
            ent = -(dist.probs * dist.logits).sum(-1).mean()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - log_ratio).mean()
                clipped = ((ratio - 1).abs() > cfg.clip_coef).float().mean()
            tally.step(net, opt, (pg, vl, ent), cfg, approx_kl, clipped, critic)
        if tally.end_epoch(cfg.target_kl):
            break
    return tally.stats(batch.values, batch.returns)


# -- training loop -------------------------------------------------------------------

LOG_FIELDS = (
    "update",
    "steps",
    "wall_s",
    "cpu_s",
    "episodes",
    "mean_return",
    "mean_episode_jct",
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "explained_variance",
    "epochs",
    "eval_avg_jct",
    "val_avg_jct",
)
BEST = "best"


def _round(x: float, digits: int) -> float | str:
    return "" if math.isnan(x) else round(x, digits)


@dataclass
class _Standing:
    """Where a run stands between updates: what its state file carries over a resume."""

    update: int = 0
    steps: int = 0
    wall: float = 0.0  # seconds of earlier segments
    cpu: float = 0.0
    best_val: float = math.inf  # the best validation avg JCT so far


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
    cfg = _run_config(cfg, out, resume)
    env_cfg = env_config(cfg.env, **cfg.env_overrides)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    one_core()
    envs = _vector(cfg, env_cfg, workloads)
    net = new_network(env_cfg.obs, hidden=cfg.hidden, conv=cfg.conv)
    if env_cfg.lead:
        zero_logit_heads(net)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, eps=1e-5)
    critic = _critic(cfg, env_cfg)
    if resume:
        standing = _resume(out, net, opt, critic)
    else:
        standing = _Standing()
        (out / RUN).write_text(json.dumps({"ppo": asdict(cfg), "env": _env_dict(env_cfg)}, indent=2) + "\n")
    eval_wl = (
        held_out_workload(env_cfg, workloads, cfg.eval_jobs, cfg.eval_compression) if cfg.eval_every else None
    )
    val_wls = validation_workloads(
        [cfg.validate] if cfg.validate else [], env_cfg.workload_seed, cfg.validate_seeds
    )
    if val_wls and not resume:  # update 0: the lead itself
        standing.best_val = _validate(out, net, env_cfg, val_wls, standing, log)

    # Each resumed segment reseeds from (seed, update) so a resumed run is reproducible too.
    obs, _ = envs.reset(seed=cfg.seed + 1000 * standing.update)
    next_obs = _to_torch(obs)
    running_return = np.zeros(cfg.num_envs)
    t0, c0 = time.perf_counter(), time.process_time()
    last_eval = math.nan
    bar = _progress_bar(cfg, standing.update) if progress else None
    first = standing.update + 1
    with _TrainLog(out / LOG) as train_log:
        for update in range(first, cfg.num_updates + 1):
            _anneal(cfg, update, opt, critic)
            critic_net = critic[0] if critic else None
            rollout = collect_rollout(net, envs, next_obs, running_return, cfg.num_steps, critic_net)
            next_obs, running_return = rollout.next_obs, rollout.running_return
            stats = _learn(net, opt, critic, rollout, cfg, update)
            standing.update, standing.steps = update, standing.steps + cfg.batch_size
            last = update == cfg.num_updates
            eval_jct = math.nan
            if eval_wl is not None and (update % cfg.eval_every == 0 or last):
                eval_jct = last_eval = evaluate_net(net, env_cfg, [eval_wl])
            val_jct = math.nan
            stop = bool(cfg.wall_limit_s) and standing.wall + time.perf_counter() - t0 >= cfg.wall_limit_s
            if val_wls and (update % cfg.validate_every == 0 or last or stop):
                val_jct = evaluate_net(net, env_cfg, val_wls, standing.best_val)
                standing.best_val = _keep_best(out, net, env_cfg, val_jct, standing, log)
            times = (standing.wall + time.perf_counter() - t0, standing.cpu + time.process_time() - c0)
            train_log.write(standing, times, rollout, stats, eval_jct, val_jct)
            if log is not None and not math.isnan(eval_jct):
                log(f"update {update}: eval avg JCT {eval_jct:.0f} s")
            out_of_time = bool(cfg.wall_limit_s) and times[0] >= cfg.wall_limit_s and not last
            if update % cfg.checkpoint_every == 0 or last or out_of_time:
                _save(out, net, env_cfg, (opt, critic, standing.best_val), update, standing.steps, times, cfg)
            if out_of_time:
                break
            if bar is not None:
                _show(bar, stats, last_eval)
    if bar is not None:
        bar.close()
    envs.close()
    wall = standing.wall + time.perf_counter() - t0
    cpu = standing.cpu + time.process_time() - c0
    return TrainResult(out, standing.update, standing.steps, wall, last_eval, cpu)


def _run_config(cfg: PPOConfig, out: Path, resume: bool) -> PPOConfig:
    """The config to train with: the saved run's when resuming (with more steps if asked)."""
    run_file = out / RUN
    if resume:
        if not run_file.is_file():
            raise ConfigError(f"cannot resume: {out} holds no {RUN}", hint="start a new run without --resume")
        saved = json.loads(run_file.read_text())
        stored = dict(saved["ppo"], env_overrides=_overrides_from_json(saved["ppo"]["env_overrides"]))
        return replace(PPOConfig(**stored), total_steps=max(cfg.total_steps, stored["total_steps"]))
    if run_file.is_file():
        raise ConfigError(
            f"{out} already holds a training run",
            hint="pass --resume to continue it, or pick another --out folder",
        )
    return cfg


def _resume(out: Path, net: TopDRLNet, opt: torch.optim.Optimizer, critic: Critic | None) -> _Standing:
    """Load the last checkpoint's weights and optimiser state; where the run stood then."""
    _, loaded = load_checkpoint(out)
    net.load_state_dict(loaded.state_dict())
    state = torch.load(out / STATE, weights_only=True)
    opt.load_state_dict(state["optimizer"])
    if critic is not None:
        critic[0].load_state_dict(state["critic"])
        critic[1].load_state_dict(state["critic_optimizer"])
    return _Standing(
        update=int(state["update"]),
        steps=int(state["steps"]),
        wall=float(state["wall"]),
        cpu=float(state.get("cpu", 0.0)),
        best_val=float(state.get("best_val", math.inf)),
    )


def _anneal(cfg: PPOConfig, update: int, opt: torch.optim.Optimizer, critic: Critic | None) -> None:
    """Linear learning-rate decay to zero over the run, for the actor and the critic alike."""
    if not cfg.anneal_lr:
        return
    frac = 1.0 - (update - 1) / cfg.num_updates
    for o in [opt] + ([critic[1]] if critic else []):
        o.param_groups[0]["lr"] = frac * cfg.learning_rate


def _learn(
    net: TopDRLNet,
    opt: torch.optim.Optimizer,
    critic: Critic | None,
    rollout: Rollout,
    cfg: PPOConfig,
    update: int,
) -> UpdateStats:
    """Advantages of one rollout (bootstrapped from its last observation), then the PPO epochs on it."""
    with torch.no_grad():
        _, last_value = _policy_out(net, rollout.next_obs, critic[0] if critic else None)
    adv, returns = compute_advantages(
        rollout.rewards,
        rollout.values,
        rollout.terminated,
        last_value,
        cfg.gamma,
        cfg.gae_lambda,
        truncated=rollout.truncated,
        final_values=rollout.final_values,
    )
    return ppo_update(
        net, opt, make_batch(rollout, adv, returns), cfg, shuffle_seed=cfg.seed + update, critic=critic
    )


class _TrainLog:
    """``log.csv``, one row per update, appended to across resumed segments.

    A log started by an older version keeps its own columns; new ones are
    left out of it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fields = list(LOG_FIELDS)
        self.new = not path.is_file()
        if not self.new:
            with path.open(newline="") as fh:
                self.fields = next(csv.reader(fh), self.fields)

    def __enter__(self) -> _TrainLog:
        self._fh = self.path.open("a", newline="")
        self._writer = csv.DictWriter(self._fh, fieldnames=self.fields, extrasaction="ignore")
        if self.new:
            self._writer.writeheader()
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()

    def write(
        self,
        standing: _Standing,
        times: tuple[float, float],
        rollout: Rollout,
        stats: UpdateStats,
        eval_jct: float,
        val_jct: float,
    ) -> None:
        ep_returns, ep_jcts = rollout.episode_returns, rollout.episode_jcts
        self._writer.writerow(
            {
                "update": standing.update,
                "steps": standing.steps,
                "wall_s": round(times[0], 1),
                "cpu_s": round(times[1], 1),
                "episodes": len(ep_returns),
                "mean_return": round(float(np.mean(ep_returns)), 5) if ep_returns else "",
                "mean_episode_jct": round(float(np.mean(ep_jcts)), 1) if ep_jcts else "",
                "policy_loss": round(stats.policy_loss, 5),
                "value_loss": round(stats.value_loss, 5),
                "entropy": round(stats.entropy, 4),
                "approx_kl": round(stats.approx_kl, 5),
                "clip_fraction": round(stats.clip_fraction, 4),
                "explained_variance": _round(stats.explained_variance, 4),
                "epochs": stats.epochs,
                "eval_avg_jct": _round(eval_jct, 1),
                "val_avg_jct": _round(val_jct, 1),
            }
        )
        self._fh.flush()


def _progress_bar(cfg: PPOConfig, done: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=cfg.num_updates, initial=done, desc="ppo", unit="update")


def _show(bar: Any, stats: UpdateStats, last_eval: float) -> None:
    bar.update(1)
    postfix = {"kl": f"{stats.approx_kl:.3f}", "clip": f"{stats.clip_fraction:.2f}"}
    if not math.isnan(last_eval):
        postfix["eval_jct"] = f"{last_eval:.0f}"
    bar.set_postfix(postfix)


def _critic(cfg: PPOConfig, env_cfg: EnvConfig) -> Critic | None:
    """The separate critic and its optimiser, when the config asks for one."""
    if not cfg.separate_critic:
        return None
    critic = new_network(env_cfg.obs, hidden=cfg.hidden, conv=cfg.conv)
    return critic, torch.optim.Adam(critic.parameters(), lr=cfg.learning_rate, eps=1e-5)


def _validate(
    out: Path,
    net: TopDRLNet,
    env_cfg: EnvConfig,
    windows: Sequence[Workload],
    standing: _Standing,
    log: Callable[[str], None] | None,
) -> float:
    """Replay the validation windows now; the best mean avg JCT so far (see :func:`_keep_best`)."""
    jct = evaluate_net(net, env_cfg, windows, standing.best_val)
    return _keep_best(out, net, env_cfg, jct, standing, log)


def _keep_best(
    out: Path,
    net: TopDRLNet,
    env_cfg: EnvConfig,
    jct: float,
    standing: _Standing,
    log: Callable[[str], None] | None,
) -> float:
    """Keep these weights in ``out/best`` if their validation ``jct`` beats the best so far; the new best."""
    best = standing.best_val
    if jct < best:
        save_checkpoint(out / BEST, net, env_cfg.obs, allow_wait=env_cfg.allow_wait, lead=env_cfg.lead)
    best = min(jct, best)
    if log is not None and math.isinf(jct):
        log(f"update {standing.update}: validation replay abandoned, it could no longer beat {best:.0f} s")
    elif log is not None:
        log(f"update {standing.update}: validation avg JCT {jct:.0f} s (best {best:.0f} s)")
    return best


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
    optimisers: tuple[torch.optim.Optimizer, Critic | None, float],
    update: int,
    steps: int,
    times: tuple[float, float],
    cfg: PPOConfig,
) -> None:
    wall, cpu = times
    extra = {
        "update": update,
        "steps": steps,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "seed": cfg.seed,
        "env": _env_dict(env_cfg),
    }
    save_checkpoint(out, net, env_cfg.obs, allow_wait=env_cfg.allow_wait, lead=env_cfg.lead, extra=extra)
    opt, critic, best_val = optimisers
    state: dict[str, object] = {
        "optimizer": opt.state_dict(),
        "update": update,
        "steps": steps,
        "wall": wall,
        "cpu": cpu,
        "best_val": best_val,
    }
    if critic is not None:
        state["critic"] = critic[0].state_dict()
        state["critic_optimizer"] = critic[1].state_dict()
    tmp = out / (STATE + ".tmp")
    torch.save(state, tmp)
    tmp.replace(out / STATE)
