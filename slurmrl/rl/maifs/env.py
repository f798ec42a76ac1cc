"""Training episodes: windows of training traces replayed with elastic jobs, and their rewards.

An episode draws ``episode_jobs`` consecutive jobs of a training workload
(seeded), divides their inter-arrival times by a factor drawn from
``compression`` (the evaluation weeks are more loaded than the training
ones: offered load 1.24 and 1.44 against 1.12 and 0.89), and replays them on
an empty cluster under the simulator's settings with the given chooser,
recording every multi-agent step. With ``lead`` (a deployable rigid
heuristic) the agents are led by it (:mod:`.policy`): the episode starts from
that heuristic's decisions, which zero logits reproduce.

Reward of step ``s``: minus the number of jobs in the system (waiting or
running) integrated from its time to the next step's (to the last job's end
after the last step), over ``3600 x jobs``. Over an episode the rewards sum
to minus the average JCT in hours, so the return is the objective, and each
step is charged for the time until the agents next act, when their choices
(who started, on how many GPUs) decide how fast jobs leave.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from slurmrl.errors import ConfigError
from slurmrl.rl.config_checks import check_numbers
from slurmrl.rl.lead import lead_policy
from slurmrl.rl.maifs.coordination import AgentNet, Chooser, MaifsStep
from slurmrl.rl.maifs.obs import MaifsObs
from slurmrl.rl.maifs.policy import LEAD_PLACEMENT, MaifsPolicy
from slurmrl.sim.experiment import SimSettings, Workload, prepare, run_policy
from slurmrl.sim.records import JobRecord

DEFAULT_ELASTIC = "fraction:0.5"


@dataclass(frozen=True)
class EnvConfig:
    scenarios: tuple[str, ...] = ("philly-512-week1", "philly-512-week2")
    episode_jobs: int = 1000
    compression: tuple[float, float] = (1.0, 1.5)  # arrival-time divisor drawn uniformly from this range
    elastic: str = DEFAULT_ELASTIC
    obs: MaifsObs = field(default_factory=MaifsObs)
    workload_seed: int = 0
    lead: str = ""  # a deployable heuristic the agents follow ("": none)


@dataclass(frozen=True)
class Episode:
    steps: tuple[MaifsStep, ...]
    rewards: np.ndarray  # [T] float32, one per step
    avg_jct: float
    label: str


def jobs_in_system_integral(records: Sequence[JobRecord], times: np.ndarray) -> np.ndarray:
    """``F(t)`` at each of ``times``: the integral from the first submit to t of the jobs waiting or running."""
    subs = np.array([r.submit_time for r in records], dtype=np.float64)
    ends = np.array([r.end_time for r in records], dtype=np.float64)
    ends = np.where(np.isfinite(ends), ends, np.inf)
    ev_t = np.concatenate([subs, ends[np.isfinite(ends)]])
    ev_d = np.concatenate([np.ones(subs.size), -np.ones(int(np.isfinite(ends).sum()))])
    order = np.argsort(ev_t, kind="stable")
    ev_t, ev_d = ev_t[order], ev_d[order]
    level = np.cumsum(ev_d)  # jobs in system just after each event
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(ev_t))])  # F at each event time
    idx = np.searchsorted(ev_t, times, side="right") - 1
    idx = np.clip(idx, 0, ev_t.size - 1)
    return np.where(times < ev_t[0], 0.0, area[idx] + level[idx] * (times - ev_t[idx]))


def step_rewards(records: Sequence[JobRecord], times: np.ndarray) -> np.ndarray:
    """Per-step rewards (see the module docstring) for steps taken at ``times`` (non-decreasing)."""
    if times.size == 0:
        return np.zeros(0, dtype=np.float32)
    ends = [r.end_time for r in records if math.isfinite(r.end_time)]
    last = max(ends) if ends else float(times[-1])
    marks = jobs_in_system_integral(records, np.append(times, max(last, float(times[-1]))))
    return (-np.diff(marks) / (3600.0 * max(len(records), 1))).astype(np.float32)


class ElasticEnv:
    """Draws episode windows and replays them with a given actor and chooser."""

    def __init__(
        self, config: EnvConfig = EnvConfig(), *, workloads: Sequence[Workload] | None = None
    ) -> None:
        check_numbers("maifs environment", config, counts=("episode_jobs",))
        lo, hi = config.compression
        if not 0 < lo <= hi:
            raise ConfigError(f"compression must be a range 0 < low <= high, got {config.compression}")
        self.config = config
        self.workloads = (
            list(workloads)
            if workloads is not None
            else [prepare(scenario=s, seed=config.workload_seed) for s in config.scenarios]
        )
        if not self.workloads:
            raise ConfigError("the MAIFS environment needs at least one workload or scenario")
        self.settings = SimSettings(elastic=config.elastic)

    def draw(self, rng: np.random.Generator) -> Workload:
        """A window of ``episode_jobs`` consecutive jobs of a random training workload, compressed."""
        wl = self.workloads[int(rng.integers(len(self.workloads)))]
        jobs = wl.trace.jobs
        n = min(self.config.episode_jobs, len(jobs))
        start = int(rng.integers(0, len(jobs) - n + 1))
        factor = float(rng.uniform(*self.config.compression))
        window = jobs[start : start + n]
        t0 = window[0].submit_time
        window = tuple(replace(j, submit_time=t0 + (j.submit_time - t0) / factor) for j in window)
        label = f"{wl.label}[{start}:{start + n}]x{factor:.2f}"
        return replace(wl, trace=replace(wl.trace, jobs=window), label=label)

    def policy(self, net: AgentNet, choose: Chooser) -> MaifsPolicy:
        """The agents as a policy, led by a fresh instance of the lead (its state is per replay)."""
        return MaifsPolicy(self.config.obs, net, choose, lead=lead_policy(self.config.lead, LEAD_PLACEMENT))

    def run(self, workload: Workload, net: AgentNet, choose: Chooser) -> Episode:
        """Replay ``workload``; rewards from the finished jobs' records."""
        policy = self.policy(net, choose)
        policy.steps = []
        out = run_policy(workload, policy, settings=self.settings)
        steps = tuple(policy.steps)
        rewards = step_rewards(out.records, np.array([s.time for s in steps], dtype=np.float64))
        return Episode(steps, rewards, float(out.summary["avg_jct"]), workload.label)  # type: ignore[arg-type]
