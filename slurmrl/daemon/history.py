"""Jobs that ended since the last cycle, for policies that learn from history.

In the simulator a policy's view lists the jobs that finished since its
previous decision (``ClusterView.finished``), and history-based estimators
such as QSSF learn from nothing else. Slurm's queue shows ended jobs only
for ``MinJobAge`` seconds and a snapshot may miss them, so the daemon keeps
what it saw running and reports a job as finished at the first snapshot that
no longer lists it as running: its end is Slurm's ``EndTime`` where the
snapshot still holds the job, else that snapshot's time (at most one cycle
late). A job back in the queue (requeued) is not reported. The history lives
in memory: a restarted daemon starts learning afresh, as a new scheduler
would.
"""

from __future__ import annotations

from dataclasses import replace

from slurmrl.policy.view import ClusterView, FinishedJob, JobView
from slurmrl.slurm.snapshot import Snapshot


class FinishedTracker:
    def __init__(self) -> None:
        self._running: dict[str, JobView] = {}

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
            finished.append(FinishedJob(job, end_time=end, run_time=max(0.0, end - start)))
        self._running = now_running
        return replace(view, finished=finished) if finished else view
