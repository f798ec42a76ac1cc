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

That reward sees only the placed job. A placement also decides what the
queue behind it can get (a node split by small jobs keeps a large one
waiting), and on busy clusters that is most of what placement changes: so
``reward="jct"`` pays each decision minus the jobs-in-system area accrued
until the next decision, less the same stretch of a replay of the same
window by the fallback heuristic alone (``ordering`` + ``fallback``), in job
hours per window job. The episode's return is then the heuristic's total JCT
minus the agent's on the same arrivals; the heuristic's replay does not
depend on the agent, so it changes no gradient in expectation and removes
the variance a burst of arrivals brings to both. Such a reward is known only
once the window has run out, so no reward model predicts it.

Warm start (``warm_jobs``): an empty cluster rarely queues, so an episode's
window may be preceded by that many earlier jobs, scheduled by the ordering
(placing with :data:`~slurmrl.sim.handover.WARM_PLACEMENT`) until the
window's first job arrives; the agent then places every job from there on,
the backlog included, as a policy deployed on a running cluster would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from slurmrl.errors import ConfigError
from slurmrl.policy.registry import make_placement
from slurmrl.rl.area import AreaCurve
from slurmrl.rl.config_checks import check_numbers
from slurmrl.rl.harmony.features import HarmonyObs
from slurmrl.rl.harmony.placement import LEAD_BONUS, Chooser, Step
from slurmrl.rl.harmony.policy import DEFAULT_ORDERING, HarmonyPolicy
from slurmrl.sim.experiment import RunOutput, SimSettings, Workload, prepare, run_policy

SPEED_MODEL = "full"
REWARDS = ("slowdown", "jct")


@dataclass(frozen=True)
class EnvConfig:
    scenarios: tuple[str, ...] = ("gavel-msr-6c71a0", "gavel-msr-b436b2")
    episode_jobs: int = 256
    ordering: str = DEFAULT_ORDERING
    fallback: str = "interference-aware"  # places the jobs the pointer does not (multi-node)
    # Led: the fallback's node gets a logit bonus, so a zero network output places as the fallback.
    lead: bool = False
    lead_bonus: float = LEAD_BONUS
    obs: HarmonyObs = field(default_factory=HarmonyObs)
    workload_seed: int = 0
    reward: str = "slowdown"  # or "jct": the paired waiting area (module docstring)
    warm_jobs: int = 0  # earlier jobs the ordering schedules before the window (module docstring)
    reward_time_s: float = 3600.0  # the "jct" reward's unit of time


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
        check_numbers("harmony environment", config, counts=("episode_jobs",), non_negative=("warm_jobs",))
        if config.reward not in REWARDS:
            raise ConfigError(f"reward must be one of {', '.join(REWARDS)}, got '{config.reward}'")
        if config.warm_jobs and config.reward == "slowdown":
            raise ConfigError(
                "warm_jobs needs reward 'jct': the slowdown reward reads each placed job's record, "
                "and a warm start measures none of the backlog it hands over"
            )
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
        """A window of ``episode_jobs`` consecutive jobs of a random training workload (and its warm-up)."""
        wl = self.workloads[int(rng.integers(len(self.workloads)))]
        jobs = wl.trace.jobs
        n = min(self.config.episode_jobs, len(jobs))
        start = int(rng.integers(0, len(jobs) - n + 1))
        warm = min(self.config.warm_jobs, start)
        window = replace(wl.trace, jobs=jobs[start - warm : start + n])
        label = f"{wl.label}[{start}:{start + n}]"
        if not warm:
            return replace(wl, trace=window, label=label)
        return replace(
            wl,
            trace=window,
            label=f"{label} warm {warm}",
            handover=jobs[start].submit_time,
            warm_policy=self.config.ordering,
        )

    def policy(self, chooser: Chooser) -> HarmonyPolicy:
        cfg = self.config
        return HarmonyPolicy(
            cfg.obs,
            chooser,
            make_placement(cfg.fallback),
            ordering=cfg.ordering,
            lead=cfg.lead,
            lead_bonus=cfg.lead_bonus,
        )

    def run(self, workload: Workload, chooser: Chooser) -> Episode:
        """Replay ``workload``; the rewards come from the finished jobs' records."""
        policy = self.policy(chooser)
        policy.steps = []
        out = run_policy(workload, policy, settings=self.settings)
        steps = tuple(policy.steps)
        if self.config.reward == "jct":
            rewards = self._paired(workload, out, steps)
        else:
            recs = {r.job_id: r for r in out.records}
            rewards = np.array(
                [decision_reward(s.gpus, recs[s.job_id].run_time, recs[s.job_id].best_time) for s in steps],
                dtype=np.float32,
            )
        return Episode(steps, rewards, float(out.summary["avg_jct"]), workload.label)  # type: ignore[arg-type]

    def _paired(self, workload: Workload, out: RunOutput, steps: Sequence[Step]) -> np.ndarray:
        """The "jct" rewards of ``steps``: the fallback heuristic's replay of ``workload`` is the pair."""
        cfg = self.config
        lead = run_policy(workload, cfg.ordering, placement=cfg.fallback, settings=self.settings)
        start = workload.handover if workload.handover is not None else workload.trace.jobs[0].submit_time
        unit = cfg.reward_time_s * max(len(out.records), 1)
        return paired_rewards(
            [s.time for s in steps], AreaCurve(out.samples, start), AreaCurve(lead.samples, start), unit
        )


def paired_rewards(times: Sequence[float], agent: AreaCurve, lead: AreaCurve, unit: float) -> np.ndarray:
    """Per decision: minus (agent's area - lead's area) from its time to the next decision's, over ``unit``.

    The first decision also gets the stretch from the curves' start, the last
    the stretch to the later curve's end, so the rewards sum to
    (lead's total area - agent's) / ``unit``.
    """
    if not times:
        return np.zeros(0, dtype=np.float32)
    end = max(agent.times[-1], lead.times[-1])
    edges = [agent.times[0], *times[1:], end]
    diff = [agent.at(t) - lead.at(t) for t in edges]
    return -(np.diff(np.asarray(diff, dtype=np.float64)) / unit).astype(np.float32)
