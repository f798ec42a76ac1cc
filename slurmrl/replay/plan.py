"""What a replay submits: each trace job as one ``sbatch`` of a compressed sleep.

A replay runs a trace window ``speedup`` times faster than it happened, so
minutes of wall time cover a day of the trace. Compression is only honest
if both worlds see the same jobs, so the rounding Slurm imposes is decided
here, once, and the simulated twin replays exactly these jobs scaled back:

* durations: ``duration / speedup`` seconds of ``sleep``, never under
  ``floor`` (Slurm starts and ends jobs on whole seconds, and a job of a few
  milliseconds would measure only the controller's latency);
* time limits: Slurm keeps them in whole minutes (``time_limit`` is minutes
  in its job record; sbatch(1) ``--time``), so a compressed limit is rounded
  up to the next minute and never below the compressed sleep;
* arrivals: ``submit_time / speedup`` seconds after the replay starts;
* node counts: the trace's, else the fewest nodes that hold the GPUs (the
  simulator's default ``pack`` locality), submitted as ``--nodes``;
* accounts: the job's VC (queue) as ``--account``, so group-based orderings
  see the trace's groups. Every job is submitted by the replaying user, so
  the twin gives every job that user too: a policy sees per-user history
  only where Slurm could show it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from slurmrl.errors import ConfigError
from slurmrl.traces.schema import Trace, TraceJob

# Slurm job names of a replay start with this; anything named so is a
# replay's and may be cancelled by the next replay on the same cluster.
NAME_PREFIX = "slurmrl-replay."
DEFAULT_FLOOR = 2.0  # seconds of wall time; see the module docstring
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class ReplayJob:
    trace_id: str
    submit_at: float  # wall seconds after the replay's start
    sleep: float  # wall seconds the job runs
    gpus: int
    nodes: int
    minutes: int  # time limit as submitted (--time), whole minutes
    account: str
    user: str  # the trace's user (for the record; Slurm sees the replaying user)
    name: str  # Slurm job name: NAME_PREFIX + a safe form of the trace id


@dataclass(frozen=True)
class ReplayPlan:
    jobs: tuple[ReplayJob, ...]
    speedup: float
    floor: float
    submit_user: str

    @property
    def span(self) -> float:
        """Wall seconds from the first submission to the last one."""
        return max((j.submit_at for j in self.jobs), default=0.0)


def safe_name(text: str) -> str:
    """A job name or account Slurm and a shell read the same: letters, digits, ``_.-``."""
    return _UNSAFE.sub("_", text).strip("_")[:100] or "job"


def node_count(job: TraceJob, gpus_per_node: int) -> int:
    if job.num_nodes:
        return job.num_nodes
    return max(1, math.ceil(job.num_gpus / max(gpus_per_node, 1)))


def plan_replay(
    trace: Trace, *, speedup: float, gpus_per_node: int, floor: float = DEFAULT_FLOOR, submit_user: str = ""
) -> ReplayPlan:
    """The jobs to submit for ``trace`` (submit times from 0) at ``speedup`` trace seconds per wall second."""
    if not speedup > 0 or not math.isfinite(speedup):
        raise ConfigError(f"--speedup must be a positive number, got {speedup:g}", column="speedup")
    if not floor > 0:
        raise ConfigError(f"--floor must be positive, got {floor:g}", column="floor")
    jobs: list[ReplayJob] = []
    for j in trace.jobs:
        sleep = round(max(j.duration / speedup, floor), 3)
        limit = j.time_limit / speedup if j.time_limit else None
        minutes = math.ceil(max(limit or 0.0, sleep) / 60.0) if limit is not None else 0
        jobs.append(
            ReplayJob(
                trace_id=j.job_id,
                submit_at=j.submit_time / speedup,
                sleep=sleep,
                gpus=j.num_gpus,
                nodes=node_count(j, gpus_per_node),
                minutes=minutes,
                account=safe_name(j.vc or "default"),
                user=j.user,
                name=NAME_PREFIX + safe_name(j.job_id),
            )
        )
    jobs.sort(key=lambda r: (r.submit_at, r.trace_id))
    return ReplayPlan(tuple(jobs), speedup, floor, submit_user)


def submitted_trace(trace: Trace, plan: ReplayPlan) -> Trace:
    """``trace`` as the replay submits it, in trace seconds: the simulated twin's workload."""
    by_id = {r.trace_id: r for r in plan.jobs}
    k = plan.speedup
    jobs = []
    for j in trace.jobs:
        r = by_id[j.job_id]
        jobs.append(
            replace(
                j,
                submit_time=r.submit_at * k,
                duration=r.sleep * k,
                time_limit=r.minutes * 60.0 * k if r.minutes else None,
                num_nodes=r.nodes,
                user=plan.submit_user or j.user,
                vc=r.account,
            )
        )
    return replace(trace, jobs=tuple(jobs))
