"""The daemon: snapshot, decide, plan, apply, sleep; and undo it all on stop.

Invariants that keep the cluster no worse off than stock Slurm:

* every value it sets is in the record (on disk) before the next cycle, so it
  can be given back after a stop, a crash or a controller restart;
* a controller failure never loses the record: the cycle backs off
  exponentially and retries;
* SIGTERM/SIGINT only set a flag; the loop notices it within a fraction of a
  second, gives back every value it set and exits.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from slurmrl.daemon.apply import ApplyResult, apply_changes, error_kind
from slurmrl.daemon.audit import AuditLog
from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.logs import log
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.plan import Change, CyclePlan, plan_cycle, restore_changes
from slurmrl.daemon.record import Record
from slurmrl.daemon.scope import build_view, scoped_pending
from slurmrl.errors import PolicyError, SlurmError
from slurmrl.policy.base import Policy
from slurmrl.policy.view import Decisions
from slurmrl.slurm.backend import SlurmBackend
from slurmrl.slurm.run import STATS
from slurmrl.slurm.snapshot import Snapshot

REVERT_ATTEMPTS = 5  # rounds of retries when giving values back (our choice)
SLEEP_SLICE = 0.2  # seconds between checks of the stop flag


@dataclass(frozen=True)
class CycleOutcome:
    cycle: int
    seconds: float
    policy_seconds: float
    plan: CyclePlan
    result: ApplyResult | None  # None in a dry run

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
    """The configured policy; refuses policies that read true durations."""
    from slurmrl.policy.registry import make_policy, policy_entry

    entry = policy_entry(config.policy)
    if not entry.deployable:
        raise PolicyError(
            f"policy '{config.policy}' reads true job durations (an offline bound) and cannot be deployed",
            hint="choose a deployable policy; 'slurmrl policies' lists them",
        )
    policy = make_policy(config.policy, config.placement)
    if not getattr(policy, "deployable", True):
        raise PolicyError(f"policy '{config.policy}' reports itself as not deployable")
    return policy


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
        self.record = Record.load(config.state_file)
        self.failures = 0
        self._stop = False

    @property
    def dry_run(self) -> bool:
        return self.config.dry_run

    # -- one cycle ---------------------------------------------------------

    def decide(self, snapshot: Snapshot) -> tuple[CyclePlan, Decisions, float]:
        """Policy and planning for one snapshot, without sending anything."""
        scoped = scoped_pending(snapshot, self.config.scope)
        view = build_view(snapshot, scoped, self.config.scope)
        t0 = time.perf_counter()
        decisions = self.policy.decide(view)
        policy_seconds = time.perf_counter() - t0
        plan = plan_cycle(snapshot, decisions, scoped, self.record, self.config, self.clock())
        return plan, decisions, policy_seconds

    def cycle(self) -> CycleOutcome:
        """One snapshot, one decision, the changes; raises :class:`SlurmError` if Slurm cannot be read."""
        t0 = time.perf_counter()
        number = self.record.cycle + 1
        snapshot = self.backend.snapshot()
        plan, decisions, policy_seconds = self.decide(snapshot)
        now = self.clock()
        dry = self.dry_run
        result: ApplyResult | None = None
        if dry:
            for ch in plan.changes:
                self._audit_change(number, ch, dry_run=True)
                self.metrics.changes.labels(kind=ch.field, dry_run="true").inc()
        else:
            for jid in plan.forget:
                self.record.drop(jid)

            def failed(ch: Change, exc: SlurmError) -> None:
                self.metrics.errors.labels(kind=error_kind(exc)).inc()
                log(
                    logging.WARNING,
                    "update failed",
                    cycle=number,
                    job=ch.job_id,
                    field=ch.field,
                    error=exc.format(),
                )
                self.audit.write("error", cycle=number, job=ch.job_id, field=ch.field, error=exc.format())

            def sent(ch: Change) -> None:
                self.metrics.changes.labels(kind=ch.field, dry_run="false").inc()
                self._audit_change(number, ch, dry_run=False)

            result = apply_changes(
                self.backend,
                plan.changes,
                self.record,
                now,
                on_sent=sent,
                on_failed=failed,
                refused_block=self.config.placement_hold,
            )
            self.record.cycle = number
            self.record.save(self.config.state_file)
        seconds = time.perf_counter() - t0
        outcome = CycleOutcome(number, seconds, policy_seconds, plan, result)
        if dry:
            self.record.cycle = number  # in memory only: a dry run writes no state
        self._report_cycle(outcome, decisions)
        return outcome

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
        m.deferred.set(out.plan.deferred)
        m.tracked.set(len(self.record.jobs))
        sent = len(out.result.sent) if out.result is not None else 0
        failed = len(out.result.failed) if out.result is not None else 0
        ok = out.error is None
        if ok:
            m.last_success.set(time.time())
        for note in out.plan.notes:
            log(logging.INFO, "note", cycle=out.cycle, detail=note)
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
            deferred=out.plan.deferred,
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

    @property
    def stopping(self) -> bool:
        return self._stop

    def backoff(self) -> float:
        c = self.config
        return min(c.backoff_max, c.backoff_initial * 2 ** max(0, self.failures - 1))

    def _wait(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self._stop:
            left = end - time.monotonic()
            if left <= 0:
                return
            self._sleep(min(SLEEP_SLICE, left))

    def run_once(self) -> bool:
        """One cycle with errors logged and counted; True when it succeeded."""
        try:
            outcome = self.cycle()
        except SlurmError as exc:
            self.failures += 1
            self.metrics.errors.labels(kind=error_kind(exc)).inc()
            self.audit.write(
                "cycle", cycle=self.record.cycle + 1, ok=False, error=exc.format(), dry_run=self.dry_run
            )
            log(logging.WARNING, "cycle failed", error=exc.format(), retry_in=self.backoff())
            return False
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
            return False
        if outcome.error is not None:
            self.failures += 1
            log(logging.WARNING, "cycle cut short", error=outcome.error.format(), retry_in=self.backoff())
            return False
        self.failures = 0
        return True

    def run(self, *, once: bool = False, install_signals: bool = True) -> int:
        """Run until stopped; returns the process exit status."""
        previous: dict[int, Any] = {}
        if install_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self.request_stop)
        try:
            if self.config.metrics_port and not once:
                self.metrics.serve(self.config.metrics_port)
                log(logging.INFO, "metrics", port=self.config.metrics_port)
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
            while not self._stop:
                ok = self.run_once()
                if once:
                    return 0 if ok else 1
                self._wait(self.config.interval if ok else self.backoff())
            log(logging.INFO, "stopping", tracked=len(self.record.jobs))
            if self.dry_run:
                log(logging.INFO, "dry run: nothing to give back", tracked=len(self.record.jobs))
                return 0
            out = self.revert("daemon stopped")
            return 0 if out.remaining == 0 else 1
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.audit.close()

    # -- giving everything back --------------------------------------------

    def revert(self, reason: str = "daemon stopped") -> RevertOutcome:
        """Give back every value in the record; retries while the controller is unreachable."""
        total = len(self.record.jobs)
        gone = reverted = 0
        attempt = 0
        while self.record.jobs and attempt < REVERT_ATTEMPTS:
            attempt += 1
            jobs: dict[str, Any] | None
            try:
                snapshot = self.backend.snapshot()
                jobs = {j.job_id: j for j in snapshot.jobs}
            except SlurmError as exc:
                log(logging.WARNING, "revert: cannot read the queue", error=exc.format(), attempt=attempt)
                jobs = None
                if attempt < REVERT_ATTEMPTS:
                    self._pause(
                        min(self.config.backoff_max, self.config.backoff_initial * 2 ** (attempt - 1))
                    )
                    continue
            changes: list[Change] = []
            for jid, entry in list(self.record.jobs.items()):
                job = jobs.get(jid) if jobs is not None else None
                if jobs is not None and (job is None or not job.is_pending):
                    self.record.drop(jid)
                    gone += 1
                    continue
                changes.extend(restore_changes(entry, job, f"daemon stop: {reason}"))
            now = self.clock()

            def sent(ch: Change) -> None:
                self.metrics.reverts.labels(kind=ch.field).inc()
                self.audit.write(
                    "revert",
                    job=ch.job_id,
                    field=ch.field,
                    old=ch.old,
                    new=ch.new,
                    reason=ch.reason,
                    dry_run=False,
                )

            def failed(ch: Change, exc: SlurmError) -> None:
                self.metrics.errors.labels(kind=error_kind(exc)).inc()
                log(logging.WARNING, "revert failed", job=ch.job_id, field=ch.field, error=exc.format())

            before = set(self.record.jobs)
            result = apply_changes(self.backend, changes, self.record, now, on_sent=sent, on_failed=failed)
            gone += len(result.vanished)
            for jid in before - set(result.vanished):
                entry = self.record.get(jid)
                if entry is None or not entry.changed_anything:
                    self.record.drop(jid)
                    reverted += 1
            self.record.save(self.config.state_file)
            if result.stopped_by is None and not result.failed:
                break
            if result.stopped_by is not None:
                self._pause(min(self.config.backoff_max, self.config.backoff_initial * 2 ** (attempt - 1)))
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
