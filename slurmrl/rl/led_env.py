"""The job-ordering environment led by a heuristic, with a paired baseline on the same jobs.

A led policy (:mod:`slurmrl.rl.window_policy`, ``lead``) decides each pass
over a deployable heuristic's proposals: its starts first, in its order and
on its GPUs, then the rest of its ranking; the agent picks one row or
"stop", and the network's logits add to a prior that makes a zero output
replay the heuristic exactly. :class:`LedSchedEnv` asks the agent those
same picks, built by the same :func:`~slurmrl.rl.window_policy.led_step`,
and adds the prior to the observation (key ``prior``) so the trainer samples
from exactly the distribution the deployed argmax reads. A pass ends when
the agent stops or nothing is left to pick; the heuristic's preemptions and
wake-up stand, as deployed. Passes with nothing the agent could start are
played without asking it.

Paired baseline (``paired``): every episode is also replayed by the lead
heuristic alone from the same hand-over (a copy of the warmed-up
simulator), and each step's reward gets that replay's waiting area over the
same stretch of simulated time added back, so the return is the lead's mean
JCT minus the agent's on the same arrival sequence. The heuristic's replay
does not depend on the agent's actions, so this changes no policy gradient
in expectation; it removes the variance the episode's own jobs bring (a
burst of arrivals costs both schedules alike), which otherwise dwarfs what
one ordering choice changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.errors import ConfigError
from slurmrl.policy.base import Policy
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.rl.area import AreaCurve
from slurmrl.rl.env import EnvConfig, Handovers, SchedEnv, _warm_policy
from slurmrl.rl.features import Featurizer
from slurmrl.rl.lead import Proposal, lead_policy, led_decisions, propose
from slurmrl.rl.topdrl import PLACEMENT
from slurmrl.rl.window_policy import LedStep, led_step
from slurmrl.sim.experiment import Workload
from slurmrl.sim.simulator import Simulator


def lead_area(sim: Simulator, view: ClusterView | None, lead: str, handover: float) -> AreaCurve:
    """``lead`` alone from where the agent takes over: ``view``, ``sim``'s latest, after a warm-up.

    After a warm-up the simulator is forked at the hand-over view, so the
    replay takes over exactly the cluster the agent does without playing the
    warm-up again; without one (``view`` None, ``sim`` not yet started) the
    episode is replayed from its start. The lead is a new instance, as the
    environment's own is each episode.
    """
    policy = _lead(lead)
    skip = not getattr(policy, "preemptive", False)
    if view is not None:
        replay, view = sim.fork(view)
    else:
        replay = Simulator(sim.trace, sim.cluster, config=sim.config)
        view = replay.next_view(skip_when_full=skip)
    while view is not None:
        replay.apply(policy.decide(view))
        view = replay.next_view(skip_when_full=skip)
    return AreaCurve(replay.samples, handover)


class LedSchedEnv(SchedEnv):
    """:class:`SchedEnv` whose actions pick over the ``lead`` heuristic's pass (see the module docstring)."""

    def __init__(
        self,
        config: EnvConfig,
        *,
        workloads: Sequence[Workload] | None = None,
        handovers: Handovers | None = None,
    ) -> None:
        if not config.lead:
            raise ConfigError("the led environment needs EnvConfig.lead, a deployable heuristic")
        super().__init__(config, workloads=workloads, handovers=handovers)
        self._lead = _lead(config.lead)
        self._skip = not getattr(self._lead, "preemptive", False)
        k = config.obs.window
        self.observation_space = spaces.Dict(
            dict(self.observation_space.spaces, prior=spaces.Box(-np.inf, 0.0, (k + 1,), np.float32))
        )
        self._pass: _Pass | None = None
        self._step: LedStep | None = None
        self._curve: AreaCurve | None = None
        self._need_curve = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._pass, self._step, self._curve = None, None, None
        # Heuristics may keep state (attained service, fair share): fresh ones each
        # episode, so the paired replay (lead_area) starts from the same cluster.
        self._lead = _lead(self.config.lead)
        if self.config.warm_policy:
            self._warm = _warm_policy(self.config.warm_policy)
        self._need_curve = self.config.paired
        return super().reset(seed=seed, options=options)

    def step(self, action):
        if self.sim is None:
            raise ConfigError("call reset() before step()")
        a, p, s = int(action), self._pass, self._step
        if p is not None and s is not None:
            placement = s.placements[a] if a < len(s.window) and s.mask[a] else None
            if placement is None:  # stop (or an infeasible pick, taken as stop)
                self._finish_pass()
            else:
                p.begin(s.window[a], placement, self.featurizer)
        terminated, reward, truncated, info = self._close_step()
        if terminated:
            if self._curve is not None:
                end = self._curve.times[-1]
                reward += self._curve_reward(self._last_time(), max(end, self._last_time()))
        return self._obs_dict(), reward, terminated, truncated, info

    def _advance(self) -> bool:
        """To the next pick the agent has a choice in; True at the end of the episode."""
        sim, feat = self._require_sim(), self.featurizer
        if self._need_curve:  # once per episode, from the hand-over, before the agent's first pass
            self._need_curve = False
            self._curve = self._paired_curve(sim)
        while True:
            if self._pass is None:
                view, self._first_view = self._first_view or sim.next_view(skip_when_full=self._skip), None
                if view is None:
                    self._obs, self._step = None, None
                    return True
                feat.absorb(view.finished)
                feat.sync_running(view.running)
                self._pass = _Pass(view, propose(self._lead, view))
            p = self._pass
            self._step = led_step(feat, p.view, p.proposal, p.pool, p.done)
            if self._step is not None:
                self._obs = self._step.obs
                return False
            self._finish_pass()  # nothing left to start: the heuristic's decisions stand

    def _paired_curve(self, sim: Simulator) -> AreaCurve:
        """The lead's replay from this episode's hand-over; played once per kept hand-over (it is
        deterministic: a fresh lead on the same cluster and jobs)."""
        key = self.start_key
        curve = self.handovers.curve(key) if key is not None else None
        if curve is None:
            curve = lead_area(sim, self._first_view, self.config.lead, self._handover)
            if key is not None:
                self.handovers.keep_curve(key, curve)
        return curve

    def _finish_pass(self) -> None:
        p = self._pass
        if p is not None:
            self._require_sim().apply(led_decisions(self._lead, p.proposal, p.view, p.began))
        self._pass, self._step = None, None

    def _reward(self) -> float:
        samples = self._require_sim().samples
        t0 = samples[self._ptr].time if samples else 0.0
        reward = super()._reward()
        if not samples:
            return reward
        return reward + self._curve_reward(t0, samples[self._ptr].time)

    def _curve_reward(self, t0: float, t1: float) -> float:
        """The lead replay's "jct" reward over ``[t0, t1]``, with the sign flipped."""
        curve, cfg = self._curve, self.config
        if curve is None or cfg.reward != "jct":
            return 0.0
        area = curve.at(t1) - curve.at(t0)
        elapsed = curve.elapsed(t1) - curve.elapsed(t0)
        return (area / self._jobs + cfg.makespan_weight * elapsed) / cfg.reward_time_s

    def _last_time(self) -> float:
        samples = self._require_sim().samples
        return samples[-1].time if samples else 0.0

    def _obs_dict(self) -> dict[str, np.ndarray]:
        out = super()._obs_dict()
        k = self.config.obs.window
        if self._step is None:
            out["prior"] = np.zeros(k + 1, dtype=np.float32)
            return out
        out["mask"] = self._step.mask.astype(np.int8)
        out["prior"] = self._step.prior
        return out


class _Pass:
    """One decision point of a led pass: the heuristic's proposal and what the agent started so far."""

    def __init__(self, view: ClusterView, proposal: Proposal) -> None:
        self.view = view
        self.proposal = proposal
        self.pool: GpuPool = proposal.pool
        self.began: list[tuple[JobView, Placement]] = []
        self.done: set[str] = set()

    def begin(self, job: JobView, placement: Placement, feat: Featurizer) -> None:
        self.pool.allocate(placement)
        feat.hold(job, placement, self.view.now)
        self.began.append((job, placement))
        self.done.add(job.job_id)


def _lead(name: str) -> Policy:
    from slurmrl.policy.registry import policy_entry

    entry = policy_entry(name)
    if not entry.deployable or entry.learned:
        raise ConfigError(f"lead '{name}' must be a deployable heuristic")
    policy = lead_policy(name, PLACEMENT)
    assert policy is not None
    return policy
