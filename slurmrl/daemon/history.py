"""Jobs that ended since the last cycle, for policies that learn from history.

In the simulator a policy's view lists the jobs that finished since its
previous decision (``ClusterView.finished``), and history-based estimators
such as QSSF learn from nothing else. Slurm's queue shows ended jobs only
for ``MinJobAge`` seconds and a snapshot may miss them, so the daemon keeps
what it saw running and reports a job as finished at the first snapshot that
no longer lists it as running: its end is Slurm's ``EndTime`` where the
snapshot still holds the job, else that snapshot's time (at most one cycle
late), with the runs of it the daemon's requeues stopped. A job back in the
queue (requeued) is not reported.

The history lives in memory, so a restarted daemon would decide on a cold
one for hours (topdrl was trained with a warm one); so at start it reads
the last ``history_days`` of ended jobs back from accounting
(:mod:`slurmrl.slurm.accounting`) and reports them with its first view,
oldest first, as if it had seen them end; a job it had requeued with the
runs its record kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from slurmrl.daemon.preempt import with_requeues
from slurmrl.daemon.record import Preempted
from slurmrl.errors import SlurmError
from slurmrl.policy.view import ClusterView, FinishedJob, JobView
from slurmrl.slurm.backend import SlurmBackend
from slurmrl.slurm.records import SlurmJob
from slurmrl.slurm.snapshot import Snapshot, job_view


def earlier_runs(job: JobView) -> float:
    """Seconds the job ran before its last start: runs the daemon's requeues stopped.

    Slurm keeps no sum of a requeued job's earlier runs; the daemon's record
    does (``JobView.attained_service``, GPU-seconds), so the run time a
    policy learns from counts every run, as the simulator's does.
    """
    return job.attained_service / job.gpus if job.gpus > 0 else 0.0


def from_accounting(
    jobs: Sequence[SlurmJob], snapshot: Snapshot, requeued: Mapping[str, Preempted] | None = None
) -> list[FinishedJob]:
    """Ended jobs read from accounting as finished jobs, less any the snapshot still lists as
    pending or running (requeued since, or read in the instant they ended).

    Accounting holds a requeued job's last run only; the record's entry of a job the daemon
    requeued (``requeued``, kept ``history_days`` past its end) adds the runs it stopped."""
    live = {j.job_id for j in snapshot.jobs if j.is_pending or j.is_running}
    requeued = requeued or {}
    out = []
    for job in jobs:
        if job.job_id in live or job.start_time is None or job.end_time is None:
            continue
        view = with_requeues(job_view(job, job.job_id, start_time=job.start_time), requeued.get(job.job_id))
        run_time = max(0.0, job.end_time - job.start_time) + earlier_runs(view)
        out.append(FinishedJob(view, end_time=job.end_time, run_time=run_time, from_accounting=True))
    return out


@dataclass(frozen=True)
class Earlier:
    """Jobs that ended before the daemon started, or why there are none."""

    jobs: tuple[FinishedJob, ...] = ()
    problem: str = ""  # why nothing was read ("" = read)
    unreadable: int = 0  # accounting records left out as unreadable


def read_earlier(
    backend: SlurmBackend, days: float, snapshot: Snapshot, requeued: Mapping[str, Preempted] | None = None
) -> Earlier:
    """The last ``days`` of ended jobs from accounting, with the runs of the jobs in ``requeued``
    its requeues stopped; never raises: a daemon that cannot read its history still schedules,
    on a cold one."""
    if days <= 0:
        return Earlier(problem="history_days is 0")
    reader = getattr(backend, "finished_jobs", None)
    if reader is None:
        return Earlier(problem=f"{type(backend).__name__} reads no accounting")
    try:
        read = reader(snapshot.time - days * 86_400.0, snapshot.time)
    except SlurmError as exc:
        return Earlier(problem=f"accounting unreadable: {exc.format()}")
    if not read.gpus_tracked:
        return Earlier(problem="accounting keeps no GPU counts (add gres/gpu to AccountingStorageTRES)")
    return Earlier(tuple(from_accounting(read.jobs, snapshot, requeued)), unreadable=read.unreadable)


class FinishedTracker:
    def __init__(self) -> None:
        self._running: dict[str, JobView] = {}
        self._earlier: list[FinishedJob] = []  # ended before the daemon started, for the next view

    def seed(self, earlier: Sequence[FinishedJob]) -> None:
        """Jobs that ended before now, reported (oldest first) with the next view: at start, and
        for a policy that a reload put in place, which has seen none."""
        self._earlier = list(earlier)

    def with_finished(self, view: ClusterView, snapshot: Snapshot) -> ClusterView:
        """``view`` with the jobs that stopped running since the previous call as ``finished``."""
        now_running = {j.job_id: j for j in view.running}
        queued = {j.job_id for j in snapshot.jobs if j.is_pending}
        ends = {j.job_id: j.end_time for j in snapshot.jobs if not j.is_running and not j.is_pending}
        finished = []
        for jid, job in self._running.items():
            if jid in now_running or jid in queued:
                continue
            end = ends.get(jid) or snapshot.time
            start = job.start_time if job.start_time is not None else end
            finished.append(
                FinishedJob(job, end_time=end, run_time=max(0.0, end - start) + earlier_runs(job))
            )
        self._running = now_running
        if self._earlier:  # read from accounting: a job seen ending since is there already
            read = {f.job.job_id for f in self._earlier}
            finished = [*self._earlier, *(f for f in finished if f.job.job_id not in read)]
            self._earlier = []
        return replace(view, finished=finished) if finished else view
