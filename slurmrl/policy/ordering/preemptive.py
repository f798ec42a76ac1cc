"""Preemptive priority scheduling shared by Tiresias and the SRTF bound.

Every pass ranks the pending jobs; each job in rank order starts if the
placement finds GPUs, and otherwise may take the GPUs of running jobs that
rank below it by the subclass's rule (:meth:`PreemptiveScheduler.may_preempt`).
Victims are tried lowest-priority first and only those whose GPUs the new
placement actually uses are stopped. Work-conserving: a job that cannot start
either way is skipped, not allowed to block the rest (as in Tiresias's own
simulator); the subclasses' starvation guards keep large jobs from waiting
forever.

The simulator applies ``Decisions.preempt`` before ``Decisions.starts``:
a start may use GPUs of a job preempted in the same pass.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.backfill import NodeBound
from slurmrl.policy.base import PlacementPolicy, confirm_start
from slurmrl.policy.view import ClusterView, Decisions, JobIds, JobView, Start, by_job_id, changes

# Preemptions per pass at most (our choice): bounds churn when a burst of
# high-priority jobs arrives at once; the rest wait for the next pass.
MAX_PREEMPT_PER_PASS = 16


class PreemptiveScheduler:
    deployable = True
    preemptive = True  # the simulator consults it even when every GPU is busy
    # True: a running job's key never rises while it runs (a remaining amount), so victims are
    # ranked lazily from stale keys (:class:`FallingIndex`); keys must be unique (end with the job id).
    keys_fall = False
    # True: :meth:`wake_at` reads the foreseen key changes of every running job, protected or not.
    reads_protected_changes = False

    def __init__(self, name: str, placement: PlacementPolicy, *, min_run: float = 0.0) -> None:
        self.name = name
        self.placement = placement
        self.min_run = min_run  # a running job is safe from preemption for this long after it starts
        self.max_preempt_per_pass = MAX_PREEMPT_PER_PASS
        # The running jobs ranked between passes (None: keys move all the time).
        foresees = type(self).key_changes_at is not PreemptiveScheduler.key_changes_at
        self.index: RunningIndex | None = (
            RunningIndex(self) if foresees else FallingIndex(self) if self.keys_fall else None
        )

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        return None

    # -- hooks ----------------------------------------------------------------------

    def prepare(self, view: ClusterView) -> None:
        """Update state from the view before ranking (learning, starvation checks)."""

    def key(self, job: JobView, now: float) -> Any:
        """Sort key: smaller runs first. Must be defined for pending and running jobs."""
        raise NotImplementedError

    def may_preempt(self, victim: JobView, job: JobView, now: float) -> bool:
        """Whether ``job`` may stop ``victim``.

        Must be monotone in :meth:`key`: a job that may not stop a victim may
        not stop any running job ranked above that victim either. The pass
        relies on it to stop early.
        """
        raise NotImplementedError

    def keys(self, jobs: list[JobView], now: float) -> list[Any]:
        """:meth:`key` of many jobs (every running job, each pass); override to do it faster."""
        return [self.key(j, now) for j in jobs]

    def rank(self, view: ClusterView) -> list[JobView]:
        """Pending jobs in rank order; subclasses may do better than a full sort."""
        now = view.now
        return sorted(view.pending, key=lambda j: self.key(j, now))

    def on_preempt(self, victim: JobView, now: float) -> None:
        """Called once per job this scheduler stops."""

    def on_start(self, job: JobView, now: float) -> None:
        """Called once per job this scheduler starts."""

    def wake_at(self, view: ClusterView) -> float | None:
        """When priorities next change without an event (a demotion, a promotion), if ever."""
        return None

    def keyed(self, job: JobView, now: float) -> tuple[Any, float | None]:
        """:meth:`key` and :meth:`key_changes_at` of ``job`` at once; override where they share work."""
        return self.key(job, now), self.key_changes_at(job, now)

    def key_changes_at(self, job: JobView, now: float) -> float | None:
        """About when running ``job``'s key next changes (inf: not while it runs).

        None (the default) says keys of running jobs move all the time, so
        every pass keys and sorts every running job. A scheduler whose keys
        change only at times it can foresee (Tiresias's demotions) returns
        that time, within :func:`key_margin` of the exact instant, and the
        pass keeps the running jobs ranked between passes instead
        (:class:`RunningIndex`), re-keying a job only once that time is near.
        Such keys must be unique (end with the job id).
        """
        return None

    # -- the pass ---------------------------------------------------------------------

    def decide(self, view: ClusterView) -> Decisions:
        self.prepare(view)
        now = view.now
        index = self.index
        if index is not None:
            index.sync(view)
        ranked = self.rank(view)
        order = JobIds(ranked)
        if not ranked:
            return Decisions(order=order, wake_at=self.wake_at(view))
        pool = view.pool.copy()
        victims: list[JobView] | Victims | None = None  # worst-ranked first, sorted when first needed
        exposed: tuple[list[JobView], list[Any]] | None = None  # the running jobs victims come from
        starts: list[Start] = []
        preempted: list[JobView] = []
        # Smallest GPU count that could neither be placed nor displace anyone
        # this pass: free GPUs only shrink and victims only get scarcer down
        # the ranking, so any later unconstrained job at least that large
        # fails too. Once a 1-GPU job fails, the pass is over.
        smallest_failure = None
        # The same for jobs with a GPU type or a node count, where the
        # placement's verdict is monotone in the free GPUs (see Failures).
        failures = Failures(now) if getattr(self.placement, "monotone", False) else None
        for job in ranked:
            unconstrained = not job.gpu_type and job.num_nodes is None
            if smallest_failure is not None and unconstrained and job.gpus >= smallest_failure:
                if smallest_failure <= 1:
                    break
                continue
            if failures is not None and failures.doomed(job):
                continue
            if pool.total_free == 0:
                # Only the worst-ranked victim decides whether to go on, so the
                # full ranking of victims waits until a job may displace it.
                if victims is None:
                    if index is not None:
                        worst = index.worst()
                    else:
                        exposed = exposed or self._exposed(view)
                        worst = _first_of(*exposed)
                else:
                    worst = victims[0] if victims else None
                if (
                    worst is None
                    or len(preempted) >= self.max_preempt_per_pass
                    or not self.may_preempt(worst, job, now)
                ):
                    # Rank order is monotone in the preemption rule: if this job
                    # cannot displace the worst running job, no later one can.
                    break
            placement = self.placement.place(job, pool, view) if job.gpus <= pool.total_free else None
            if placement is None and len(preempted) < self.max_preempt_per_pass:
                if victims is None:
                    victims = (
                        index.ranked() if index is not None else _ranked(*(exposed or self._exposed(view)))
                    )
                placement = self._displace(job, pool, view, victims, preempted)
            if placement is None:
                if unconstrained and (smallest_failure is None or job.gpus < smallest_failure):
                    smallest_failure = job.gpus
                if failures is not None:
                    failures.add(job)
                continue
            pool.allocate(placement)
            starts.append(Start(job.job_id, placement))
            confirm_start(self.placement, job, placement, view)
            self.on_start(job, now)
        for victim in preempted:
            self.on_preempt(victim, now)
        return Decisions(
            order=order,
            starts=tuple(starts),
            preempt=tuple(v.job_id for v in preempted),
            wake_at=self.wake_at(view),
        )

    def _victims(self, view: ClusterView) -> list[JobView]:
        """Running jobs past their protection, worst-ranked first."""
        return _ranked(*self._exposed(view))

    def _exposed(self, view: ClusterView) -> tuple[list[JobView], list[Any]]:
        """Running jobs past their protection, and their keys."""
        now, min_run = view.now, self.min_run
        # Past protection: run at least min_run since the last start (a job
        # with no start time counts as just started). Inline: every pass of a
        # full cluster reads every running job here.
        jobs = [
            j
            for j in view.running
            if j.placement is not None
            and now - (j.start_time if j.start_time is not None else now) >= min_run
        ]
        return jobs, self.keys(jobs, now)

    def _displace(
        self,
        job: JobView,
        pool: GpuPool,
        view: ClusterView,
        victims: list[JobView] | Victims,
        preempted: list[JobView],
    ) -> Placement | None:
        """Place ``job`` by stopping lower-ranked running jobs; commits the stops into ``pool``."""
        budget = self.max_preempt_per_pass - len(preempted)
        candidates: list[JobView] = []
        for victim in victims:  # those it may stop are a prefix (may_preempt is monotone)
            if len(candidates) == budget or not self.may_preempt(victim, job, view.now):
                break
            candidates.append(victim)
        if not candidates or pool.total_free + sum(v.gpus for v in candidates) < job.gpus:
            return None
        if not self._could_hold(job, pool, candidates, view.now):
            return None
        scratch = pool.copy()
        chosen: list[JobView] = []
        found: Placement | None = None
        # A placement is tried only once the nodes the job may span could
        # hold it (a condition every placement needs, kept on plain counts):
        # most tries of a saturated pass were refused on that alone.
        bound = NodeBound(job, scratch, view.now)
        for victim in candidates:
            if victim.placement is None:
                continue
            scratch.release(victim.placement)
            bound.release(victim.placement)
            chosen.append(victim)
            if scratch.total_free >= job.gpus and bound.possible():
                found = self.placement.place(job, scratch, view)
                if found is not None:
                    break
        if found is None:
            return None
        used = {(a.node, g) for a in found.allocs for g in a.gpus}
        for victim in chosen:
            if victim.placement is not None and any(
                (a.node, g) in used for a in victim.placement.allocs for g in a.gpus
            ):
                pool.release(victim.placement)
                preempted.append(victim)
                victims.remove(victim)
        return found

    @staticmethod
    def _could_hold(job: JobView, pool: GpuPool, candidates: list[JobView], now: float) -> bool:
        """Whether the nodes ``job`` may span could hold it with every candidate stopped.

        Free counts only grow as victims are released, so where this fails no
        prefix of the candidates can make room either: most failed tries of a
        saturated pass end here, on plain counts, without a scratch pool.
        """
        whole = NodeBound(job, pool, now)
        for victim in candidates:
            if victim.placement is not None:
                whole.release(victim.placement)
        return whole.possible()


def run_per_gpu(job: JobView, now: float) -> float:
    """Seconds of work done so far per GPU (``JobView.service`` over the GPUs), as SRTF ranks by.

    Written out (not ``job.service(now) / job.gpus``) because SRTF keys every
    running job in every pass; the arithmetic is the same, step for step.
    """
    gpus, start = job.gpus, job.start_time
    if gpus <= 0:
        return 0.0
    return (job.attained_service + gpus * max(0.0, now - start if start is not None else 0.0)) / gpus


def key_margin(at: float) -> float:
    """How far a foreseen key change may be from the exact one: float error of times near ``at``, a million-fold."""
    return 1e-6 * max(1.0, abs(at))


class RunningIndex:
    """Running jobs kept in key order between passes, for keys that change only at foreseen times.

    Ranking every running job in every pass (to pick victims, worst first)
    was most of a preemptive replay; here a pass costs one identity check
    per running job, and keys are computed when a job starts, when its
    protection (``min_run``) ends, and when the scheduler's foreseen change
    (:meth:`PreemptiveScheduler.key_changes_at`) comes within
    :func:`key_margin`, where the key is computed exactly at every pass
    until it has changed. So every key read equals ``key(job, now)``.
    """

    def __init__(self, scheduler: PreemptiveScheduler) -> None:
        self._sched = scheduler
        self._jobs: dict[str, JobView] = {}  # running jobs as last seen (identity tells a restart)
        self._key: dict[str, Any] = {}  # keys of the exposed jobs (past their protection)
        self._order: list[tuple[Any, str]] = []  # the exposed jobs, best (smallest key) first
        self._protected: list[tuple[float, str]] = []  # (start, id) of protected jobs, by start
        self._changes: list[tuple[float, str]] = []  # (foreseen key change, id), soonest first
        self._change_of: dict[str, float] = {}
        self.unstarted = 0  # running jobs without a start time (their service never grows)
        self._stale = False  # every key to compute afresh at the next sync
        # Follow the key changes of protected jobs too (:meth:`changes` reads them: Tiresias's
        # wake-ups); else only the exposed jobs' are followed, as only their keys are read.
        self._every_change = scheduler.reads_protected_changes

    def invalidate(self) -> None:
        """The scheduler's keys changed for every job (it learned): key all running jobs afresh at the next sync."""
        self._stale = True

    def sync(self, view: ClusterView) -> None:
        """Follow ``view.running``: new and gone jobs, ended protections, keys about to change."""
        now = view.now
        jobs = self._jobs
        self._follow(view.running, now)
        if self._stale:
            self._rekey(now)
        min_run, protected = self._sched.min_run, self._protected
        while protected and now - protected[0][0] >= min_run:
            job = jobs[protected.pop(0)[1]]
            self._expose(job, now)
            if not self._every_change:  # its changes are followed from now on
                self._foresee(job.job_id, self._sched.key_changes_at(job, now))
        changes = self._changes
        i = 0
        while i < len(changes) and changes[i][0] - key_margin(changes[i][0]) <= now:
            at, job_id = changes[i]
            job = jobs[job_id]
            old = self._key.get(job_id)
            if old is None:
                later = self._sched.key_changes_at(job, now)
            else:
                key, later = self._sched.keyed(job, now)
                if key != old:
                    self._order.pop(bisect.bisect_left(self._order, (old, job_id)))
                    bisect.insort(self._order, (key, job_id))
                    self._key[job_id] = key
            if later != at:
                del changes[i]
                self._foresee(job_id, later)
                if later is not None and later < at:
                    i = 0  # moved to the front: look again from there
            else:
                i += 1

    def _follow(self, running: Collection[JobView], now: float) -> None:
        """New and gone running jobs, by identity (a restarted job is a new view).

        Most passes start or stop one job or two among hundreds, so the jobs
        are matched in C (:func:`~slurmrl.policy.view.by_job_id`). The index's
        structures are sorted, so the order of drops and adds changes nothing.
        """
        here = by_job_id(running)
        dropped, added = changes(self._jobs, here)
        for job_id in dropped:
            self._drop(job_id)
        for job_id in added:
            self._add(here[job_id], now)

    def worst(self) -> JobView | None:
        """The exposed running job with the largest key."""
        return self._jobs[self._order[-1][1]] if self._order else None

    def ranked(self) -> Victims:
        """The exposed running jobs, worst-ranked (largest key) first, read as far as the pass reads.

        A pass walks a few victims at most (a preemption budget, a job that may
        not stop the next one): listing every running job was a cost of its own.
        """
        jobs = self._jobs
        walk = (jobs[job_id] for _, job_id in reversed(self._order))
        return Victims(lambda: next(walk, None))

    def changes(self) -> Iterator[tuple[float, JobView]]:
        """(foreseen key change, job) of the running jobs whose key will change, soonest first
        (protected ones only for a scheduler that ``reads_protected_changes``)."""
        jobs = self._jobs
        for at, job_id in self._changes:
            yield at, jobs[job_id]

    def _add(self, job: JobView, now: float) -> None:
        self._jobs[job.job_id] = job
        self.unstarted += job.start_time is None
        if job.placement is None:
            pass  # never a victim (the plain pass skips it too)
        elif job.start_time is None:
            if 0.0 >= self._sched.min_run:  # counts as just started, at every pass
                self._expose(job, now)
        elif now - job.start_time >= self._sched.min_run:
            self._expose(job, now)
        else:
            bisect.insort(self._protected, (job.start_time, job.job_id))
        if self._every_change or job.job_id in self._key:
            self._foresee(job.job_id, self._sched.key_changes_at(job, now))

    def _rekey(self, now: float) -> None:
        self._stale = False
        exposed = list(self._key)
        keys = self._sched.keys([self._jobs[i] for i in exposed], now)
        self._key = dict(zip(exposed, keys, strict=True))
        self._order = sorted((key, job_id) for job_id, key in self._key.items())
        self._changes.clear()
        self._change_of.clear()
        for job_id, job in self._jobs.items():
            if self._every_change or job_id in self._key:
                self._foresee(job_id, self._sched.key_changes_at(job, now))

    def _foresee(self, job_id: str, at: float | None) -> None:
        if at is None or not math.isfinite(at):
            self._change_of.pop(job_id, None)
            return
        self._change_of[job_id] = at
        bisect.insort(self._changes, (at, job_id))

    def _expose(self, job: JobView, now: float) -> None:
        key = self._key[job.job_id] = self._sched.key(job, now)
        bisect.insort(self._order, (key, job.job_id))

    def _drop(self, job_id: str) -> None:
        job = self._jobs.pop(job_id)
        self.unstarted -= job.start_time is None
        key = self._key.pop(job_id, None)
        if key is not None:
            self._order.pop(bisect.bisect_left(self._order, (key, job_id)))
        elif job.start_time is not None and job.placement is not None:
            entry = (job.start_time, job_id)
            i = bisect.bisect_left(self._protected, entry)
            if i < len(self._protected) and self._protected[i] == entry:
                del self._protected[i]
        at = self._change_of.pop(job_id, None)
        if at is not None:
            self._changes.pop(bisect.bisect_left(self._changes, (at, job_id)))


class FallingIndex(RunningIndex):
    """Running jobs ranked lazily, for keys that never rise while a job runs (srtf-limit's).

    Such a key read at an earlier pass bounds the job's key now from above,
    so the exposed jobs are kept in the order of their keys as last read,
    and a pass reads a key afresh only on its way to the top: once the top
    one's key is fresh, it is the largest. A pass walks the victims worst
    first and stops within a few (a preemption budget, a job that may not
    stop the next one), so it reads a few keys instead of every running
    job's and sorts nothing. Every victim it hands out carries its exact key
    of this pass, so the order is the one a full sort would give.
    """

    def __init__(self, scheduler: PreemptiveScheduler) -> None:
        super().__init__(scheduler)
        self._now = -math.inf
        self._fresh: dict[str, float] = {}  # job id -> the pass time its key was last read
        self._taken: list[tuple[Any, str]] = []  # handed out this pass, worst first, fresh keys
        self._pass: Victims | None = None

    def sync(self, view: ClusterView) -> None:
        for entry in self._taken:
            bisect.insort(self._order, entry)
        self._taken.clear()
        self._pass = None
        self._now = view.now
        super().sync(view)

    def worst(self) -> JobView | None:
        victims = self.ranked()
        return victims[0] if victims else None

    def ranked(self) -> Victims:
        """This pass's victims, worst first, each read afresh on its way out."""
        if self._pass is None:
            self._pass = Victims(self.take)
        return self._pass

    def take(self) -> JobView | None:
        """The worst exposed job not yet handed out this pass, its key read at this pass."""
        order, now, fresh = self._order, self._now, self._fresh
        while order:
            key, job_id = order[-1]
            job = self._jobs[job_id]
            if fresh.get(job_id) != now:
                fresh[job_id] = now
                new = self._sched.key(job, now)
                if new != key:
                    order.pop()
                    bisect.insort(order, (new, job_id))
                    self._key[job_id] = new
                    continue
            self._taken.append(order.pop())
            return job
        return None

    def _expose(self, job: JobView, now: float) -> None:
        super()._expose(job, now)
        self._fresh[job.job_id] = now

    def _drop(self, job_id: str) -> None:
        super()._drop(job_id)
        self._fresh.pop(job_id, None)


class Victims:
    """A pass's victims worst first, taken from ``source`` (None: no more) only as far as the pass reads."""

    def __init__(self, source: Callable[[], JobView | None]) -> None:
        self._source = source
        self._out: list[JobView] = []  # handed out, worst first, less those stopped
        self._done = False

    def _more(self) -> bool:
        if self._done:
            return False
        job = self._source()
        if job is None:
            self._done = True
            return False
        self._out.append(job)
        return True

    def __bool__(self) -> bool:
        return bool(self._out) or self._more()

    def __getitem__(self, i: int) -> JobView:
        while len(self._out) <= i:
            if not self._more():
                raise IndexError(i)
        return self._out[i]

    def __iter__(self) -> Iterator[JobView]:
        i = 0
        while i < len(self._out) or self._more():
            yield self._out[i]
            i += 1

    def remove(self, job: JobView) -> None:
        self._out.remove(job)


def _ranked(jobs: list[JobView], keys: list[Any]) -> list[JobView]:
    """``jobs`` worst-ranked (largest key) first; equal keys keep their order."""
    return [jobs[i] for i in sorted(range(len(jobs)), key=keys.__getitem__, reverse=True)]


def _first_of(jobs: list[JobView], keys: list[Any]) -> JobView | None:
    """``_ranked(jobs, keys)[0]`` without the sort: ``max`` also keeps the first of equal keys."""
    return jobs[max(range(len(jobs)), key=keys.__getitem__)] if jobs else None


class Failures:
    """Shapes of the jobs a pass could neither place nor make room for.

    A later job is doomed when an earlier failure asked for no more GPUs, of
    its GPU type or of any, spread over at least as many nodes: every state
    the later job can try (the pass's free GPUs, plus a prefix of the victims
    it may stop) frees no GPU that the earlier job's last try, with all its
    candidate victims released, did not. Valid only for placements whose
    verdict is monotone in the free GPUs (a placement's ``monotone``
    attribute): any that place a job place it on any pool with more free
    GPUs on every node. Skipping a doomed job changes no decision; under
    packed node counts, where every job has one, it spares most of the
    displacement attempts of a saturated pass.
    """

    __slots__ = ("_now", "_least")

    def __init__(self, now: float) -> None:
        self._now = now
        # (GPU type, most nodes) -> fewest GPUs that failed; inf nodes: any number.
        self._least: dict[tuple[str, float], int] = {}

    def _nodes(self, job: JobView) -> float:
        k = job.max_nodes(self._now)
        return float("inf") if k is None else float(k)

    def add(self, job: JobView) -> None:
        if job.allowed_nodes is not None:
            return  # failed on its own usable nodes only: says nothing of other jobs
        key = (job.gpu_type, self._nodes(job))
        known = self._least.get(key)
        if known is None or job.gpus < known:
            self._least[key] = job.gpus

    def doomed(self, job: JobView) -> bool:
        if not self._least:
            return False
        nodes, gpus, gpu_type = self._nodes(job), job.gpus, job.gpu_type
        for (kind, most), least in self._least.items():
            if least <= gpus and most >= nodes and (not kind or kind == gpu_type):
                return True
        return False
