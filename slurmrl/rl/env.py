"""A Gymnasium environment over the trace simulator, for job-ordering agents.

Each step is one scheduling choice: the agent picks one job of the window
(see :mod:`slurmrl.rl.features`) and the ``topology`` placement gives it the
closest free GPUs; the simulator then asks again at the same instant, and
time moves on only when nothing in the window fits. Decision points where
nothing fits are skipped inside :meth:`step`, and where exactly one job fits
(and waiting is not allowed) that job starts without asking, as the deployed
policy's masked argmax would start it: the agent is consulted only when it
has a real choice.

Waiting: by default "wait" (action ``K``) is allowed only when no job fits.
A scheduler that may leave GPUs idle while work that fits is queued learns
that idling is sometimes good only after very many episodes, and until then
it wastes capacity; work conservation is the usual trade (the same rule as
Slurm's backfill, which starts whatever fits). ``allow_wait=True`` lifts it.

Episodes are windows of ``episode_jobs`` consecutive jobs drawn (seeded)
from the training scenarios' traces, so one episode takes seconds and its
return tracks that window's average JCT.

Warm start: a replay that starts on an empty cluster spends its first hours
with nothing queued, a regime the deployed agent never sees mid-week. With
``warm_policy`` set, the window is preceded by ``warm_jobs`` earlier jobs of
the same trace, and that deployable heuristic (with ``topology`` placement)
schedules everything until the first of the episode's own jobs arrives; the
agent then takes over a busy cluster with the backlog the heuristic left. The
featuriser reads every job the heuristic saw finish, so per-user history is
warm as well. Rewards count only from the hand-over.

Start stride: a warm-up of thousands of jobs costs more than the episode
after it, and starts drawn from every job of a trace almost never recur.
With ``start_stride`` N, episodes start only at every N-th job; the first
episode from a start keeps the simulator at its hand-over (with the
featuriser's history, and a led episode's paired replay) and every later
one continues from a copy (:meth:`Simulator.fork`), seeing step for step
what playing the warm-up again would give.

Reward ``jct``: minus the waiting area (jobs in system x time) accrued since
the last decision, over the jobs unfinished at hand-over and ``reward_time_s``,
so the undiscounted return is minus their mean JCT; ``makespan_weight`` adds
minus that weight x the elapsed time (the undiscounted sum of which is the
episode's remaining makespan), in the same unit.
"""

from __future__ import annotations

import difflib
import functools
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from slurmrl.cluster.model import Placement
from slurmrl.errors import ConfigError
from slurmrl.policy.base import Policy
from slurmrl.policy.registry import make_placement
from slurmrl.policy.view import ClusterView, Decisions, JobView, Start
from slurmrl.rl.area import AreaCurve
from slurmrl.rl.config_checks import check_numbers
from slurmrl.rl.features import (
    CLUSTER_CHANNELS,
    FEATURE_CAP,
    GLOBAL_FEATURES,
    Featurizer,
    ObsConfig,
    RunTimeHistory,
    grid_shape,
)
from slurmrl.rl.topdrl import PLACEMENT
from slurmrl.sim.experiment import SimSettings, Workload, prepare, sim_config
from slurmrl.sim.simulator import Simulator
from slurmrl.traces.schema import Trace

REWARDS = ("jct", "throughput", "makespan")


@dataclass(frozen=True)
class EnvConfig:
    scenarios: tuple[str, ...] = ("philly-512-week1", "philly-512-week2")
    episode_jobs: int = 768
    reward: str = "jct"
    obs: ObsConfig = field(default_factory=ObsConfig)
    allow_wait: bool = False
    # Reward time unit: the "jct" return is minus the window's mean JCT in these units.
    reward_time_s: float = 3600.0
    # Arrival compression drawn per episode from this range: a window of a few
    # hundred jobs at the scenario's own load rarely queues, while the evaluation
    # weeks run with thousands queued; compressing arrivals puts training
    # episodes in the contended regime where the ordering matters.
    compression: tuple[float, float] = (2.0, 4.0)
    max_steps: int = 0  # truncate after this many decisions; 0 = 4 x episode_jobs
    workload_seed: int = 0  # seed of the workloads (time-limit estimates, model classes)
    # Warm start: a registered deployable policy ("" = none) schedules the
    # ``warm_jobs`` jobs before the window (and the window's own until its first
    # arrives) with topology placement, then hands over to the agent.
    warm_policy: str = ""
    warm_jobs: int = 0
    # "jct" reward: weight of the elapsed-time (makespan) term beside the waiting area.
    makespan_weight: float = 0.0
    # A deployable heuristic leading the agent's picks ("" = the plain window):
    # episodes run in slurmrl.rl.led_env.LedSchedEnv, checkpoints name it.
    lead: str = ""
    # Led episodes only: subtract the lead's own replay of the same jobs (paired baseline).
    paired: bool = False
    # Episodes start only at every ``start_stride``-th job of a workload (1: at any
    # job). With a stride the same hand-overs recur, so each start's warm-up (and
    # a led episode's paired replay) is played once and later episodes from it, in
    # any environment sharing the store (Handovers), continue from copies: the
    # warm-up of thousands of jobs dominates a reset. Needs a fixed compression
    # (a drawn factor never recurs).
    start_stride: int = 1


def _warm_policy(name: str) -> Policy:
    """The warm-start heuristic: a registered deployable policy, placing with ``topology``."""
    from slurmrl.policy.registry import make_policy, policy_entry

    if not policy_entry(name).deployable:
        raise ConfigError(
            f"warm_policy '{name}' reads true durations; the warm start needs a deployable policy"
        )
    return make_policy(name, "topology")


# Where an episode starts: (workload index, first job of the window, compression).
StartKey = tuple[int, int, float]


@dataclass(frozen=True)
class Handover:
    """A warm-up played to its hand-over and never played on: episodes starting there run on forks."""

    sim: Simulator
    view: ClusterView | None
    users: RunTimeHistory
    groups: RunTimeHistory


# Hand-overs one store keeps: about 10 MB each after the recipe's warm-up of 6,144
# Philly jobs (benchmarks/train_speed.py prints it), so about 1.3 GB; beyond it the
# least recently used is dropped.
MAX_HANDOVERS = 128


class Handovers:
    """The hand-overs of strided starts (``EnvConfig.start_stride``), and a led episode's paired replay
    from each, shared by the environments of one vector env: a start any of them played, every one
    continues from copies. A key means the same start only under one config and one list of
    workloads, so a store serves environments built alike and refuses others."""

    def __init__(self, size: int = MAX_HANDOVERS) -> None:
        self.size = size
        self._kept: OrderedDict[StartKey, Handover] = OrderedDict()
        self._curves: dict[StartKey, AreaCurve] = {}
        self._owner: tuple[EnvConfig, tuple[int, ...]] | None = None

    def serve(self, config: EnvConfig, workloads: Sequence[Workload]) -> None:
        owner = (config, tuple(id(w) for w in workloads))
        if self._owner is None:
            self._owner = owner
        elif owner != self._owner:
            raise ConfigError(
                "one store of hand-overs serves environments of one config and one workload list"
            )

    def get(self, key: StartKey) -> Handover | None:
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
        return kept

    def keep(self, key: StartKey, handover: Handover) -> None:
        self._kept[key] = handover
        while len(self._kept) > self.size:
            dropped, _ = self._kept.popitem(last=False)
            self._curves.pop(dropped, None)

    def curve(self, key: StartKey) -> AreaCurve | None:
        return self._curves.get(key)

    def keep_curve(self, key: StartKey, curve: AreaCurve) -> None:
        if key in self._kept:
            self._curves[key] = curve

    def clear(self) -> None:
        self._kept.clear()
        self._curves.clear()


@functools.lru_cache(maxsize=8)
def _scenario_workload(name: str, seed: int) -> Workload:
    return prepare(scenario=name, seed=seed)


class SchedEnv(gym.Env):
    """Job-ordering environment; ``workloads`` overrides the config's scenarios (tests, custom traces)."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        config: EnvConfig = EnvConfig(),
        *,
        workloads: Sequence[Workload] | None = None,
        handovers: Handovers | None = None,
    ) -> None:
        if config.reward not in REWARDS:
            raise ConfigError(f"unknown reward '{config.reward}'; choose one of {', '.join(REWARDS)}")
        check_numbers(
            "topdrl environment",
            config,
            counts=("episode_jobs", "start_stride"),
            non_negative=("warm_jobs", "makespan_weight"),
        )
        if config.start_stride > 1 and config.compression[0] != config.compression[1]:
            raise ConfigError(
                f"start_stride {config.start_stride} needs a fixed compression, got a range "
                f"{config.compression[0]:g}-{config.compression[1]:g}",
                hint="episodes share a start's warm-up only at one compression",
            )
        self._warm = _warm_policy(config.warm_policy) if config.warm_policy else None
        self.config = config
        self._workloads = (
            list(workloads)
            if workloads is not None
            else [_scenario_workload(s, config.workload_seed) for s in config.scenarios]
        )
        if not self._workloads:
            raise ConfigError("the environment needs at least one workload or scenario")
        cluster = self._workloads[0].cluster
        if any(w.cluster.describe() != cluster.describe() for w in self._workloads[1:]):
            raise ConfigError(
                "all training workloads of one environment must use the same cluster",
                hint="train one environment per cluster shape",
            )
        self.cluster = cluster
        k, f = config.obs.window, config.obs.job_features
        r, n, g = grid_shape(cluster)
        self.observation_space = spaces.Dict(
            {
                "jobs": spaces.Box(0.0, FEATURE_CAP, (k, f), np.float32),
                "cluster": spaces.Box(0.0, FEATURE_CAP, (len(CLUSTER_CHANNELS), r, n, g), np.float32),
                "globals": spaces.Box(0.0, FEATURE_CAP, (len(GLOBAL_FEATURES),), np.float32),
                "mask": spaces.Box(0, 1, (k + 1,), np.int8),
            }
        )
        self.action_space = spaces.Discrete(k + 1)
        self._max_steps = config.max_steps or 4 * config.episode_jobs
        self.sim: Simulator | None = None
        self._obs = None
        self._ptr = 0
        self._steps = 0
        self._done_count = 0
        self._jobs = 0
        self._handover = 0.0
        self._first_view: ClusterView | None = None
        # Hand-overs kept with a start stride, by (workload, start, compression).
        self.handovers = handovers if handovers is not None else Handovers()
        self.handovers.serve(config, self._workloads)
        self.start_key: StartKey | None = None  # this episode's key in them (None: not kept)
        self.warm_ups_played = 0  # warm-ups played in this environment; the rest were copies

    # -- gymnasium API -------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        index = int(rng.integers(len(self._workloads)))
        wl = self._workloads[index]
        jobs = wl.trace.jobs
        n = min(self.config.episode_jobs, len(jobs))
        stride = self.config.start_stride
        start = stride * int(rng.integers(0, (len(jobs) - n) // stride + 1))
        if options and "start" in options:
            start = int(options["start"])
        warm = min(self.config.warm_jobs, start) if self._warm is not None else 0
        window = jobs[start - warm : start + n]
        lo, hi = self.config.compression
        factor = float(rng.uniform(lo, hi)) if hi > lo else lo
        if factor != 1.0 and window:
            t0 = window[0].submit_time
            window = tuple(replace(j, submit_time=t0 + (j.submit_time - t0) / factor) for j in window)
        self._handover = window[warm].submit_time if window else 0.0
        self.start_key = (index, start, factor) if stride > 1 else None
        self._take_over(wl, replace(wl.trace, jobs=window), warm)
        sim = self._require_sim()
        self._steps = 0
        self._done_count = sim.finished_count
        self._jobs = max(len(window) - sim.finished_count, 1)
        self._ptr = max(len(sim.samples) - 1, 0)
        self._advance()
        self._reward()  # the time before the first decision is nobody's doing
        info = {
            "start": start,
            "jobs": n,
            "compression": factor,
            "warm_jobs": warm,
            "handover": self._handover,
        }
        return self._obs_dict(), info

    def _take_over(self, wl: Workload, trace: Trace, warm: int) -> None:
        """This episode's simulator and featuriser at the hand-over: the warm-up played, or a copy of it."""
        self.featurizer = Featurizer(self.cluster, self.config.obs, make_placement(PLACEMENT))
        kept = self.handovers.get(self.start_key) if self.start_key is not None else None
        if kept is None:
            self.sim = Simulator(trace, self.cluster, config=sim_config(SimSettings(), wl.seed))
            self._first_view = self._warm_up() if warm else None
            self.warm_ups_played += 1 if warm else 0
            if self.start_key is None:
                return
            kept = Handover(self.sim, self._first_view, self.featurizer.users, self.featurizer.groups)
            self.handovers.keep(self.start_key, kept)
        self.sim, self._first_view = kept.sim.fork(kept.view)
        self.featurizer.users, self.featurizer.groups = kept.users.copy(), kept.groups.copy()

    def _warm_up(self) -> ClusterView | None:
        """Let the warm-start heuristic schedule until the hand-over; the first view it left undecided."""
        sim, feat, policy = self._require_sim(), self.featurizer, self._warm
        while (view := sim.next_view(skip_when_full=True)) is not None:
            if view.now >= self._handover:
                return view
            feat.absorb(view.finished)
            # No promise to skip passes (Decisions.promise): it holds for the
            # heuristic, not for the agent that takes over at the next arrival.
            sim.apply(replace(policy.decide(view), promise=None))  # type: ignore[union-attr]
        return None

    def step(self, action):
        if self.sim is None:
            raise ConfigError("call reset() before step()")
        a = int(action)
        obs = self._obs
        k = self.config.obs.window
        if obs is not None and a < k and obs.mask[a]:
            self._start(obs.window[a], obs.placements[a])  # type: ignore[arg-type]
        else:  # wait, or an infeasible pick (treated as wait)
            self.sim.apply(Decisions())
        terminated, reward, truncated, info = self._close_step()
        return self._obs_dict(), reward, terminated, truncated, info

    def _close_step(self) -> tuple[bool, float, bool, dict[str, Any]]:
        """After an action: run to the next decision, then (terminated, reward, truncated, info)."""
        self._steps += 1
        terminated = self._advance()
        reward = self._reward()
        truncated = not terminated and self._steps >= self._max_steps
        info: dict[str, Any] = {}
        if terminated:
            info["avg_jct"] = self._avg_jct()
        return terminated, reward, truncated, info

    def action_masks(self) -> np.ndarray:
        """Feasible actions now: window jobs the topology placement can start, and wait."""
        if self._obs is None:
            mask = np.zeros(self.config.obs.window + 1, dtype=bool)
            mask[-1] = True
            return mask
        return self._obs.mask.copy()

    # -- internals ---------------------------------------------------------

    def _advance(self) -> bool:
        """Move to the next decision point with a feasible pick; True at the end of the episode."""
        sim = self._require_sim()
        feat = self.featurizer
        while True:
            view, self._first_view = self._first_view or sim.next_view(skip_when_full=True), None
            if view is None:
                self._obs = None
                return True
            feat.absorb(view.finished)
            feat.sync_running(view.running)
            window = feat.select(view.pending, view.pool)
            placed = feat.place_window(view, view.pool, window)
            feasible = [i for i, p in enumerate(placed) if p is not None]
            if not feasible:
                sim.apply(Decisions())  # nothing fits: let time pass
                continue
            if len(feasible) == 1 and not self.config.allow_wait:
                # A forced move (one job fits, no wait allowed): the deployed policy makes it too.
                self._start(window[feasible[0]], placed[feasible[0]])  # type: ignore[arg-type]
                continue
            self._obs = feat.observe(
                view, view.pool, window, allow_wait=self.config.allow_wait, placed=placed
            )
            return False

    def _start(self, job: JobView, placement: Placement) -> None:
        self._require_sim().apply(Decisions(starts=(Start(job.job_id, placement),)), again=True)

    def _reward(self) -> float:
        sim = self._require_sim()
        cfg = self.config
        samples = sim.samples
        area = 0.0
        end = len(samples) - 1
        for i in range(self._ptr, end):
            s = samples[i]
            area += (s.pending_jobs + s.running_jobs) * (samples[i + 1].time - s.time)
        t0 = samples[self._ptr].time if samples else 0.0
        elapsed = (samples[end].time - t0) if end > self._ptr else 0.0
        self._ptr = max(end, self._ptr)
        if cfg.reward == "jct":
            return -(area / self._jobs + cfg.makespan_weight * elapsed) / cfg.reward_time_s
        if cfg.reward == "makespan":
            return -elapsed / cfg.reward_time_s
        done = sim.finished_count - self._done_count
        self._done_count = sim.finished_count
        return done / self._jobs

    def _require_sim(self) -> Simulator:
        if self.sim is None:
            raise RuntimeError("the environment has no episode yet: call reset() before step()")
        return self.sim

    def _avg_jct(self) -> float:
        """Mean JCT of the jobs still unfinished at hand-over (all of them without a warm start)."""
        recs = self._require_sim().result().records
        ends = [
            r.end_time - r.submit_time
            for r in recs
            if r.end_time == r.end_time and r.end_time >= self._handover
        ]
        return float(np.mean(ends)) if ends else float("nan")

    def _obs_dict(self) -> dict[str, np.ndarray]:
        if self._obs is None:
            space = self.observation_space
            out = {key: np.zeros(sp.shape, dtype=sp.dtype) for key, sp in space.spaces.items()}
            out["mask"][-1] = 1
            return out
        return self._obs.as_dict()


# -- the registry of named environments ----------------------------------

# v1: episodes on the training weeks' own timeline (their queues are already
# longer than the evaluation weeks': see policies/topdrl-philly/history.md), each
# warm-started by slurm's order over the 6,144 jobs before it (about four days:
# a backlog builds over days, as long jobs pile up; a window of a few thousand
# jobs replayed from an empty cluster hardly queues), and a reward that also
# sees elapsed time.
V1 = EnvConfig(
    episode_jobs=512,
    compression=(1.0, 1.0),
    warm_policy="slurm",
    warm_jobs=6144,
    makespan_weight=0.005,
)

# v2: led by srtf-limit, the best deployable heuristic on the training weeks
# (avg JCT on philly-512-week1 and week2, every ordering with topology placement:
# see policies/topdrl-philly/history.md), rewards paired with srtf-limit's own replay
# of the same jobs; week 2's last three days (philly-512-week2-val) are left out
# of training to choose the checkpoint on.
V2 = replace(
    V1,
    scenarios=("philly-512-week1", "philly-512-week2-head"),
    lead="srtf-limit",
    paired=True,
)

ENVS: dict[str, EnvConfig] = {
    "topdrl-philly-v0": EnvConfig(),
    "topdrl-philly-v1": V1,
    "topdrl-philly-v2": V2,
    "topdrl-philly-throughput-v0": EnvConfig(reward="throughput"),
    "topdrl-philly-makespan-v0": EnvConfig(reward="makespan"),
}


def env_names() -> list[str]:
    return sorted(ENVS)


def env_config(name: str, **overrides: Any) -> EnvConfig:
    if name not in ENVS:
        close = difflib.get_close_matches(name, list(ENVS), n=3, cutoff=0.5)
        raise ConfigError(
            f"unknown environment '{name}'; known: {', '.join(sorted(ENVS))}",
            hint=f"did you mean {', '.join(repr(c) for c in close)}?" if close else None,
        )
    return replace(ENVS[name], **overrides)


def make_env(name: str, *, workloads: Sequence[Workload] | None = None, **overrides: Any) -> SchedEnv:
    """A registered environment by name; keyword overrides replace :class:`EnvConfig` fields.

    A config with a ``lead`` gives the led environment (:mod:`slurmrl.rl.led_env`).
    """
    return build_env(env_config(name, **overrides), workloads=workloads)


def build_env(
    cfg: EnvConfig, *, workloads: Sequence[Workload] | None = None, handovers: Handovers | None = None
) -> SchedEnv:
    """The environment a config describes: led when it names a ``lead``; ``handovers`` shared with
    the other environments built alike in this process (None: its own)."""
    if cfg.lead:
        from slurmrl.rl.led_env import LedSchedEnv

        return LedSchedEnv(cfg, workloads=workloads, handovers=handovers)
    return SchedEnv(cfg, workloads=workloads, handovers=handovers)


def trace_workload(trace: Trace, cluster_spec: str, *, seed: int = 0) -> Workload:
    """A workload from an in-memory trace (tests and custom training sets)."""
    from slurmrl.cluster import load_cluster
    from slurmrl.sim.experiment import offered_load

    cluster = load_cluster(cluster_spec)
    return Workload(trace, cluster, trace.source, 1.0, offered_load(trace, cluster), seed)
