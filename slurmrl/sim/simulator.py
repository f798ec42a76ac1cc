"""Trace replay: the simulator backend of the policy interface.

The :class:`Simulator` owns the cluster state and the event queue. It hands a
:class:`~slurmrl.policy.view.ClusterView` out at each decision point and
applies the :class:`~slurmrl.policy.view.Decisions` that come back; the Slurm
daemon does the same two things against a live controller. Policies never
learn which of the two they talk to.

Job progress is measured in *ideal seconds*: a trace's duration is the run
time under the best placement this cluster allows, and a running job advances
at ``speed <= 1`` given its placement and its neighbours (from
:class:`~slurmrl.perf.PerformanceModel`). Whenever a job starts or stops, the
speeds of the jobs that share a node with it (or a rack switch, for
multi-node jobs) are recomputed and their completions rescheduled.

Elastic jobs (``SimConfig.elastic``) may start on any GPU count of their
range. A trace's duration is the job's run time on its traced count; on
``n`` GPUs its speed is multiplied by throughput(n) / throughput(traced)
from :mod:`slurmrl.perf.scaling`, placement and neighbours acting as for any
job. A policy resizes a running elastic job by preempting it and starting it
again, in the same decisions, on another count: the preemption charges the
checkpoint-restart cost once.
"""

from __future__ import annotations

import copy
import math
import time as wallclock
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from operator import attrgetter

from slurmrl.cluster.model import Cluster, LinkTier, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.errors import PolicyError
from slurmrl.perf import PerformanceModel, canonical_model, model_for
from slurmrl.perf.model import DEFAULT_SPEED_MODEL, JobTerms, check_speed_model
from slurmrl.perf.scaling import ScalingModel
from slurmrl.policy.base import Policy
from slurmrl.policy.placement.common import could_hold
from slurmrl.policy.view import ClusterView, Decisions, FinishedJob, JobView, Promise
from slurmrl.sim.admitted import ADMISSIONS, Admission
from slurmrl.sim.cutoff import JctCutoff, ReplayAbandoned
from slurmrl.sim.elastic import ElasticRule, parse_elastic
from slurmrl.sim.engine import ARRIVAL, COMPLETION, WAKE, EventQueue
from slurmrl.sim.gc_pause import paused_gc
from slurmrl.sim.locality import Locality, parse_locality
from slurmrl.sim.records import JobRecord, Sample
from slurmrl.traces.schema import Trace, TraceJob

# Checkpoint-and-restore cost charged to a preempted job when it restarts,
# and so to every resize of an elastic job (a stop and a start at another
# GPU count). Tiresias (Gu et al., NSDI'19) and Gandiva (Xiao et al.,
# OSDI'18) report suspend/resume of DL jobs taking from about a second to
# tens of seconds depending on model size; Pollux's simulator charges each
# re-allocation exactly 30 s of checkpoint-restart delay (petuum/adaptdl
# osdi21-artifact, simulator/simulator.py, Job.reallocate), the value used here.
DEFAULT_RESTART_OVERHEAD_S = 30.0


# What Simulator.fork copies beyond the pool, the event queue and the runs:
# containers a replay changes (copied) and lists of them (each copied).
_FORK_COPIED = (
    "pending",
    "running",
    "_cross_rack",
    "_dirty",
    "_node_load",
    "_rack_load",
    "_finished_since",
    "samples",
)
_FORK_COPIED_EACH = ("_on_node", "_multi_on_rack")

# Event kinds: (kind, job id, version) travel through the queue.
_END, _ARRIVE, _WAKE, _SPREAD = range(4)
# Slack a job must keep to be left at the interference floor unrecomputed:
# far above the rounding error of the exponent's float sums.
_SLACK_MARGIN = 1e-9


@dataclass(frozen=True)
class SimConfig:
    """How a replay charges jobs; every field is recorded with the results.

    The defaults are the ones a scheduling researcher can check: jobs run at
    their trace duration unless a published measurement says their placement
    slows them (``speed_model``), multi-GPU jobs are packed into the fewest
    nodes (``locality``), time limits are estimates policies read but nobody
    enforces (the trace's jobs were not killed at them), and policies see a
    job's model class only where the trace records one.
    """

    seed: int = 0  # drives model assignment where the trace names none
    restart_overhead: float = DEFAULT_RESTART_OVERHEAD_S
    enforce_time_limits: bool = False  # kill jobs at their time limit, as Slurm does
    allow_preemption: bool = True
    # Whether policies see the model class the simulator drew for jobs whose
    # trace records none (a study of what that knowledge is worth). Models the
    # trace records are always visible: users of the daemon declare them in
    # the job comment or name (``model=resnet50``).
    reveal_models: bool = False
    speed_model: str = DEFAULT_SPEED_MODEL  # none | placement | full, see slurmrl.perf.model
    locality: Locality = Locality()  # node counts for jobs whose trace records none
    # GPU type the trace's durations were measured on; "" = the cluster's most
    # common type, so a homogeneous cluster runs every job at its trace speed.
    reference_gpu: str = ""
    # Which jobs may run on other GPU counts (see slurmrl.sim.elastic); off by default.
    elastic: ElasticRule = ElasticRule()

    def __post_init__(self) -> None:
        check_speed_model(self.speed_model)
        object.__setattr__(self, "locality", parse_locality(self.locality))
        object.__setattr__(self, "elastic", parse_elastic(self.elastic))


@dataclass(frozen=True)
class SimResult:
    records: tuple[JobRecord, ...]
    samples: tuple[Sample, ...]
    wall_seconds: float
    decisions: int  # scheduling passes


class _Run:
    """Mutable state of one job from arrival to its end."""

    __slots__ = (
        "job",
        "view",
        "model",
        "remaining",
        "speed",
        "last",
        "version",
        "placement",
        "first_start",
        "first_placement",
        "run_time",
        "started_at",
        "preemptions",
        "end",
        "killed",
        "kill_at",
        "ends_at",
        "due",
        "load",
        "slack",
    )

    def __init__(self, job: TraceJob, view: JobView, model: str) -> None:
        self.job = job
        self.view = view
        self.model = model
        self.remaining = job.duration  # ideal seconds of work left
        self.speed = 1.0
        self.last = 0.0
        self.version = 0  # tells the live end event from stale ones
        self.placement: Placement | None = None
        self.first_start = math.nan
        self.first_placement: Placement | None = None
        self.run_time = 0.0
        self.started_at = 0.0
        self.preemptions = 0
        self.end = math.nan
        self.killed = False
        # While running: when its time limit kills it (inf: never), when it
        # ends at its present speed (or is killed, if sooner), and the time
        # of its live end event, which may be earlier than ends_at.
        self.kill_at = math.inf
        self.ends_at = math.inf
        self.due = math.inf
        self.load: JobTerms | None = None  # while running: its share of the shared loads
        # A lower bound on how far its interference exponent may fall and its
        # speed stay at the floor (see PerformanceModel.speed_from_loads).
        self.slack = -math.inf

    @property
    def over(self) -> bool:
        """Finished (or killed): nothing changes this run's state any more."""
        return not math.isnan(self.end)

    def copy(self) -> _Run:
        """A twin for a forked simulator: every field holds an immutable value."""
        twin = _Run.__new__(_Run)
        for name, value in zip(_RUN_FIELDS, _read_run(self), strict=True):
            setattr(twin, name, value)
        return twin


_RUN_FIELDS = _Run.__slots__
_read_run = attrgetter(*_RUN_FIELDS)


class Simulator:
    """Replays a trace on a cluster; step it with :meth:`next_view` and :meth:`apply`."""

    def __init__(
        self,
        trace: Trace,
        cluster: Cluster,
        *,
        config: SimConfig = SimConfig(),
        perf: PerformanceModel | None = None,
    ) -> None:
        self.trace = trace
        self.cluster = cluster
        self.config = config
        self.perf = perf or PerformanceModel(
            cluster, speed_model=config.speed_model, reference_gpu=config.reference_gpu
        )
        self._colocation = self.perf.colocation
        self.pool = GpuPool(cluster)
        self._readonly: GpuPool | None = None  # the pool's read-only face, until the pool next changes
        self.events: EventQueue[tuple[int, str | None, int]] = EventQueue(
            trace.jobs[0].submit_time if trace.jobs else 0.0
        )
        self.runs: dict[str, _Run] = {}
        self.pending: dict[str, JobView] = {}
        self.running: dict[str, JobView] = {}
        self._on_node: list[dict[str, None]] = [{} for _ in cluster.nodes]
        self._multi_on_rack: list[dict[str, None]] = [{} for _ in cluster.racks]
        self._cross_rack: dict[str, None] = {}
        self._dirty: dict[str, bool] = {}  # job -> must reschedule even if its speed is unchanged
        # Summed interference sensitivities of the running jobs per node, per
        # rack (multi-node jobs) and on the core (cross-rack jobs).
        self._node_load = [0.0] * len(cluster.nodes)
        self._rack_load = [0.0] * len(cluster.racks)
        self._core_load = 0.0
        self._finished_since: list[FinishedJob] = []
        self.samples: list[Sample] = []
        self.decisions = 0
        self._pass_due = False
        # The last pass's promise (Decisions.promise), whether GPUs were freed
        # since, and whether an event since voided it (a wake-up, a spread, an
        # arrival that may rank first).
        self._promise: Promise | None = None
        self._released = False
        self._forced = False
        self._wake_pending: float | None = None
        self.finished_count = 0
        self.scaling = ScalingModel(self.perf)
        with paused_gc():
            self._admit(trace.jobs)

    def _admit(self, jobs: tuple[TraceJob, ...]) -> None:
        """Every job's view and run state, and its arrival (and spread) events, queued at once.

        Without elastic jobs (whose ranges read the speed model) the same jobs on the same
        cluster and settings admit the same way, so a process keeps its last admissions
        (:mod:`slurmrl.sim.admitted`) and a replay of one of them starts from a fork.
        """
        config = self.config
        settings = None if config.elastic.on else (config.seed, config.reveal_models, config.locality)
        kept = ADMISSIONS.get(jobs, self.cluster, settings) if settings is not None else None
        if kept is None:
            kept = self._admission(jobs)
            if settings is not None:
                ADMISSIONS.put(kept, settings)
        runs = self.runs
        for job, view, model in kept.entries:
            runs[job.job_id] = _Run(job, view, model)
        self.events = kept.events.fork()

    def _admission(self, jobs: tuple[TraceJob, ...]) -> Admission:
        config, cluster = self.config, self.cluster
        request, seed, elastic, reveal = (
            config.locality.request,
            config.seed,
            config.elastic.on,
            config.reveal_models,
        )
        entries: list[tuple[TraceJob, JobView, str]] = []
        events: list[tuple[float, int, tuple[int, str | None, int]]] = []
        for job in jobs:
            job_id, gpus, submit = job.job_id, job.num_gpus, job.submit_time
            model = canonical_model(job.model, job_id, seed) if job.model else model_for(job_id, seed)
            nodes, spread_after = request(gpus, job.num_nodes, cluster)
            view = JobView(
                job_id,
                gpus,
                submit,
                job.user,
                job.vc,
                job.time_limit,
                job.name,
                model if reveal else job.model,
                nodes,
                job.gpu_type,
                spread_at=submit + spread_after,
                gpu_range=self._gpu_range(job, model) if elastic else None,
            )
            entries.append((job, view, model))
            events.append((submit, ARRIVAL, (_ARRIVE, job_id, 0)))
            if nodes is not None and nodes < gpus and math.isfinite(spread_after):
                # Delay scheduling: look at the job again once it may spread.
                events.append((view.spread_at, WAKE, (_SPREAD, job_id, 0)))
        queue: EventQueue[tuple[int, str | None, int]] = EventQueue(self.events.now)
        queue.schedule_all(events)
        return Admission(jobs, cluster, tuple(entries), queue)

    def _gpu_range(self, job: TraceJob, model: str) -> tuple[int, int] | None:
        """The job's elastic range under the configured rule (None: rigid)."""
        return self.config.elastic.gpu_range(
            job.job_id,
            job.num_gpus,
            self.config.seed,
            useful=self.scaling.useful_gpus(model),
            total=self.cluster.total_gpus,
        )

    # -- the backend surface: views out, decisions in ---------------------

    @property
    def now(self) -> float:
        return self.events.now

    def done(self) -> bool:
        return not self.pending and not self.running and not len(self.events)

    def next_view(self, *, skip_when_full: bool = True) -> ClusterView | None:
        """Advance to the next decision point and describe it; None at the end.

        With ``skip_when_full`` no view is produced while every GPU is busy,
        since a policy that cannot preempt has nothing to decide then. Nor
        while the last pass's promise holds (``Decisions.promise``: no
        GPUs freed since, or not enough for the job it waits for, and
        nothing that voids it): such a pass is counted as a decision, its
        answer (nothing) known.
        """
        while True:
            if self._pass_due and self.pending and (self.pool.total_free > 0 or not skip_when_full):
                promise = self._promise
                if (
                    promise is None
                    or self._forced
                    or self.now >= promise.until
                    or (self._released and could_hold(promise.job, self.pool, self.now))
                ):
                    self._pass_due = self._forced = False
                    self._promise = None  # a promise covers the passes before the next answer only
                    return self._view()
                self.decisions += 1
            self._pass_due = False
            if not len(self.events):
                return None
            self._advance()

    def apply(self, decisions: Decisions, *, again: bool = False) -> None:
        """Carry out a policy's decisions at the current time.

        ``again`` asks for another view at this same instant (a policy that
        starts one job per decision, such as the RL environment's agent).
        """
        self.decisions += 1
        now = self.now
        for job_id in decisions.preempt:
            if not self.config.allow_preemption:
                break
            if job_id not in self.running:
                raise PolicyError(f"policy asked to preempt job {job_id}, which is not running")
            self._stop(job_id, now, preempted=True)
        for start in decisions.starts:
            if start.job_id not in self.pending:
                raise PolicyError(f"policy started job {start.job_id}, which is not pending")
            view = self.pending[start.job_id]
            if not view.accepts_gpus(start.placement.num_gpus):
                asked = view.gpus if view.gpu_range is None else "{}-{}".format(*view.gpu_range)
                raise PolicyError(
                    f"policy gave job {start.job_id} {start.placement.num_gpus} GPUs; it asked for {asked}"
                )
            if not self.pool.is_free(start.placement):
                raise PolicyError(
                    f"policy placed job {start.job_id} on GPUs that are not free: {start.placement}"
                )
            self._start(start.job_id, start.placement, now)
        if decisions.wake_at is not None and decisions.wake_at > now:
            if self._wake_pending is None or decisions.wake_at < self._wake_pending:
                self._wake_pending = decisions.wake_at
                self.events.schedule(decisions.wake_at, WAKE, (_WAKE, None, 0))
        if decisions.starts or decisions.preempt:
            self._flush(now)
            self._sample(now)
        # A stopped job waits again, unseen by the pass: no promise stands over it.
        self._promise = None if decisions.preempt else decisions.promise
        self._released = self._forced = False
        if again:
            self._pass_due = self._forced = True

    def run(
        self,
        policy: Policy,
        *,
        progress: Callable[[int], None] | None = None,
        first: ClusterView | None = None,
        preemptive: bool | None = None,
        cutoff: JctCutoff | None = None,
    ) -> SimResult:
        """Replay the whole trace under ``policy``.

        ``first``: the view to decide first, when a fork took this replay
        over at a view its original had not decided yet. ``preemptive``
        (default: the policy's own flag) says whether the policy is asked
        while every GPU is busy; a warm start asks as its two policies would.
        ``cutoff``: raise :class:`~slurmrl.sim.cutoff.ReplayAbandoned` once
        the average JCT can no longer come in under it (ignored when time
        limits are enforced, see :mod:`slurmrl.sim.cutoff`).
        """
        if not policy.deployable:
            policy.bind_oracle(self.durations())
        if preemptive is None:
            preemptive = bool(getattr(policy, "preemptive", False))
        skip = not preemptive
        floor, every = None, 1
        if cutoff is not None and not self.config.enforce_time_limits:
            floor = _JctFloor(self.runs.values(), cutoff.measured_from, self._best_pace, cutoff.beat)
            every = cutoff.every
        t0 = wallclock.perf_counter()
        reported = 0
        with paused_gc():
            view = first if first is not None else self.next_view(skip_when_full=skip)
            while view is not None:
                self.apply(policy.decide(view))
                if progress is not None and self.finished_count - reported >= 256:
                    progress(self.finished_count - reported)
                    reported = self.finished_count
                if floor is not None and self.decisions % every == 0:
                    floor.check(view.now)
                view = self.next_view(skip_when_full=skip)
            self._drain()
            if progress is not None:
                progress(self.finished_count - reported)
            return self.result(wallclock.perf_counter() - t0)

    def jct_floor(self, now: float, since: float = -math.inf) -> float:
        """A floor at ``now`` under the final average JCT of the jobs submitted at or after ``since``.

        Ended jobs count their JCT; the others the time they have spent in the
        system so far plus the work they have left at their fastest (see
        :mod:`slurmrl.sim.cutoff`), jobs still to come their fastest run.
        """
        return _JctFloor(self.runs.values(), since, self._best_pace).at(now)

    def fork(self, view: ClusterView | None) -> tuple[Simulator, ClusterView | None]:
        """An independent copy of this simulator, and ``view`` (its latest view, if any) read from the copy.

        Lets a second policy take over from the same instant (a paired
        baseline from a hand-over) without replaying what led there. What
        nothing changes is shared: the trace, the cluster, the config, the
        speed models (their caches only memoise pure functions) and the
        state of jobs that have ended; every container a replay changes is
        copied, and the runs of jobs still to end. A copy costs a fraction
        of replaying a warm-up, where ``copy.deepcopy`` cost half of one.
        """
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin.pool = self.pool.copy()
        twin._readonly = None
        twin.events = self.events.fork()
        twin.runs = {job_id: run if run.over else run.copy() for job_id, run in self.runs.items()}
        for name in _FORK_COPIED:
            setattr(twin, name, copy.copy(getattr(self, name)))
        for name in _FORK_COPIED_EACH:
            setattr(twin, name, [copy.copy(item) for item in getattr(self, name)])
        if view is None:
            return twin, None
        twin_view = replace(
            view, pool=twin._pool_view(), pending=twin.pending.values(), running=twin.running.values()
        )
        return twin, twin_view

    def durations(self) -> Mapping[str, float]:
        """True durations, for oracle policies only (bounds, never deployed)."""
        return {job_id: run.job.duration for job_id, run in self.runs.items()}

    def result(self, wall_seconds: float = 0.0) -> SimResult:
        records = tuple(self._record(run) for run in self.runs.values())
        return SimResult(records, tuple(self.samples), wall_seconds, self.decisions)

    # -- event handling ----------------------------------------------------

    def _advance(self) -> None:
        """Process every event at the next event time.

        A running job has one live end event, at its completion or its time
        limit, whichever comes first. When a slowdown moves its end later the
        event stays where it is and, on firing early, is pushed again to the
        new end; only an end that moves earlier pushes a new event, and the
        old one is dropped here, as stale, without touching any state. Jobs
        slow down at nearly every start of a neighbour, so this keeps most of
        those changes off the heap.
        """
        t = self.events.peek()
        changed = False
        for _, (kind, job_id, tag) in self.events.pop_due(t):
            run = self.runs[job_id] if job_id is not None else None
            if kind == _END:
                if run.version != tag or run.placement is None:  # type: ignore[union-attr]
                    continue
                if run.ends_at > t:  # type: ignore[union-attr]
                    run.due = run.ends_at  # type: ignore[union-attr]
                    self.events.schedule(run.due, COMPLETION, (_END, job_id, tag))  # type: ignore[union-attr]
                    continue
                # Killed only if work was left when the limit came: a job whose
                # work runs out exactly at its limit finished.
                left = run.remaining - (t - run.last) * run.speed  # type: ignore[union-attr]
                run.killed = run.kill_at <= t and left > 1e-9 * max(1.0, run.job.duration)  # type: ignore[union-attr]
                self._stop(job_id, t, preempted=False)  # type: ignore[arg-type]
                changed = True
            elif kind == _ARRIVE:
                self.pending[job_id] = run.view  # type: ignore[index,union-attr]
                self._pass_due = changed = True
                if self._promise is not None and self._promise.overtaken_by(run.view):  # type: ignore[union-attr]
                    self._forced = True
            elif kind == _SPREAD:
                if job_id in self.pending:
                    self._pass_due = self._forced = True
            else:  # wake-up asked for by the policy
                if self._wake_pending is not None and self._wake_pending <= t:
                    self._wake_pending = None
                self._pass_due = self._forced = True
        if changed:
            self._flush(t)
            self._sample(t)

    def _drain(self) -> None:
        """Process what is left after the last decision (completions of running jobs)."""
        while len(self.events):
            self._advance()

    def _sample(self, t: float) -> None:
        sample = Sample(
            t,
            self.cluster.total_gpus - self.pool.total_free,
            len(self.pending),
            len(self.running),
            self.pool.fragmentation(),
        )
        if self.samples and self.samples[-1].time == t:
            self.samples[-1] = sample
        else:
            self.samples.append(sample)

    def _view(self) -> ClusterView:
        finished, self._finished_since = self._finished_since, []
        return ClusterView(
            now=self.now,
            cluster=self.cluster,
            pool=self._pool_view(),
            pending=self.pending.values(),
            running=self.running.values(),
            finished=tuple(finished),
        )

    def _pool_view(self) -> GpuPool:
        """The read-only pool of the views, made again only after a start or a stop.

        Most decision points follow an arrival, which leaves the pool as it
        was; a read-only pool reads the live arrays anyway, so the one made
        at the last change serves until the next.
        """
        if self._readonly is None:
            self._readonly = self.pool.readonly()
        return self._readonly

    # -- starting and stopping jobs ---------------------------------------

    def _start(self, job_id: str, placement: Placement, now: float) -> None:
        run = self.runs[job_id]
        del self.pending[job_id]
        self.pool.allocate(placement)
        self._readonly = None
        run.placement = placement
        run.started_at = now
        run.last = now
        if math.isnan(run.first_start):
            run.first_start = now
            run.first_placement = placement
        view = run.view.running(now, placement)
        run.view = view
        self.running[job_id] = view
        limit = run.job.time_limit
        # The limit counts wall time since this start, as Slurm's does.
        run.kill_at = now + limit if self.config.enforce_time_limits and limit is not None else math.inf
        if not self._colocation:
            # Nobody can change this job's speed until it stops: schedule its end now.
            run.speed = self.perf.static_speed(run.model, placement)
            if placement.num_gpus != run.job.num_gpus:
                run.speed *= self._count_factor(run, placement)
            run.ends_at = run.due = min(now + run.remaining / run.speed, run.kill_at)
            run.version += 1
            self.events.schedule(run.due, COMPLETION, (_END, job_id, run.version))
            return
        self._add_load(job_id, run, placement)
        dirty = self._dirty
        dirty[job_id] = True
        for other in self._neighbours(job_id, placement):
            dirty.setdefault(other, False)

    def _stop(self, job_id: str, now: float, *, preempted: bool) -> None:
        run = self.runs[job_id]
        placement = run.placement
        if placement is None:
            raise RuntimeError(f"job {job_id} stopped without a placement")
        run.remaining = max(0.0, run.remaining - (now - run.last) * run.speed)
        run.run_time += now - run.started_at
        run.version += 1
        run.due = run.ends_at = math.inf
        del self.running[job_id]
        self.pool.release(placement)
        self._readonly = None
        self._released = True
        run.placement = None
        if self._colocation:
            self._release_neighbours(job_id, run, placement)
        if preempted:
            run.preemptions += 1
            run.remaining += self.config.restart_overhead
            run.view = replace(
                run.view,
                start_time=None,
                placement=None,
                attained_service=run.view.attained_service + placement.num_gpus * (now - run.started_at),
                preemptions=run.preemptions,
            )
            self.pending[job_id] = run.view
            self._pass_due = True
            return
        run.end = now
        self.finished_count += 1
        self._finished_since.append(FinishedJob(run.view, now, run.run_time))
        self._pass_due = True

    def _release_neighbours(self, job_id: str, run: _Run, placement: Placement) -> None:
        """Take a stopping job's load away and mark the neighbours it slowed for a new speed."""
        relief = run.load.relief if run.load is not None else 0.0
        self._remove_load(job_id, run)
        dirty, runs = self._dirty, self.runs
        for other in self._neighbours(job_id, placement):
            neighbour = runs[other]
            neighbour.slack -= neighbour.load.sensitivity * relief  # type: ignore[union-attr]
            dirty.setdefault(other, False)
        dirty.pop(job_id, None)

    def _count_factor(self, run: _Run, placement: Placement) -> float:
        """Speed on this placement's GPU count over the traced count's (elastic starts only)."""
        return self.scaling.count_factor(run.model, placement.num_gpus, run.job.num_gpus)

    def _add_load(self, job_id: str, run: _Run, placement: Placement) -> None:
        terms = self.perf.job_terms(run.model, placement)
        if placement.num_gpus != run.job.num_gpus:
            terms = replace(
                terms, placement_factor=terms.placement_factor * self._count_factor(run, placement)
            )
        run.load = terms
        sens, nodes, racks, core = terms.sensitivity, terms.nodes, terms.racks, terms.crosses_core
        for node in nodes:
            self._on_node[node][job_id] = None
            self._node_load[node] += sens
        for rack in racks:
            self._multi_on_rack[rack][job_id] = None
            self._rack_load[rack] += sens
        if core:
            self._cross_rack[job_id] = None
            self._core_load += sens

    def _remove_load(self, job_id: str, run: _Run) -> None:
        if run.load is None:
            return
        terms = run.load
        sens, nodes, racks, core = terms.sensitivity, terms.nodes, terms.racks, terms.crosses_core
        for node in nodes:
            del self._on_node[node][job_id]
            self._node_load[node] -= sens
        for rack in racks:
            del self._multi_on_rack[rack][job_id]
            self._rack_load[rack] -= sens
        if core:
            del self._cross_rack[job_id]
            self._core_load -= sens
        run.load = None

    def _neighbours(self, job_id: str, placement: Placement) -> list[str]:
        """Running jobs whose speed may depend on ``job_id`` being there."""
        seen: dict[str, None] = {}
        for node in placement.nodes:
            seen.update(self._on_node[node])
        if len(placement.allocs) > 1:
            rack_of = self.cluster.rack_of
            for rack in {rack_of[n] for n in placement.nodes}:
                seen.update(self._multi_on_rack[rack])
            if self._cross_rack and self.cluster.worst_link(placement) is LinkTier.CROSS_RACK:
                seen.update(self._cross_rack)
        seen.pop(job_id, None)
        return list(seen)

    def _flush(self, now: float) -> None:
        """Recompute the speeds of the jobs whose neighbourhood changed.

        Starts and ends at one instant are applied first and speeds updated
        once afterwards, so a pass that fills a node with eight jobs costs
        eight speed updates, not thirty-six. A job whose speed is unchanged
        keeps its completion event (loads are float sums, hence the
        tolerance) unless it just started; a job's end event moves only
        when its end comes earlier (see :meth:`_advance`). A job at the
        interference floor is not even recomputed while its slack, lowered by
        each leaving neighbour's relief, shows that it must stay there: on a
        crowded replay that is most multi-node jobs sharing a rack switch.
        This loop runs about twenty times per job in a replay, so it is
        written out in one place.
        """
        dirty, self._dirty = self._dirty, {}
        runs, schedule, speed_of = self.runs, self.events.schedule, self.perf.speed_from_loads
        node_load, rack_load, core_load = self._node_load, self._rack_load, self._core_load
        for job_id, started in dirty.items():
            run = runs[job_id]
            terms = run.load
            if terms is None or (not started and run.slack > _SLACK_MARGIN):
                continue
            speed, run.slack = speed_of(terms, node_load, rack_load, core_load)
            if not speed > 0.0:
                raise RuntimeError(f"performance model gave job {job_id} an impossible speed {speed}")
            if not started and abs(speed - run.speed) <= 1e-12:
                continue
            run.remaining = max(0.0, run.remaining - (now - run.last) * run.speed)
            run.last = now
            run.speed = speed
            ends_at = run.ends_at = min(now + run.remaining / speed, run.kill_at)
            if ends_at < run.due:
                run.due = ends_at
                run.version += 1
                schedule(ends_at, COMPLETION, (_END, job_id, run.version))

    def _record(self, run: _Run) -> JobRecord:
        p = run.first_placement
        return JobRecord(
            job_id=run.job.job_id,
            user=run.job.user,
            vc=run.job.vc,
            model=run.model,
            gpus=run.job.num_gpus,
            submit_time=run.job.submit_time,
            start_time=run.first_start,
            end_time=run.end,
            duration=run.job.duration,
            run_time=run.run_time,
            preemptions=run.preemptions,
            nodes=len(p.allocs) if p else 0,
            racks=len({self.cluster.rack_of[n] for n in p.nodes}) if p else 0,
            worst_link=int(self.cluster.worst_link(p)) if p else -1,
            time_limit=run.job.time_limit if run.job.time_limit is not None else math.nan,
            killed_at_limit=run.killed,
            best_time=run.job.duration / self.perf.best_speed(run.model) / self._best_count_factor(run),
        )

    def _best_pace(self, run: _Run) -> float:
        """Wall seconds per ideal second of work at the fastest ``run`` could go anywhere on the cluster."""
        return 1.0 / (self.perf.best_speed(run.model) * self._best_count_factor(run))

    def _best_count_factor(self, run: _Run) -> float:
        """How much faster than its traced count an elastic job can run at best (1 for rigid jobs)."""
        if run.view.gpu_range is None:
            return 1.0
        low, high = run.view.gpu_range
        g = run.job.num_gpus
        return max(self.scaling.count_factor(run.model, n, g) for n in range(low, high + 1))


_FLOOR_ROUNDING = 1e-9  # relative: far above float error in summing a replay's JCTs, far below any real gap


class _JctFloor:
    """:meth:`Simulator.jct_floor`, kept between checks: each check reads only the jobs not yet ended.

    A job's JCT is at least the time it has spent in the system so far plus
    its work left at its fastest pace (:meth:`Simulator._best_pace`: no
    placement, neighbour or count makes it faster; stops only add time). A
    running job's work is known as of its last speed change (``last``), from
    which it cannot have gone faster, so the floor never falls as the replay
    goes on, and a job still to come counts its fastest run.
    """

    def __init__(
        self, runs: Iterable[_Run], since: float, pace: Callable[[_Run], float], beat: float = math.inf
    ) -> None:
        self.beat = beat  # the average the replay must come in at or below
        self.runs = sorted((r for r in runs if r.job.submit_time >= since), key=lambda r: r.job.submit_time)
        self.count = len(self.runs)
        self.pace = [pace(r) for r in self.runs]
        # tail[i]: the fastest runs of runs[i:], summed (the floor of the jobs still to come)
        self.tail = [0.0] * (self.count + 1)
        for i in range(self.count - 1, -1, -1):
            self.tail[i] = self.tail[i + 1] + self.runs[i].job.duration * self.pace[i]
        self.open = list(range(self.count))  # positions of the jobs not yet ended
        self.ended = 0.0  # summed JCT of the measured jobs that ended

    def at(self, now: float) -> float:
        still: list[int] = []
        waited = 0.0
        runs, pace = self.runs, self.pace
        for k, i in enumerate(self.open):
            run = runs[i]
            submit = run.job.submit_time
            if submit >= now:  # this job and every later one are still to come
                still.extend(self.open[k:])
                waited += self.tail[i]
                break
            end = run.end
            if end == end:  # not NaN: the job has ended
                self.ended += end - submit
                continue
            still.append(i)
            if run.placement is None:
                waited += now - submit + run.remaining * pace[i]
            else:
                waited += max(now - submit, run.last - submit + run.remaining * pace[i])
        self.open = still
        return (self.ended + waited) / self.count if self.count else 0.0

    def check(self, now: float) -> None:
        """Raise :class:`ReplayAbandoned` if the floor at ``now`` passes the figure to beat.

        By more than rounding: a job that ran at its fastest has its end and its
        floor summed in different orders, and a replay that meets the figure
        exactly must run to its end."""
        floor = self.at(now)
        if floor - self.beat > _FLOOR_ROUNDING * max(1.0, abs(self.beat)):
            raise ReplayAbandoned(floor, self.beat, now)
