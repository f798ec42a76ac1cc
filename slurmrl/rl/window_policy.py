"""Window-based job pickers: the decision loop TopDRL runs, and its no-learning baseline.

:class:`WindowPolicy` is what a TopDRL-style policy does around its network:
build the candidate window (:meth:`~slurmrl.rl.features.Featurizer.select`:
the longest-waiting jobs, then the smallest asked GPU-time among those that
fit), score it, start the pick on the GPUs the placement chooses, and ask
again with the updated cluster until nothing fits. Subclasses only score.

:class:`FirstInWindow` scores the window by position: it always starts the
first window job that fits. It sees exactly the candidates and placement the
trained agent sees, so comparing the two shows what the network adds over the
window itself.

Led by a heuristic (``lead``): the window then follows a deployable
heuristic instead. At each decision point the heuristic decides as it would
alone; its starts, in its order and on its GPUs, fill the window's first
rows, the rest of its ranking the others, and its preemptions and wake-up
stand. The network's logits are added to a prior that ranks the proposals
in order, then "stop", then the other rows, one unit apart
(:func:`lead_prior`), so a network that outputs zero starts exactly the
heuristic's jobs on exactly its GPUs: the untrained policy *is* the
heuristic, and learning can only move it from there. It may stop before
the lead's proposals are all started (they wait for the next decision
point), but not while one of them has waited longer than its job's time
limit (:func:`_overdue`), so holding a job back cannot starve it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.backfill import limit_of
from slurmrl.policy.base import PlacementPolicy, Policy, confirm_start
from slurmrl.policy.view import ClusterView, Decisions, JobIds, JobView, Start
from slurmrl.rl.features import Featurizer, ObsConfig, Observation
from slurmrl.rl.inference import MASKED, pick
from slurmrl.rl.lead import Led, Proposal, led_decisions, propose, runs_after

# Prior gap between consecutive ranks of a heuristic-led window (see the module docstring).
LEAD_STEP = 1.0


def lead_prior(proposed: int, window: int) -> np.ndarray:
    """``[window + 1]``: proposal i gets ``-i``, stop ``-proposed``, other row j ``-(window + 1 + j)``."""
    prior = -LEAD_STEP * (window + 1 + np.arange(window + 1, dtype=np.float32))
    prior[:proposed] = -LEAD_STEP * np.arange(proposed, dtype=np.float32)
    prior[window] = -LEAD_STEP * proposed
    return prior


class WindowPolicy(Led):
    """Starts window jobs, one pick at a time, until nothing fits; subclasses give the logits."""

    deployable = True
    # Whether the scores read the observation (and so the running jobs and users' history it is
    # built from); a subclass that scores by position alone sets False and skips building it.
    reads_features = True

    def __init__(
        self,
        obs: ObsConfig,
        placement: PlacementPolicy,
        *,
        allow_wait: bool = False,
        name: str = "window",
        lead: Policy | None = None,
    ) -> None:
        self.name = name
        self.obs_config = obs
        self.placement = placement
        self.allow_wait = allow_wait
        self.lead = lead
        self._feat: Featurizer | None = None

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        """A deployable policy never reads true durations."""

    def _logits(self, jobs: np.ndarray, grid: np.ndarray, glob: np.ndarray, mask: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _featurizer(self, view: ClusterView) -> Featurizer:
        feat = self._feat
        if feat is None or feat.cluster is not view.cluster:
            fresh = Featurizer(view.cluster, self.obs_config, self.placement)
            if feat is not None and feat.cluster.describe() == view.cluster.describe():
                fresh.users, fresh.groups = feat.users, feat.groups  # same cluster, new snapshot object
            self._feat = feat = fresh
        return feat

    def scores(self, view: ClusterView) -> tuple[list[JobView], np.ndarray]:
        """The current window and its masked logits (last = wait); for inspection and tests."""
        feat = self._featurizer(view)
        feat.sync_running(view.running)
        window, obs = feat.window_observation(view, view.pool, allow_wait=self.allow_wait)
        return window, self._logits(obs.jobs, obs.cluster, obs.globals, obs.mask)

    def decide(self, view: ClusterView) -> Decisions:
        feat = self._featurizer(view)
        tracks = self.reads_features or self.lead is not None
        if tracks:
            feat.absorb(view.finished)
            feat.sync_running(view.running)
        if self.lead is not None:
            return self._decide_led(view, feat, self.lead)
        k = self.obs_config.window
        if view.pool.total_free == 0 or not view.pending:
            return Decisions(order=JobIds(view.pending))
        pool: GpuPool = view.pool.copy()
        started: list[JobView] = []
        starts: list[Start] = []
        skip: set[str] = set()
        ranked_window: list[JobView] = []
        while pool.total_free > 0:
            window = feat.select(view.pending, pool, skip)
            placed = feat.place_window(view, pool, window)
            if all(p is None for p in placed):
                break  # nothing fits: no observation needed
            best, ranked_window = self._choose(feat, view, pool, window, placed, len(started))
            if best >= k or best >= len(window):
                break  # the policy chose to wait
            job, placement = window[best], placed[best]
            if placement is None:  # cannot happen: masked logits keep infeasible picks out
                break
            pool.allocate(placement)
            confirm_start(self.placement, job, placement, view)
            if tracks:
                feat.hold(job, placement, view.now)
            started.append(job)
            starts.append(Start(job.job_id, placement))
            skip.add(job.job_id)
        order = JobIds(_order(started, ranked_window, view.pending))
        return Decisions(order=order, starts=tuple(starts))

    def _choose(
        self,
        feat: Featurizer,
        view: ClusterView,
        pool: GpuPool,
        window: list[JobView],
        placed: list[Placement | None],
        started: int,
    ) -> tuple[int, list[JobView]]:
        """The pick (``>= len(window)``: wait) and the window ranked by score, from the observation."""
        obs = feat.observe(view, pool, window, started=started, allow_wait=self.allow_wait, placed=placed)
        logits = self._logits(obs.jobs, obs.cluster, obs.globals, obs.mask)
        ranked = np.argsort(-logits[: len(window)], kind="stable")
        return pick(logits), [window[i] for i in ranked.tolist()]

    def _step_logits(self, step: LedStep, view: ClusterView) -> np.ndarray:
        """The scores a led pick adds to its prior: the network's, from the observation."""
        return self._logits(step.obs.jobs, step.obs.cluster, step.obs.globals, step.mask)

    def _decide_led(self, view: ClusterView, feat: Featurizer, lead: Policy) -> Decisions:
        """Picks over the lead heuristic's proposals (see the module docstring)."""
        proposal = propose(lead, view)
        pool = proposal.pool
        began: list[tuple[JobView, Placement]] = []
        done: set[str] = set()
        while (step := led_step(feat, view, proposal, pool, done)) is not None:
            logits = self._step_logits(step, view) + step.prior
            best = pick(np.where(step.mask, logits, np.float32(MASKED)))
            chosen = step.placements[best] if best < len(step.window) else None
            if chosen is None:
                break  # stop: the rest waits for the next decision point
            job = step.window[best]
            pool.allocate(chosen)
            confirm_start(self.placement, job, chosen, view)
            feat.hold(job, chosen, view.now)
            began.append((job, chosen))
            done.add(job.job_id)
        return led_decisions(lead, proposal, view, began)


@dataclass(frozen=True)
class LedStep:
    """One pick of a heuristic-led pass: the window, its observation, and the prior the logits add to.

    Built by :func:`led_step` for the deployed policy and the training
    environment alike, so the agent trains on exactly the choice it makes
    when deployed.
    """

    window: list[JobView]
    obs: Observation
    placements: list[Placement | None]  # proposals keep the heuristic's GPUs; others the placement's
    mask: np.ndarray  # [K + 1] bool; "stop" (last) unless it would leave the cluster idle
    prior: np.ndarray  # [K + 1] float32, :func:`lead_prior`


def led_step(
    feat: Featurizer, view: ClusterView, proposal: Proposal, pool: GpuPool, done: set[str]
) -> LedStep | None:
    """The next pick of a led pass, the jobs in ``done`` already started on ``pool``.

    None when no job of the window can start: the pass is over whatever the
    network would say (only "stop" is left), so the observation is not built.
    """
    k = feat.config.window
    props = [(j, p) for j, p in proposal.starts if j.job_id not in done][:k]
    others = list(itertools.islice((j for j in proposal.ranked if j.job_id not in done), k - len(props)))
    window = [j for j, _ in props] + others
    placed = feat.place_window(view, pool, window)
    placements = [p if pool.is_free(p) else None for _, p in props] + placed[len(props) :]
    if all(p is None for p in placements):
        return None
    obs = feat.observe(view, pool, window, started=len(done), allow_wait=True, placed=placed)
    mask = obs.mask.copy()
    for i in range(len(props)):
        mask[i] = placements[i] is not None
    mask[k] = _busy(view, proposal, done) and not _overdue(view, props, mask)
    return LedStep(window, obs, placements, mask, lead_prior(len(props), k))


def _busy(view: ClusterView, proposal: Proposal, done: set[str]) -> bool:
    """Something runs after this pass: a job it started, or one already running (:func:`runs_after`).

    "Stop" holds the rest of the window until the next decision point, so a
    led pass may stop only while something runs.
    """
    return bool(done) or runs_after(view, proposal)


def _overdue(view: ClusterView, props: list[tuple[JobView, Placement]], mask: np.ndarray) -> bool:
    """A proposal that can still start has waited longer than its own time limit: the pass may not stop.

    "Stop" has no counterpart in the lead's guarantees: EASY backfill
    reserves GPUs for the first job it cannot start, but a job it does
    start and the led policy holds back gets nothing, and a network that
    prefers to keep GPUs free for short arrivals can hold a long job back
    pass after pass (on philly-448-week2-val, seed 0, a 16-GPU job with a
    7-day limit was held back in 542 passes and started 23.8 days after
    its submission, which made the makespan 7% longer than the lead's).
    So a job the lead would start may be held back only until it has
    waited as long as it asked to run; the bound reads only what Slurm
    knows (submit time, time limit; the partition maximum when none).
    """
    now = view.now
    return any(mask[i] and now - job.submit_time > limit_of(job) for i, (job, _) in enumerate(props))


def _order(started: list[JobView], ranked: list[JobView], pending: Iterable[JobView]) -> Iterator[JobView]:
    """Started jobs, then the last window by score, then everyone else in arrival order."""
    seen: set[str] = set()
    for job in itertools.chain(started, ranked, pending):
        if job.job_id not in seen:
            seen.add(job.job_id)
            yield job


class FirstInWindow(WindowPolicy):
    """Always the first window job that fits: TopDRL's window and placement without the network."""

    reads_features = False

    def _logits(self, jobs: np.ndarray, grid: np.ndarray, glob: np.ndarray, mask: np.ndarray) -> np.ndarray:
        # Decreasing by row, so the first feasible row wins; wait only when nothing fits.
        return np.where(mask, -np.arange(len(mask), dtype=np.float32), np.float32(MASKED))

    def _choose(
        self,
        feat: Featurizer,
        view: ClusterView,
        pool: GpuPool,
        window: list[JobView],
        placed: list[Placement | None],
        started: int,
    ) -> tuple[int, list[JobView]]:
        """What :meth:`_logits` picks and ranks, read off the placements: the feasible rows in
        window order, then the others (a wait is never picked while something fits)."""
        fits = [i for i, p in enumerate(placed) if p is not None]
        return fits[0], [window[i] for i in fits] + [
            j for j, p in zip(window, placed, strict=True) if p is None
        ]


def make_topdrl_first(placement: PlacementPolicy) -> FirstInWindow:
    """Registry factory: the default window layout, the one the shipped checkpoint was trained with."""
    return FirstInWindow(ObsConfig(), placement, name="topdrl-first")
