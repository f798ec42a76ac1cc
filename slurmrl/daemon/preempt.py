"""Preemption by requeue: a policy's ``Decisions.preempt`` enacted as ``scontrol requeue``.

Off unless the config says ``preempt = "requeue"``: without it the daemon
refuses preemptive policies at load. A requeued batch job goes back to the
queue and its script runs again from the top, so a DL job that checkpoints
resumes from its last checkpoint: what the simulator models for a
preemption (progress kept, a restart cost charged). Slurm, for its part,
sets the requeued job's submit time to the requeue's, holds it back with a
begin time about two minutes on, and keeps no sum of its earlier runs (all
seen on Slurm 22.05: ``scontrol show job`` after ``scontrol requeue``).
The daemon therefore keeps, per job it stopped, a
:class:`~slurmrl.daemon.record.Preempted` entry in its record: the first submit time, the GPU-seconds of the runs it
stopped and how many. The policy sees the job as the simulator shows a
preempted one (:func:`as_preempted`), so a least-attained-service or
shortest-remaining rule ranks it by what it has really run.

A requeue cannot be given back. Its intent is on disk before the command
is sent (``Preempted.stopping_now``); when the answer is lost (a crash,
a timeout) the next read settles it from what Slurm shows
(:func:`settle_preemptions`): a new restart count or another start time
means it happened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from slurmrl.daemon.apply import STOPPING
from slurmrl.daemon.config import ScopeConfig
from slurmrl.daemon.record import Preempted
from slurmrl.daemon.scope import in_scope
from slurmrl.errors import SlurmError
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.slurm.accounting import ENDED_STATES
from slurmrl.slurm.run import JobNotFound
from slurmrl.slurm.snapshot import SlurmJob


@dataclass(frozen=True)
class PreemptPlan:
    """What to requeue this cycle, and every other asked-for preemption with its reason."""

    send: tuple[SlurmJob, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()  # (job id, why): not enacted, said once per run
    deferred: tuple[str, ...] = ()  # over the cycle's cap: asked again next cycle if still wanted


def plan_preemptions(
    asked: Iterable[str],
    jobs: Mapping[str, SlurmJob],
    scope: ScopeConfig,
    cap: int,
    refused_runs: Mapping[tuple[str, float | None], str],
) -> PreemptPlan:
    """The policy's preemptions that the daemon may enact, the first ``cap`` of them.

    ``refused_runs``: (job id, start time) -> why Slurm refused to requeue that very
    run; it is not asked again until the job runs anew."""
    send: list[SlurmJob] = []
    refused: list[tuple[str, str]] = []
    deferred: list[str] = []
    for jid in dict.fromkeys(asked):
        job = jobs.get(jid)
        if job is None or not job.is_running:
            refused.append((jid, "not running"))
        elif job.state == "COMPLETING":  # ending already (a requeue shows so for a moment)
            refused.append((jid, "completing"))
        elif not in_scope(job, scope):
            refused.append((jid, "outside the daemon's scope (partition, QOS, account or opt-out)"))
        elif (jid, job.start_time) in refused_runs:
            refused.append((jid, refused_runs[(jid, job.start_time)]))
        elif len(send) >= cap:
            deferred.append(jid)
        else:
            send.append(job)
    return PreemptPlan(tuple(send), tuple(refused), tuple(deferred))


class Requeuer(Protocol):
    def requeue(self, job_id: str) -> None: ...


@dataclass(frozen=True)
class Requeue:
    """One requeue sent: ``error`` None when Slurm took it; ``settled`` False when no answer came."""

    job_id: str
    error: SlurmError | None = None
    settled: bool = True


def requeue_jobs(
    backend: Requeuer,
    jobs: Sequence[SlurmJob],
    ledger: MutableMapping[str, Preempted],
    now: float,
    persist: Callable[[], None],
) -> list[Requeue]:
    """Requeue ``jobs`` one by one, each intent saved (``persist``) before its command.

    A refused requeue leaves the ledger as it was; an unanswered one stays recorded
    as in flight and ends the cycle's requeues (:func:`settle_preemptions` decides it)."""
    out: list[Requeue] = []
    for job in jobs:
        jid = job.job_id
        before = ledger.get(jid)
        ledger[jid] = Preempted.stopping_now(job, before, now)
        persist()
        try:
            backend.requeue(jid)
        except STOPPING as exc:  # no answer to trust: the intent stays, the next read settles it
            out.append(Requeue(jid, exc, settled=False))
            break
        except SlurmError as exc:
            if before is None or isinstance(exc, JobNotFound):
                ledger.pop(jid, None)
            else:
                ledger[jid] = before
            out.append(Requeue(jid, exc))
            continue
        ledger[jid] = ledger[jid].done()
        out.append(Requeue(jid))
    if out:
        persist()
    return out


def settle_preemptions(
    ledger: MutableMapping[str, Preempted], jobs: Mapping[str, SlurmJob], *, now: float, keep_s: float
) -> list[str]:
    """Settle each requeue whose answer was lost; mark the entries of jobs that ended, and
    forget them ``keep_s`` later (a restart reads the ended jobs' earlier runs from them:
    :func:`slurmrl.daemon.history.from_accounting`).

    Returns a line per settled requeue, for the log and the audit."""
    lines: list[str] = []
    for jid, entry in list(ledger.items()):
        if entry.ended is not None:
            if now - entry.ended > keep_s:
                del ledger[jid]
            continue
        job = jobs.get(jid)
        if job is None or job.state in ENDED_STATES:  # squeue --all lists ended jobs until MinJobAge
            _ended(ledger, jid, job, now, keep_s)
            continue
        if entry.stopping is None:
            continue
        if job.restarts > entry.restarts or job.start_time != entry.stopping:
            ledger[jid] = entry.done()
            lines.append(f"job {jid}: requeue confirmed (restart count {job.restarts})")
        else:
            kept = entry.undone()
            if kept is None:
                del ledger[jid]
            else:
                ledger[jid] = kept
            lines.append(f"job {jid}: requeue not done (still on the run started at {entry.stopping:.0f})")
    return lines


def _ended(
    ledger: MutableMapping[str, Preempted], jid: str, job: SlurmJob | None, now: float, keep_s: float
) -> None:
    """A requeued job that ended: its entry kept, marked, while ``keep_s`` allows (an intent
    still in flight is dropped: the job ended on the run it would have stopped)."""
    entry = ledger[jid].undone()
    if entry is None or keep_s <= 0:
        del ledger[jid]
        return
    end = job.end_time if job is not None and job.end_time is not None else now
    ledger[jid] = replace(entry, ended=end)


def with_requeues(job: JobView, entry: Preempted | None) -> JobView:
    """``job`` as the simulator shows one preempted ``entry.count`` times: first submit time,
    GPU-seconds of the stopped runs (unchanged without an entry)."""
    if entry is None or entry.count == 0:
        return job
    return replace(
        job, submit_time=entry.submit_time, attained_service=entry.service, preemptions=entry.count
    )


def _live(entry: Preempted | None) -> Preempted | None:
    """An entry of a job not yet ended (an ended one's id is no job in the queue)."""
    return entry if entry is not None and entry.ended is None else None


def as_preempted(view: ClusterView, ledger: Mapping[str, Preempted]) -> ClusterView:
    """The view with each job the daemon requeued shown as the simulator shows a preempted one."""
    if not ledger:
        return view
    return replace(
        view,
        pending=[with_requeues(j, _live(ledger.get(j.job_id))) for j in view.pending],
        running=[with_requeues(j, _live(ledger.get(j.job_id))) for j in view.running],
    )
