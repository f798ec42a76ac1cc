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
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.base import PlacementPolicy, confirm_start
from slurmrl.policy.view import ClusterView, Decisions, JobIds, JobView, Start
from slurmrl.rl.features import Featurizer, ObsConfig
from slurmrl.rl.inference import MASKED, pick


class WindowPolicy:
    """Starts window jobs, one pick at a time, until nothing fits; subclasses give the logits."""

    deployable = True

    def __init__(
        self, obs: ObsConfig, placement: PlacementPolicy, *, allow_wait: bool = False, name: str = "window"
    ) -> None:
        self.name = name
        self.obs_config = obs
        self.placement = placement
        self.allow_wait = allow_wait
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
        feat.absorb(view.finished)
        feat.sync_running(view.running)
        k = self.obs_config.window
        if view.pool.total_free == 0 or not view.pending:
            return Decisions(order=JobIds(view.pending))
        pool: GpuPool = view.pool.copy()
        started: list[JobView] = []
        starts: list[Start] = []
        skip: set[str] = set()
        ranked_window: list[JobView] = []
        while pool.total_free > 0:
            window, obs = feat.window_observation(
                view, pool, allow_wait=self.allow_wait, skip=skip, started=len(started)
            )
            if not window or not obs.mask[:k].any():
                break
            logits = self._logits(obs.jobs, obs.cluster, obs.globals, obs.mask)
            best = pick(logits)
            ranked = np.argsort(-logits[: len(window)], kind="stable")
            ranked_window = [window[i] for i in ranked.tolist()]
            if best >= k or best >= len(window):
                break  # the policy chose to wait
            job, placement = window[best], obs.placements[best]
            if placement is None:  # cannot happen: masked logits keep infeasible picks out
                break
            pool.allocate(placement)
            confirm_start(self.placement, job, placement, view)
            feat.hold(job, placement, view.now)
            started.append(job)
            starts.append(Start(job.job_id, placement))
            skip.add(job.job_id)
        order = JobIds(_order(started, ranked_window, view.pending))
        return Decisions(order=order, starts=tuple(starts))


def _order(started: list[JobView], ranked: list[JobView], pending: Iterable[JobView]) -> Iterator[JobView]:
    """Started jobs, then the last window by score, then everyone else in arrival order."""
    seen: set[str] = set()
    for job in itertools.chain(started, ranked, pending):
        if job.job_id not in seen:
            seen.add(job.job_id)
            yield job


class FirstInWindow(WindowPolicy):
    """Always the first window job that fits: TopDRL's window and placement without the network."""

    def _logits(self, jobs: np.ndarray, grid: np.ndarray, glob: np.ndarray, mask: np.ndarray) -> np.ndarray:
        # Decreasing by row, so the first feasible row wins; wait only when nothing fits.
        return np.where(mask, -np.arange(len(mask), dtype=np.float32), np.float32(MASKED))


def make_topdrl_first(placement: PlacementPolicy) -> FirstInWindow:
    """Registry factory: the default window layout, the one the shipped checkpoint was trained with."""
    return FirstInWindow(ObsConfig(), placement, name="topdrl-first")
