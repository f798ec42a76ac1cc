"""The daemon: snapshot, decide, plan, apply, sleep; and undo it all on stop.

Invariants that keep the cluster no worse off than stock Slurm:

* every value it sets is in the record (on disk) before the next cycle, so it
  can be given back after a stop, a crash or a controller restart;
* a controller failure never loses the record: the cycle backs off
  exponentially and retries;
* SIGTERM/SIGINT only set a flag; the loop notices it within a fraction of a
  second, gives back every value it set and exits;
* SIGHUP only sets a flag too: the loop reloads and validates the config
  (keeping the old one, logged, when the new one is wrong) and reopens the
  audit log (logrotate);
* one daemon per state file (``lock.py``); the record is read only under the lock.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any

from slurmrl.daemon.apply import BATCH, ApplyResult, SendLimits, apply_changes, error_kind
from slurmrl.daemon.audit import AuditLog
from slurmrl.daemon.config import DaemonConfig, is_checkpoint, load_config
from slurmrl.daemon.factors import PriorityFactors, keyed_like, read_factors
from slurmrl.daemon.history import FinishedTracker, read_earlier
from slurmrl.daemon.limits import AccountLimits, read_limits
from slurmrl.daemon.lock import StateLock
from slurmrl.daemon.logs import LOGGER, log
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.notify import Notifier
from slurmrl.daemon.plan import Change, CyclePlan, plan_cycle, restore_changes
from slurmrl.daemon.preempt import (
    PreemptPlan,
    Requeue,
    as_preempted,
    plan_preemptions,
    requeue_jobs,
    settle_preemptions,
)
from slurmrl.daemon.reconcile import adopt_notes, settle_unsure
from slurmrl.daemon.record import Record
from slurmrl.daemon.scope import build_view, elastic_problems, scoped_pending
from slurmrl.daemon.timescale import scale_view, unscale_decisions
from slurmrl.errors import PolicyError, SlurmError, SlurmrlError
from slurmrl.policy.base import Policy
from slurmrl.policy.view import ClusterView, Decisions
from slurmrl.slurm.backend import SlurmBackend
from slurmrl.slurm.run import STATS
from slurmrl.slurm.snapshot import SlurmJob, Snapshot

REVERT_ATTEMPTS = 5  # rounds of retries when giving values back (our choice)
SLEEP_SLICE = 0.2  # seconds between checks of the stop flag
MIN_WAKE = 1.0  # a policy's wake_at never brings the next cycle closer than this (our choice)
MIN_CALLS = 4  # the call cap never backs off below this many calls per cycle (our choice)


@dataclass(frozen=True)
class CycleOutcome:
    cycle: int
    seconds: float
    policy_seconds: float
    plan: CyclePlan
    result: ApplyResult | None  # None in a dry run
    wake_at: float | None = None  # the policy asked to decide again by then (Unix time)

    @property
    def error(self) -> SlurmError | None:
        return self.result.stopped_by if self.result is not None else None


@dataclass(frozen=True)
class RevertOutcome:
    reverted: int  # jobs whose values were all given back
    gone: int  # jobs that had left the queue (nothing to give back)
    remaining: int  # jobs still in the record (controller unreachable)


def make_backend(config: DaemonConfig) -> SlurmBackend:
    if config.backend == "pyslurm":
        from slurmrl.slurm.pyslurm_backend import PyslurmBackend

        return PyslurmBackend(conf=config.slurm.conf)
    from slurmrl.slurm.cli_backend import CliBackend

    env = {"SLURM_CONF": config.slurm.conf} if config.slurm.conf else None
    return CliBackend(conf=config.slurm.conf, timeout=config.slurm.timeout, env=env)


def load_policy(config: DaemonConfig) -> Policy:
    """The configured policy, by name or from a trained checkpoint folder; refuses policies
    that read true durations, and preemptive ones unless the config lets the daemon requeue."""
    from slurmrl.policy.registry import make_placement, make_policy, policy_entry

    if is_checkpoint(config.policy):
        from slurmrl.rl.checkpoints import policy_from_dir

        placement = make_placement(config.placement) if config.placement else None
        policy = policy_from_dir(config.policy, placement)
    elif not policy_entry(config.policy).deployable:
        raise PolicyError(
            f"policy '{config.policy}' reads true job durations (an offline bound) and cannot be deployed",
            hint="choose a deployable policy; 'slurmrl policies' lists them",
        )
    else:
        policy = make_policy(config.policy, config.placement)
    if not getattr(policy, "deployable", True):
        raise PolicyError(f"policy '{config.policy}' reports itself as not deployable")
    if getattr(policy, "preemptive", False) and config.preempt == "off":
        raise PolicyError(
            f"policy '{config.policy}' preempts running jobs, and the config has preempt = \"off\"",
            hint='set preempt = "requeue" to let the daemon requeue the jobs it stops '
            "(they must checkpoint to keep their progress), or choose a non-preemptive policy",
        )
    return policy


def with_site_factors(snapshot: Snapshot, factors: Mapping[str, PriorityFactors]) -> Snapshot:
    """The snapshot with each listed job's SiteFactor as sprio shows it (no JSON carries it)."""
    if not factors:
        return snapshot
    jobs = tuple(
        replace(j, site_factor=factors[j.job_id].site_factor) if j.job_id in factors else j
        for j in snapshot.jobs
    )
    return replace(snapshot, jobs=jobs)


class Daemon:
    def __init__(
        self,
        config: DaemonConfig,
        backend: SlurmBackend,
        *,
        policy: Policy | None = None,
        metrics: DaemonMetrics | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.backend = backend
        self.policy = policy if policy is not None else load_policy(config)
        self.metrics = metrics or DaemonMetrics()
        self.audit = AuditLog(config.audit_log or None)
        self.clock = clock
        self._sleep = sleep
        # A dry run writes no state and may run beside the real daemon: no lock.
        self.lock = None if config.dry_run else StateLock(config.state_file).acquire()
        self.record = Record.load(config.state_file)
        self.failures = 0
        self.notes = True  # False once Slurm refused an AdminComment (Operator, not Administrator)
        self.notifier = Notifier()
        self._adopted = False
        self.history = FinishedTracker()  # jobs that ended between cycles, for history-based policies
        self._history_read = False  # ended jobs read back from accounting, once per start and new policy
        self._stop = False
        self._reload = False
        # Said once per daemon run: refused starts (job, GPU count) and unusable elastic tags (job, tag).
        self._said: set[tuple[str, str]] = set()
        self.metrics.notes_enabled.set(1)
        # (job id, start time) -> why Slurm refused to requeue that run: not asked again.
        self._requeue_refused: dict[tuple[str, float | None], str] = {}
        self._preempt_said: set[tuple[str, str]] = set()  # (job id, why) of refused preemptions
        # Slurm calls the next cycle may make: halved while slurmctld answers slowly.
        self.call_cap = config.max_calls_per_cycle
        self.metrics.call_cap.set(self.call_cap)

    def close(self) -> None:
        """Release the state file's lock and the audit log (end of run or revert)."""
        self.audit.close()
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def save(self) -> None:
        self.record.save(self.config.state_file)

    @property
    def dry_run(self) -> bool:
        return self.config.dry_run

    # -- one cycle ---------------------------------------------------------

    def decide(
        self, snapshot: Snapshot, factors: Mapping[str, PriorityFactors] | None = None
    ) -> tuple[CyclePlan, Decisions, float]:
        """Policy and planning for one snapshot, without sending anything:
        scope -> view -> decide -> plan."""
        scoped = self.scope(snapshot)
        view = self.view(snapshot, scoped)
        t0 = time.perf_counter()
        decisions = unscale_decisions(self.policy.decide(view), self.config.time_scale)
        policy_seconds = time.perf_counter() - t0
        plan = plan_cycle(
            snapshot,
            decisions,
            scoped,
            self.record,
            self.config,
            self.clock(),
            write_notes=self.notes,
            factors=factors,
            limits=self._limits(scoped),
        )
        return plan, decisions, policy_seconds

    def scope(self, snapshot: Snapshot) -> dict[str, Any]:
        """The pending jobs the daemon may change; unusable elastic tags said once per job."""
        scoped = scoped_pending(snapshot, self.config.scope)
        self._said = {said for said in self._said if said[0] in scoped}  # jobs gone: forgotten
        for jid, tag in elastic_problems(scoped):
            self._say_once(
                jid, tag.text, "elastic tag ignored", "elastic_tag", tag=tag.text, problem=tag.problem
            )
        return scoped

    def view(self, snapshot: Snapshot, scoped: Mapping[str, Any]) -> ClusterView:
        """What the policy sees: the scoped queue, recently finished jobs, in trace time."""
        if not self._history_read:
            self._history_read = True
            self._read_history(snapshot)
        # Requeued jobs shown as preempted first, so a job that ends after a requeue is
        # reported with every run it had (history.earlier_runs), as in the simulator.
        view = as_preempted(build_view(snapshot, scoped, self.config.scope), self.record.preempted)
        return scale_view(self.history.with_finished(view, snapshot), self.config.time_scale)

    def _read_history(self, snapshot: Snapshot) -> None:
        """The last ``history_days`` of ended jobs, for the first view; said, audited and counted."""
        earlier = read_earlier(self.backend, self.config.history_days, snapshot, self.record.preempted)
        self.history.seed(earlier.jobs)
        self.metrics.history_jobs.set(len(earlier.jobs))
        if earlier.problem:
            level = logging.INFO if self.config.history_days <= 0 else logging.WARNING
            log(level, "starting with no history", reason=earlier.problem)
        else:
            log(logging.INFO, "history read", jobs=len(earlier.jobs), unreadable=earlier.unreadable)
        self.audit.write(
            "history", jobs=len(earlier.jobs), unreadable=earlier.unreadable, problem=earlier.problem
        )

    def _limits(self, scoped: Mapping[str, Any]) -> AccountLimits | None:
        """Accounting limits, read only in a cycle with an elastic job in scope (only a
        rewrite is checked against them); unreadable, every grow is refused."""
        if not any(j.gpu_range is not None for j in scoped.values()):
            return None
        try:
            return read_limits(self.backend, self.config)
        except SlurmError as exc:
            return AccountLimits(error=exc.format())

    def read(self) -> tuple[Snapshot, Mapping[str, PriorityFactors]]:
        """The queue, with SiteFactors from sprio, and the record reconciled with it."""
        snapshot = self.backend.snapshot()
        factors = keyed_like(read_factors(self.backend, self.config), snapshot.jobs)
        snapshot = with_site_factors(snapshot, factors)
        if not self.dry_run:
            self._reconcile(snapshot, factors)
        return snapshot, factors

    def _reconcile(self, snapshot: Snapshot, factors: Mapping[str, PriorityFactors]) -> None:
        jobs = {j.job_id: j for j in snapshot.jobs}
        lines = settle_unsure(self.record, jobs, factors)
        before = dict(self.record.preempted)
        keep_s = self.config.history_days * 86_400.0
        lines += settle_preemptions(self.record.preempted, jobs, now=snapshot.time, keep_s=keep_s)
        changed = bool(lines) or self.record.preempted != before
        if not self._adopted:  # once per start: a note left by a run whose record is lost
            lines += adopt_notes(self.record, scoped_pending(snapshot, self.config.scope), self.clock())
            self._adopted = True
        for line in lines:
            log(logging.INFO, "reconcile", detail=line)
            self.audit.write("reconcile", detail=line)
        if changed or lines:
            self.save()

    def cycle(self) -> CycleOutcome:
        """One snapshot, one decision, the changes; raises :class:`SlurmError` if Slurm cannot be read.

        read -> scope -> view -> decide -> plan (:meth:`decide`) -> batch -> send -> confirm
        (:meth:`send`, :func:`apply_changes`)."""
        t0 = time.perf_counter()
        number = self.record.cycle + 1
        snapshot, factors = self.read()
        plan, decisions, policy_seconds = self.decide(snapshot, factors)
        if decisions.preempt:
            self.preempt(number, snapshot, decisions.preempt)
        result = self.send(number, plan) if not self.dry_run else self._dry(number, plan)
        seconds = time.perf_counter() - t0
        outcome = CycleOutcome(number, seconds, policy_seconds, plan, result, decisions.wake_at)
        self._report_cycle(outcome, decisions)
        return outcome

    def preempt(self, number: int, snapshot: Snapshot, asked: tuple[str, ...]) -> None:
        """The policy's preemptions: requeued (``preempt = "requeue"``, the first
        ``max_preemptions_per_cycle``), or each said and audited; never dropped without a word.

        Sent before the cycle's pins, so the GPUs they free are there for the jobs pinned to them."""
        if self.config.preempt == "off":  # only a policy that does not say it preempts gets here
            log(logging.WARNING, "preemption not enacted", cycle=number, jobs=",".join(asked))
            self.audit.write("dropped", cycle=number, preempt=list(asked))
            return
        jobs = {j.job_id: j for j in snapshot.jobs}
        self._requeue_refused = {  # a refusal holds for the run it was about
            run: why
            for run, why in self._requeue_refused.items()
            if run[0] in jobs and jobs[run[0]].start_time == run[1]
        }
        cap = self.config.max_preemptions_per_cycle
        plan = plan_preemptions(asked, jobs, self.config.scope, cap, self._requeue_refused)
        self._preempt_said = {said for said in self._preempt_said if said[0] in jobs}
        self._not_enacted(number, plan, cap)
        if self.dry_run:
            for job in plan.send:
                self.metrics.preemptions.labels(outcome="dry_run").inc()
                log(logging.INFO, "would requeue", cycle=number, job=job.job_id)
                self.audit.write("preempt", cycle=number, job=job.job_id, dry_run=True)
            return
        for done in requeue_jobs(self.backend, plan.send, self.record.preempted, self.clock(), self.save):
            self._requeued(number, done, jobs[done.job_id])

    def _not_enacted(self, number: int, plan: PreemptPlan, cap: int) -> None:
        """Refused preemptions said once per job and reason while Slurm lists the job; deferred ones each cycle."""
        for jid, why in plan.refused:
            self.metrics.preemptions.labels(outcome="refused").inc()
            if (jid, why) not in self._preempt_said:
                self._preempt_said.add((jid, why))
                log(logging.WARNING, "preemption refused", cycle=number, job=jid, reason=why)
                self.audit.write("preempt_refused", cycle=number, job=jid, reason=why)
        if plan.deferred:
            self.metrics.preemptions.labels(outcome="deferred").inc(len(plan.deferred))
            log(logging.INFO, "preemptions deferred", cycle=number, jobs=",".join(plan.deferred), cap=cap)
            self.audit.write("preempt_deferred", cycle=number, jobs=list(plan.deferred), cap=cap)

    def _requeued(self, number: int, done: Requeue, job: SlurmJob) -> None:
        """One requeue's outcome: counted, logged, audited; a refused run remembered."""
        if done.error is None:
            self.metrics.preemptions.labels(outcome="requeued").inc()
            entry = self.record.preempted[done.job_id]
            log(logging.INFO, "requeued", cycle=number, job=done.job_id, times=entry.count)
            self.audit.write("preempt", cycle=number, job=done.job_id, times=entry.count, dry_run=False)
            return
        outcome = "failed" if done.settled else "unanswered"
        self.metrics.preemptions.labels(outcome=outcome).inc()
        self.metrics.errors.labels(kind=error_kind(done.error)).inc()
        log(logging.WARNING, f"requeue {outcome}", cycle=number, job=done.job_id, error=done.error.format())
        self.audit.write("preempt_error", cycle=number, job=done.job_id, error=done.error.format())
        if done.settled:
            self._requeue_refused[(done.job_id, job.start_time)] = f"Slurm refused its requeue: {done.error}"

    def _dry(self, number: int, plan: CyclePlan) -> None:
        """A dry run: every change audited and counted, nothing sent, no state written."""
        for ch in plan.changes:
            self._audit_change(number, ch, dry_run=True)
            self.metrics.changes.labels(kind=ch.field, dry_run="true").inc()
        self.record.cycle = number  # in memory only
        return None

    def send(self, number: int, plan: CyclePlan) -> ApplyResult:
        """The plan's changes to Slurm in list calls, within this cycle's call and time caps;
        the record saved before each setting and once more at the end."""
        for jid in plan.forget:
            self.record.drop(jid)
        result = apply_changes(
            self.backend,
            plan.changes,
            self.record,
            self.clock(),
            persist=self.save,
            on_sent=lambda ch: self._sent(number, ch),
            on_failed=lambda ch, exc: self._failed(number, ch, exc),
            refused_block=self.config.placement_hold,
            notes=self.notes,
            batch=BATCH,
            limits=SendLimits(self.call_cap, self.config.max_send_seconds),
        )
        self._pace(number, result)
        if result.notes_refused:
            self._notes_refused(number)
        self.record.cycle = number
        self.save()
        return result

    def _sent(self, number: int, ch: Change) -> None:
        self.metrics.changes.labels(kind=ch.field, dry_run="false").inc()
        self._audit_change(number, ch, dry_run=False)

    def _failed(self, number: int, ch: Change, exc: SlurmError) -> None:
        self.metrics.errors.labels(kind=error_kind(exc)).inc()
        log(logging.WARNING, "update failed", cycle=number, job=ch.job_id, field=ch.field, error=exc.format())
        self.audit.write("error", cycle=number, job=ch.job_id, field=ch.field, error=exc.format())

    def _pace(self, cycle: int, result: ApplyResult) -> None:
        """Back off when slurmctld is slow: the next cycle's call cap halves when job updates
        took over ``slow_update_seconds`` each, and doubles back after a fast cycle."""
        cap, top = self.call_cap, self.config.max_calls_per_cycle
        if result.updates == 0:
            return
        per_update = result.seconds / result.updates
        if per_update > self.config.slow_update_seconds:
            self.call_cap = max(min(MIN_CALLS, top), cap // 2)
        else:
            self.call_cap = min(top, cap * 2)
        if self.call_cap < cap:
            log(
                logging.WARNING,
                "slurmctld slow: fewer calls per cycle",
                cycle=cycle,
                seconds_per_update=round(per_update, 4),
                call_cap=self.call_cap,
            )
            self.audit.write("backoff", cycle=cycle, seconds_per_update=per_update, call_cap=self.call_cap)
        self.metrics.call_cap.set(self.call_cap)

    def _say_once(self, job_id: str, key: str, message: str, kind: str, **fields: Any) -> None:
        """One warning and one audit line per job and ``key``, not one per cycle."""
        if (job_id, key) in self._said:
            return
        self._said.add((job_id, key))
        log(logging.WARNING, message, job=job_id, **fields)
        self.audit.write(kind, job=job_id, **fields)

    def _notes_refused(self, cycle: int) -> None:
        self.notes = False
        self.metrics.notes_enabled.set(0)
        log(
            logging.WARNING,
            "audit notes off",
            cycle=cycle,
            detail="Slurm refused AdminComment (it needs AdminLevel=Administrator; ordering and "
            "placement need only Operator); notes are skipped until restart",
        )
        self.audit.write("notes_off", cycle=cycle)

    def _audit_change(self, cycle: int, ch: Change, *, dry_run: bool) -> None:
        self.audit.write(
            "revert" if ch.restore and ch.reason.startswith("daemon stop") else "change",
            cycle=cycle,
            job=ch.job_id,
            field=ch.field,
            old=ch.old,
            new=ch.new,
            reason=ch.reason,
            restore=ch.restore,
            dry_run=dry_run,
        )
        if dry_run:
            log(
                logging.INFO,
                "would change",
                cycle=cycle,
                job=ch.job_id,
                field=ch.field,
                old=_show(ch.old),
                new=_show(ch.new),
                reason=ch.reason,
            )

    def _report_cycle(self, out: CycleOutcome, decisions: Decisions) -> None:
        m = self.metrics
        m.cycle_seconds.observe(out.seconds)
        m.policy_seconds.observe(out.policy_seconds)
        m.observe_jobs(out.plan.jobs_by_state)
        m.in_scope.set(out.plan.in_scope)
        unsent = out.result.unsent if out.result is not None else 0
        m.deferred.set(out.plan.deferred + unsent)
        m.tracked.set(len(self.record.jobs))
        m.pins.set(sum(1 for e in self.record.jobs.values() if e.pinned is not None))
        sent = len(out.result.sent) if out.result is not None else 0
        failed = len(out.result.failed) if out.result is not None else 0
        ok = out.error is None
        if ok:
            m.last_success.set(time.time())
        for r in out.plan.refused:  # a policy's start the daemon did not enact, said once
            self._say_once(
                r.job_id, f"gpus={r.gpus}", "start refused", "refused", gpus=r.gpus, reason=r.reason
            )
        for note in out.plan.notes:  # e.g. why a start was not pinned
            log(logging.INFO, "note", cycle=out.cycle, detail=note)
            self.audit.write("note", cycle=out.cycle, detail=note)
        fields: dict[str, Any] = dict(
            cycle=out.cycle,
            seconds=round(out.seconds, 4),
            policy_seconds=round(out.policy_seconds, 4),
            policy=self.config.policy_label,
            in_scope=out.plan.in_scope,
            ranked=out.plan.ranked,
            starts=out.plan.starts,
            planned=len(out.plan.changes),
            sent=sent,
            failed=failed,
            deferred=out.plan.deferred + unsent,
            calls=out.result.calls if out.result is not None else 0,
            updates=out.result.updates if out.result is not None else 0,
            send_seconds=round(out.result.seconds, 4) if out.result is not None else 0.0,
            call_cap=self.call_cap,
            tracked=len(self.record.jobs),
            dry_run=self.dry_run,
            slurm_calls=STATS.calls,
        )
        if not ok:
            fields["error"] = out.error.format()  # type: ignore[union-attr]
        self.audit.write(
            "cycle",
            **fields,
            order=list(decisions.order[:20]),
            start_jobs=[s.job_id for s in decisions.starts[:20]],
            ok=ok,
        )
        log(logging.INFO if ok else logging.WARNING, "cycle", **fields)

    # -- the loop ----------------------------------------------------------

    def request_stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        """Signal handler: only sets the flag the loop polls."""
        self._stop = True

    def request_reload(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        """SIGHUP handler: only sets the flag the loop polls."""
        self._reload = True

    @property
    def stopping(self) -> bool:
        return self._stop

    def backoff(self) -> float:
        c = self.config
        return min(c.backoff_max, c.backoff_initial * 2 ** max(0, self.failures - 1))

    def next_delay(self, ok: bool, wake_at: float | None) -> float:
        """Seconds to the next cycle: the interval, sooner when the policy asked to wake earlier."""
        if not ok:
            return self.backoff()
        delay = self.config.interval
        if wake_at is not None:
            delay = min(delay, max(MIN_WAKE, wake_at - self.clock()))
        return delay

    def _wait(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self._stop and not self._reload:
            self.notifier.watchdog()
            left = end - time.monotonic()
            if left <= 0:
                return
            self._sleep(min(SLEEP_SLICE, left))

    def reload(self) -> bool:
        """Read the config file again; keep the old config (logged) when the new one is wrong."""
        self._reload = False
        self.notifier.send("RELOADING=1")
        try:
            new = load_config(self.config.source)
            if new.state_file != self.config.state_file:
                raise SlurmrlError(
                    f"state_file cannot change on reload ({self.config.state_file} -> {new.state_file}); "
                    "restart the daemon to move it"
                )
            if self.config.dry_run and not new.dry_run:
                new = replace(new, dry_run=True)  # --dry-run on the command line wins
            policy = load_policy(new) if new.policy_label != self.config.policy_label else self.policy
        except SlurmrlError as exc:
            log(logging.ERROR, "reload failed; keeping the old config", error=exc.format())
            self.audit.write("reload", ok=False, error=exc.format())
            self.notifier.send("READY=1")
            return False
        self.audit.close()  # reopened on the next write: logrotate's new file
        if policy is not self.policy:
            self._history_read = False  # the new policy learns the history afresh
        self.config, self.policy = new, policy
        self.audit = AuditLog(new.audit_log or None)
        LOGGER.setLevel(new.log_level.upper())
        self._set_info()
        log(logging.INFO, "reloaded", config=new.source, policy=new.policy_label, mode=new.mode)
        self.audit.write("reload", ok=True, policy=new.policy_label, mode=new.mode, dry_run=new.dry_run)
        self.notifier.send("READY=1")
        return True

    def _set_info(self) -> None:
        try:
            version = self.backend.version()
        except SlurmError:
            version = "unknown"
        self.metrics.set_info(self.config.policy_label, self.config.mode, version, self.dry_run)

    def run_once(self) -> bool:
        """One cycle with errors logged and counted; True when it succeeded."""
        return self._run_cycle()[0]

    def _run_cycle(self) -> tuple[bool, float | None]:
        try:
            outcome = self.cycle()
        except SlurmError as exc:
            self.failures += 1
            self.metrics.errors.labels(kind=error_kind(exc)).inc()
            self.audit.write(
                "cycle", cycle=self.record.cycle + 1, ok=False, error=exc.format(), dry_run=self.dry_run
            )
            log(logging.WARNING, "cycle failed", error=exc.format(), retry_in=self.backoff())
            return False, None
        except Exception as exc:  # a policy bug must not take the daemon (and its revert) down
            self.failures += 1
            self.metrics.errors.labels(kind="internal").inc()
            self.audit.write(
                "cycle",
                cycle=self.record.cycle + 1,
                ok=False,
                error=f"{type(exc).__name__}: {exc}",
                dry_run=self.dry_run,
            )
            logging.getLogger("slurmrl.daemon").error(
                "cycle crashed", exc_info=True, extra={"kv": {"retry_in": self.backoff()}}
            )
            return False, None
        if outcome.error is not None:
            self.failures += 1
            log(logging.WARNING, "cycle cut short", error=outcome.error.format(), retry_in=self.backoff())
            return False, None
        self.failures = 0
        return True, outcome.wake_at

    def run(self, *, once: bool = False, install_signals: bool = True) -> int:
        """Run until stopped; returns the process exit status."""
        previous: dict[int, Any] = {}
        if install_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self.request_stop)
            previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, self.request_reload)
        try:
            self._set_info()
            if self.config.metrics_port and not once:
                self.metrics.serve(self.config.metrics_port, self.config.metrics_address)
                log(
                    logging.INFO,
                    "metrics",
                    address=self.config.metrics_address,
                    port=self.config.metrics_port,
                )
            log(
                logging.INFO,
                "start",
                policy=self.config.policy_label,
                mode=self.config.mode,
                interval=self.config.interval,
                dry_run=self.dry_run,
                tracked=len(self.record.jobs),
                config=self.config.source,
            )
            ready = False
            while not self._stop:
                if self._reload:
                    self.reload()
                ok, wake_at = self._run_cycle()
                if once:
                    return 0 if ok else 1
                if not ready:
                    self.notifier.send("READY=1")
                    ready = True
                self.notifier.watchdog()
                self._wait(self.next_delay(ok, wake_at))
            self.notifier.send("STOPPING=1")
            log(logging.INFO, "stopping", tracked=len(self.record.jobs))
            if self.dry_run:
                log(logging.INFO, "dry run: nothing to give back", tracked=len(self.record.jobs))
                return 0
            out = self.revert("daemon stopped")
            return 0 if out.remaining == 0 else 1
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.close()

    # -- giving everything back --------------------------------------------

    def revert(self, reason: str = "daemon stopped") -> RevertOutcome:
        """Give back every value in the record; retries while the controller is unreachable."""
        total = len(self.record.jobs)
        gone = reverted = 0
        attempt = 0
        self._adopted = False  # a revert also gives back notes a lost record forgot
        while attempt < REVERT_ATTEMPTS and (self.record.jobs or attempt == 0):
            attempt += 1
            jobs = self._revert_read(attempt)
            if jobs is None and attempt < REVERT_ATTEMPTS:
                self._pause(self._revert_backoff(attempt))
                continue
            total = max(total, len(self.record.jobs))
            changes, left = self._restore_changes(jobs, reason)
            result, given_back = self._revert_apply(changes)
            gone += left + len(result.vanished)
            reverted += given_back
            if result.stopped_by is None and not result.failed:
                break
            if result.stopped_by is not None or result.later:  # slurmctld asked to try again later
                self._pause(self._revert_backoff(attempt))
        return self._revert_done(total, reverted, gone)

    def _revert_backoff(self, attempt: int) -> float:
        return min(self.config.backoff_max, self.config.backoff_initial * 2 ** (attempt - 1))

    def _revert_read(self, attempt: int) -> dict[str, Any] | None:
        """The queue by job id (reconciled: unsure fields settled, lost notes adopted); None if unreadable."""
        try:
            snapshot, _ = self.read()
        except SlurmError as exc:
            log(logging.WARNING, "revert: cannot read the queue", error=exc.format(), attempt=attempt)
            return None
        return {j.job_id: j for j in snapshot.jobs}

    def _restore_changes(self, jobs: dict[str, Any] | None, reason: str) -> tuple[list[Change], int]:
        """The changes that give back every recorded value, and how many recorded jobs left the queue.

        ``jobs`` None (the queue could not be read, last attempt): every recorded
        value is sent back blind, as the record holds it.
        """
        changes: list[Change] = []
        gone = 0
        for jid, entry in list(self.record.jobs.items()):
            job = jobs.get(jid) if jobs is not None else None
            if jobs is not None and (job is None or not job.is_pending):
                self.record.drop(jid)
                gone += 1
                continue
            changes.extend(restore_changes(entry, job, f"daemon stop: {reason}"))
        return changes, gone

    def _revert_apply(self, changes: list[Change]) -> tuple[ApplyResult, int]:
        """Send ``changes``; the result, and how many jobs have nothing left to give back (dropped)."""
        before = set(self.record.jobs)
        result = apply_changes(
            self.backend,
            changes,
            self.record,
            self.clock(),
            persist=self.save,
            on_sent=self._revert_sent,
            on_failed=self._revert_failed,
            batch=BATCH,
        )
        reverted = 0
        for jid in before - set(result.vanished):
            entry = self.record.get(jid)
            if entry is None or not entry.changed_anything:
                self.record.drop(jid)
                reverted += 1
        self.save()
        return result, reverted

    def _revert_sent(self, ch: Change) -> None:
        self.metrics.reverts.labels(kind=ch.field).inc()
        self.audit.write(
            "revert", job=ch.job_id, field=ch.field, old=ch.old, new=ch.new, reason=ch.reason, dry_run=False
        )

    def _revert_failed(self, ch: Change, exc: SlurmError) -> None:
        self.metrics.errors.labels(kind=error_kind(exc)).inc()
        log(logging.WARNING, "revert failed", job=ch.job_id, field=ch.field, error=exc.format())

    def _revert_done(self, total: int, reverted: int, gone: int) -> RevertOutcome:
        """Save the record (empty when nothing is left to give back) and log the outcome."""
        remaining = len([e for e in self.record.jobs.values() if e.changed_anything])
        if remaining == 0:
            self.record.jobs.clear()
        self.record.save(self.config.state_file)
        level = logging.INFO if remaining == 0 else logging.ERROR
        log(
            level,
            "revert done",
            jobs=total,
            reverted=reverted,
            gone=gone,
            remaining=remaining,
            state_file=self.config.state_file,
        )
        return RevertOutcome(reverted, gone, remaining)

    def _pause(self, seconds: float) -> None:
        """A pause during revert: short, and not cut by the stop flag (stopping is why it runs)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self._sleep(min(SLEEP_SLICE, left))


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, tuple):
        return ",".join(value) or "(none)"
    return str(value)
