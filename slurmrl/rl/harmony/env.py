"""The placement environment: episodes of trace windows replayed under ``--speed-model full``.

An episode draws a window of consecutive jobs from a training workload
(seeded), replays it on an empty cluster under the ordering's scheduler with
the agent's placement, and records every pointer decision that started a job.
Co-location slowdowns only exist under the ``full`` speed model, so that is
the model episodes run under.

The simulator's reward for a decision is known only once the placed job has
finished, as in a real cluster (Harmony's motivation for predicting rewards):
minus the job's GPUs times the log of its slowdown, run time over best-case
run time (``JobRecord.best_time``), that is what interference and placement
cost it. Harmony's reward is the jobs' normalised training speed; this is its
log, weighted by GPUs, so it does not scale with the (unknown) duration and
a neighbour's losses add up as the speed model's exponents do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from slurmrl.errors import ConfigError
from slurmrl.policy.registry import make_placement
from slurmrl.rl.harmony.features import HarmonyObs
from slurmrl.rl.harmony.placement import Chooser, Step
from slurmrl.rl.harmony.policy import DEFAULT_ORDERING, HarmonyPolicy
from slurmrl.sim.experiment import SimSettings, Workload, prepare, run_policy

SPEED_MODEL = "full"


@dataclass(frozen=True)
class EnvConfig:
    scenarios: tuple[str, ...] = ("gavel-msr-6c71a0", "gavel-msr-b436b2")
    episode_jobs: int = 256
    ordering: str = DEFAULT_ORDERING
    fallback: str = "interference-aware"  # places the jobs the pointer does not (multi-node)
    # Led: the fallback's node gets a logit bonus, so a zero network output places as the fallback.
    lead: bool = False
    obs: HarmonyObs = field(default_factory=HarmonyObs)
    workload_seed: int = 0


@dataclass(frozen=True)
class Episode:
    """One episode's pointer decisions and, per decision, the simulator's reward."""

    steps: tuple[Step, ...]
    rewards: np.ndarray  # [T] float32, in decision order
    avg_jct: float
    label: str


def decision_reward(gpus: int, run_time: float, best_time: float) -> float:
    """Minus GPUs x log(run time / best-case run time); 0 for an unslowed (or unfinished) job."""
    if not (math.isfinite(run_time) and math.isfinite(best_time)) or run_time <= 0 or best_time <= 0:
        return 0.0
    return -gpus * max(math.log(run_time / best_time), 0.0)


class PlacementEnv:
    """Draws episode windows and replays them with a given node chooser."""

    def __init__(
        self, config: EnvConfig = EnvConfig(), *, workloads: Sequence[Workload] | None = None
    ) -> None:
        if config.episode_jobs < 1:
            raise ConfigError(f"episode_jobs must be at least 1, got {config.episode_jobs}")
        self.config = config
        self.workloads = (
            list(workloads)
            if workloads is not None
            else [prepare(scenario=s, seed=config.workload_seed) for s in config.scenarios]
        )
        if not self.workloads:
            raise ConfigError("the placement environment needs at least one workload or scenario")
        self.settings = SimSettings(speed_model=SPEED_MODEL)

    def draw(self, rng: np.random.Generator) -> Workload:
        """A window of ``episode_jobs`` consecutive jobs of a random training workload."""
        wl = self.workloads[int(rng.integers(len(self.workloads)))]
        jobs = wl.trace.jobs
        n = min(self.config.episode_jobs, len(jobs))
        start = int(rng.integers(0, len(jobs) - n + 1))
        window = jobs[start : start + n]
        return replace(wl, trace=replace(wl.trace, jobs=window), label=f"{wl.label}[{start}:{start + n}]")

    def policy(self, chooser: Chooser) -> HarmonyPolicy:
        cfg = self.config
        return HarmonyPolicy(
            cfg.obs, chooser, make_placement(cfg.fallback), ordering=cfg.ordering, lead=cfg.lead
        )

    def run(self, workload: Workload, chooser: Chooser) -> Episode:
        """Replay ``workload``; the rewards come from the finished jobs' records."""
        policy = self.policy(chooser)
        policy.steps = []
        out = run_policy(workload, policy, settings=self.settings)
        recs = {r.job_id: r for r in out.records}
        steps = tuple(policy.steps)
        rewards = np.array(
            [decision_reward(s.gpus, recs[s.job_id].run_time, recs[s.job_id].best_time) for s in steps],
            dtype=np.float32,
        )
        return Episode(steps, rewards, float(out.summary["avg_jct"]), workload.label)  # type: ignore[arg-type]
