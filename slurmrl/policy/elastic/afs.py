"""AFS-style elastic allocation: each spare GPU goes where it adds the most progress.

After AFS (Hwang et al., NSDI'21, "Elastic Resource Sharing for Distributed
Deep Learning"), which hands GPUs one at a time to the job with the largest
marginal throughput gain. AFS also weighs jobs by their remaining length;
a deployable policy has no lengths, so gains are compared in GPU-equivalents
of progress (the speedup one more step brings, per GPU), which favours
jobs that still scale almost linearly: small ones, by the curves of
:mod:`slurmrl.perf.scaling`. Each pass:

1. Admission. Pending jobs, in arrival order, start on the smallest count
   their range allows (rigid jobs on their own count); one that cannot be
   placed is skipped.
2. Shrink for the oldest job left waiting: running elastic jobs above their
   minimum and past the resize cool-down step down, fewest progress lost
   per freed GPU first, until it fits; nothing is resized if it still would
   not.
3. Growth, only when no job is left waiting: spare GPUs go, one
   power-of-two step at a time, to the job with the largest gain per GPU:
   jobs started in this pass for free, running ones (past the cool-down) by
   a resize, which costs a checkpoint-restart. A step must bring at least
   ``min_gain`` GPUs' worth of progress per GPU, so GPUs stay free for the
   next arrivals rather than buy little.

Resizes are a stop and a start on another count in one decision. Rigid jobs
are only ever started on their own count; with every job rigid the policy is
first-fit in arrival order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.base import PlacementPolicy
from slurmrl.policy.elastic.curves import Curves, bounds, next_down, next_up, sized
from slurmrl.policy.view import ClusterView, Decisions, JobIds, JobView, Start

# Seconds a job must run on one count before it is resized again: each
# resize costs a checkpoint-restart (30 s by default), so ten minutes keeps
# that under 5% of the job's time. Pollux re-allocates at most once a minute
# and penalises restarts in its objective (Qiao et al., OSDI'21, Section 4).
RESIZE_AFTER_S = 600.0
# The least progress (in GPU-equivalents) one more GPU must bring.
MIN_GAIN = 0.5


@dataclass(frozen=True, slots=True)
class _Grant:
    """A job's count and GPUs as this pass leaves them."""

    job: JobView
    placement: Placement
    resized: bool  # running before this pass: a new placement means a resize


class MarginalGain:
    """The ``afs`` policy (see the module docstring)."""

    deployable = True
    preemptive = True  # consulted even when every GPU is busy, to shrink jobs for a waiting one

    def __init__(
        self, placement: PlacementPolicy, *, resize_after: float = RESIZE_AFTER_S, min_gain: float = MIN_GAIN
    ) -> None:
        self.name = "afs"
        self.placement = placement
        self.resize_after = resize_after
        self.min_gain = min_gain
        self._curves: Curves | None = None

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        """Deployable: durations are never read."""

    def curves(self, view: ClusterView) -> Curves:
        if self._curves is None or self._curves.cluster is not view.cluster:
            self._curves = Curves(view.cluster)
        return self._curves

    def decide(self, view: ClusterView) -> Decisions:
        pool = view.pool.copy()
        grants: dict[str, _Grant] = {}
        waiting = self._admit(view, pool, grants)
        if waiting is not None:
            self._shrink_for(waiting, view, pool, grants)
        elif pool.total_free > 0:
            self._grow(view, pool, grants)
        starts = tuple(Start(job_id, g.placement) for job_id, g in grants.items())
        preempt = tuple(job_id for job_id, g in grants.items() if g.resized)
        return Decisions(order=JobIds(view.pending), starts=starts, preempt=preempt)

    # -- the three steps ---------------------------------------------------

    def _admit(self, view: ClusterView, pool: GpuPool, grants: dict[str, _Grant]) -> JobView | None:
        """Start what fits at its minimum; the oldest job that does not fit, if any."""
        waiting: JobView | None = None
        too_big = 1 << 62  # smallest minimum that failed for an unconstrained job
        for job in view.pending:
            need = bounds(job)[0]
            placement = None
            if need <= pool.total_free and (need < too_big or _constrained(job)):
                placement = self._place(job, need, pool, view)
            if placement is None:
                if not _constrained(job):
                    too_big = min(too_big, need)
                waiting = waiting or job
                continue
            pool.allocate(placement)
            grants[job.job_id] = _Grant(job, placement, False)
        return waiting

    def _shrink_for(
        self, waiting: JobView, view: ClusterView, pool: GpuPool, grants: dict[str, _Grant]
    ) -> None:
        """Step running elastic jobs down until ``waiting`` fits; change nothing if it never does."""
        curves = self.curves(view)
        trial = pool.copy()
        shrunk: dict[str, _Grant] = {}
        victims = sorted(
            (j for j in view.running if self._may_resize(j, view) and next_down(j, _count(j)) is not None),
            key=lambda j: _loss_per_gpu(curves, j),
        )
        need = bounds(waiting)[0]
        for job in victims:
            smaller = next_down(job, _count(job))
            trial.release(job.placement)  # type: ignore[arg-type]
            placement = self._place(job, smaller, trial, view)  # type: ignore[arg-type]
            if placement is None:
                trial.allocate(job.placement)  # type: ignore[arg-type]
                continue
            trial.allocate(placement)
            shrunk[job.job_id] = _Grant(job, placement, True)
            if need <= trial.total_free and (fit := self._place(waiting, need, trial, view)) is not None:
                trial.allocate(fit)
                grants.update(shrunk)
                grants[waiting.job_id] = _Grant(waiting, fit, False)
                return

    def _grow(self, view: ClusterView, pool: GpuPool, grants: dict[str, _Grant]) -> None:
        """Give spare GPUs, a step at a time, to the largest gain per GPU."""
        curves = self.curves(view)
        current: dict[str, JobView] = {g.job.job_id: g.job for g in grants.values()}
        current.update((j.job_id, j) for j in view.running if self._may_resize(j, view))
        counts = {
            job_id: _count(grants[job_id].job, grants[job_id].placement) if job_id in grants else _count(job)
            for job_id, job in current.items()
        }
        blocked: set[str] = set()
        while pool.total_free > 0:
            best = self._best_step(curves, current, counts, blocked, pool.total_free)
            if best is None:
                return
            job_id, bigger = best
            if not self._regrant(current[job_id], bigger, view, pool, grants):
                blocked.add(job_id)
                continue
            counts[job_id] = bigger

    # -- helpers -------------------------------------------------------------

    def _best_step(
        self, curves: Curves, jobs: dict[str, JobView], counts: dict[str, int], blocked: set[str], free: int
    ) -> tuple[str, int] | None:
        best: tuple[float, str, int] | None = None
        for job_id, job in jobs.items():
            if job_id in blocked:
                continue
            have = counts[job_id]
            bigger = next_up(job, have)
            if bigger is None or bigger - have > free:
                continue
            gain = curves.gain_per_gpu(job, have, bigger)
            if gain >= self.min_gain and (best is None or gain > best[0]):
                best = (gain, job_id, bigger)
        return None if best is None else (best[1], best[2])

    def _regrant(
        self, job: JobView, gpus: int, view: ClusterView, pool: GpuPool, grants: dict[str, _Grant]
    ) -> bool:
        """Move ``job`` to ``gpus`` GPUs in the scratch pool; False (and no change) if it cannot be placed."""
        old = grants[job.job_id].placement if job.job_id in grants else job.placement
        pool.release(old)  # type: ignore[arg-type]
        placement = self._place(job, gpus, pool, view)
        if placement is None:
            pool.allocate(old)  # type: ignore[arg-type]
            return False
        pool.allocate(placement)
        started_here = job.job_id in grants and not grants[job.job_id].resized
        grants[job.job_id] = _Grant(job, placement, not started_here)
        return True

    def _place(self, job: JobView, gpus: int, pool: GpuPool, view: ClusterView) -> Placement | None:
        return self.placement.place(sized(job, gpus, view.cluster), pool, view)

    def _may_resize(self, job: JobView, view: ClusterView) -> bool:
        """An elastic running job that has run long enough on its present count."""
        return (
            job.gpu_range is not None
            and job.placement is not None
            and job.start_time is not None
            and view.now - job.start_time >= self.resize_after
        )


def _count(job: JobView, placement: Placement | None = None) -> int:
    chosen = placement or job.placement
    return chosen.num_gpus if chosen is not None else job.gpus


def _loss_per_gpu(curves: Curves, job: JobView) -> float:
    have = _count(job)
    smaller = next_down(job, have)
    return curves.gain_per_gpu(job, smaller, have) if smaller is not None else float("inf")


def _constrained(job: JobView) -> bool:
    """Whether a failed placement of this job says nothing about larger unconstrained ones."""
    return bool(job.gpu_type) or job.allowed_nodes is not None


def make_afs(placement: PlacementPolicy) -> MarginalGain:
    return MarginalGain(placement)
