"""Stretch a compressed queue back to trace time before a policy reads it.

A replay (``slurmrl replay``) runs a trace ``k`` times faster than it
happened: a job that ran an hour sleeps 36 s at ``k = 100``. Policies reason
in trace seconds (a learned policy's features are normalised by them, QSSF's
estimates and Tiresias' thresholds are in them), so the daemon multiplies
every time in the view by ``k`` and divides the one time a policy hands back,
``wake_at``, by it. Times are scaled about 0 (Unix epoch): differences, the
only thing a policy may rely on, come out exact.
"""

from __future__ import annotations

from dataclasses import replace

from slurmrl.policy.view import ClusterView, Decisions, JobView


def _job(job: JobView, k: float) -> JobView:
    return replace(
        job,
        submit_time=job.submit_time * k,
        time_limit=None if job.time_limit is None else job.time_limit * k,
        start_time=None if job.start_time is None else job.start_time * k,
        attained_service=job.attained_service * k,
        spread_at=job.spread_at * k,
    )


def scale_view(view: ClusterView, k: float) -> ClusterView:
    """``view`` with every time (and GPU-time) multiplied by ``k``; ``view`` itself when ``k`` is 1."""
    if k == 1.0:
        return view
    return replace(
        view,
        now=view.now * k,
        pending=[_job(j, k) for j in view.pending],
        running=[_job(j, k) for j in view.running],
        finished=[
            replace(f, job=_job(f.job, k), end_time=f.end_time * k, run_time=f.run_time * k)
            for f in view.finished
        ],
    )


def unscale_decisions(decisions: Decisions, k: float) -> Decisions:
    """The policy's ``wake_at``, given in trace time, back on the wall clock."""
    if k == 1.0 or decisions.wake_at is None:
        return decisions
    return replace(decisions, wake_at=decisions.wake_at / k)
