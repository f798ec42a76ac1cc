"""Drive one replay: submit on time, watch every job to its end, clean up whatever happens.

Submissions are recorded in a ledger (``submitted.jsonl`` in the output
folder, one line per job, written before the next submission) so that an
interrupted replay knows what to cancel, and every replay first cancels live
jobs named as a replay's (:data:`~slurmrl.replay.plan.NAME_PREFIX`), so a
replay killed outright leaves nothing behind the next one. SIGINT and
SIGTERM only set a flag; the loop then cancels, stops the daemon (which
reverts its changes) and reports.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from slurmrl.errors import SlurmrlError
from slurmrl.replay.daemon_proc import DaemonProcess
from slurmrl.replay.plan import ReplayJob, ReplayPlan
from slurmrl.replay.records import Observed
from slurmrl.replay.slurm_jobs import SlurmJobs
from slurmrl.slurm.run import SlurmError

LEDGER = "submitted.jsonl"
SETTLE_TIMEOUT = 60.0  # seconds for cancelled leftovers to leave the controller
MISSING_POLLS = 5  # polls a submitted job may be absent from scontrol before accounting is asked


@dataclass
class ReplayState:
    """What the loop knows: Slurm ids by trace id and the last sighting of each job."""

    origin: float = 0.0  # Unix time of the replay's start (trace time 0)
    ids: dict[str, str] = field(default_factory=dict)  # trace id -> Slurm id
    seen: dict[str, Observed] = field(default_factory=dict)  # Slurm id -> last sighting
    late: float = 0.0  # the most any submission was behind its time (wall seconds)

    def done(self, plan: ReplayPlan) -> int:
        return sum(1 for j in plan.jobs if (s := self.seen.get(self.ids.get(j.trace_id, ""))) and s.ended)


class Interrupted(SlurmrlError):
    """The replay was stopped by a signal; its jobs were cancelled."""


class _Flags:
    def __init__(self) -> None:
        self.stop: int | None = None

    def handler(self, signum: int, frame: FrameType | None) -> None:
        self.stop = signum


def clear_leftovers(jobs: SlurmJobs, say: Callable[[str], None]) -> None:
    """Cancel live jobs of earlier replays and wait until the controller has let them go."""
    left = jobs.leftovers()
    if not left:
        return
    say(f"cancelling {len(left)} job(s) left by an earlier replay")
    jobs.cancel(left)
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while jobs.leftovers():
        if time.monotonic() > deadline:
            raise SlurmrlError(
                f"jobs of an earlier replay are still live after {SETTLE_TIMEOUT:g} s",
                hint="check `squeue` and cancel them by hand",
            )
        time.sleep(0.5)


class Replay:
    """One replay of ``plan`` against the controller behind ``jobs``."""

    def __init__(
        self,
        plan: ReplayPlan,
        jobs: SlurmJobs,
        out: Path,
        *,
        daemon: DaemonProcess | None = None,
        partition: str = "",
        poll: float = 0.5,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.plan, self.jobs, self.out = plan, jobs, out
        self.daemon, self.partition, self.poll = daemon, partition, poll
        self.progress = progress
        self.state = ReplayState()
        self.flags = _Flags()
        self._ledger = out / LEDGER
        self._missing: dict[str, int] = {}  # Slurm id -> polls it was absent from scontrol

    def run(self) -> ReplayState:
        previous = {s: signal.signal(s, self.flags.handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            try:
                if self.daemon is not None:
                    self.daemon.start()
                self._loop()
            except BaseException:
                self._abort()
                raise
            if self.flags.stop is not None:
                self._abort()
                raise Interrupted(
                    f"replay stopped by signal {self.flags.stop}; cancelled the "
                    f"{len(self.state.ids)} job(s) it had submitted",
                    hint="rerun to start over",
                )
            self._stop_daemon()
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
        return self.state

    # -- the loop -------------------------------------------------------------------

    def _loop(self) -> None:
        queue = list(self.plan.jobs)
        nxt = 0
        self.state.origin = time.time()
        t0 = time.monotonic()
        last_poll = -1e9
        done = 0
        while self.flags.stop is None:
            now = time.monotonic() - t0
            while nxt < len(queue) and queue[nxt].submit_at <= now and self.flags.stop is None:
                self._submit(queue[nxt], now)
                nxt += 1
                now = time.monotonic() - t0
            if now - last_poll >= self.poll:
                self._observe()
                last_poll = now
                finished = self.state.done(self.plan)
                if self.progress is not None and finished > done:
                    self.progress(finished - done)
                done = finished
                if nxt == len(queue) and done == len(queue):
                    return
                self._check_daemon()
            wake = min(last_poll + self.poll, queue[nxt].submit_at if nxt < len(queue) else 1e18)
            time.sleep(max(0.0, min(self.poll, wake - (time.monotonic() - t0))))

    def _submit(self, job: ReplayJob, now: float) -> None:
        self.state.late = max(self.state.late, now - job.submit_at)
        self._write_ledger({"trace_id": job.trace_id, "name": job.name, "intent": "submit"})
        slurm_id = self.jobs.submit(job, self.partition)
        self.state.ids[job.trace_id] = slurm_id
        self._write_ledger({"trace_id": job.trace_id, "slurm_id": slurm_id})

    def _write_ledger(self, entry: dict[str, str]) -> None:
        with open(self._ledger, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
            fh.flush()

    def _observe(self) -> None:
        mine = set(self.state.ids.values())
        listed = set()
        for job in self.jobs.jobs():
            if job.job_id in mine:
                listed.add(job.job_id)
                self.state.seen[job.job_id] = Observed.of(job, self.state.seen.get(job.job_id))
        gone = [j for j in mine - listed if not ((s := self.state.seen.get(j)) and s.ended)]
        if gone:  # let go before a poll saw its end (a stalled poller, a short MinJobAge)
            self._missing.update({j: self._missing.get(j, 0) + 1 for j in gone})
            ask = sorted(j for j in gone if self._missing[j] >= MISSING_POLLS)
            for job in self.jobs.accounted(ask) if ask else ():
                self.state.seen[job.job_id] = Observed.of(job, self.state.seen.get(job.job_id))

    def _check_daemon(self) -> None:
        if self.daemon is not None and not self.daemon.alive:
            raise SlurmrlError("the daemon exited during the replay", file=str(self.daemon.log_path))

    # -- the end ----------------------------------------------------------------------

    def _stop_daemon(self) -> None:
        if self.daemon is None:
            return
        status = self.daemon.stop()
        left = self.daemon.leftover_changes()
        if status != 0 or left:
            raise SlurmrlError(
                f"the daemon exited with status {status} and {left} job(s) still in its record",
                file=str(self.daemon.log_path),
                hint=f"run `slurmrl daemon revert --config {self.daemon.config_path}`",
            )

    def _abort(self) -> None:
        """Cancel every job this replay submitted (and any it may have), stop the daemon."""
        try:
            self.jobs.cancel([*self.state.ids.values(), *self.jobs.leftovers()])
        except SlurmError:
            pass  # the next replay cancels them by name
        if self.daemon is not None:
            try:
                self.daemon.stop()
            except SlurmrlError:
                pass
