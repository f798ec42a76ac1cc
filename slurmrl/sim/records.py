"""What a simulation run leaves behind, as plain frozen records.

The metrics, the per-job CSV, the report site and the RL evaluation all read
these and nothing else, so they never depend on engine internals.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JobRecord:
    job_id: str
    user: str
    vc: str
    model: str
    gpus: int
    submit_time: float
    start_time: float  # first start; NaN if the job never started
    end_time: float  # NaN if the job did not finish within the run
    duration: float  # ideal-placement run time from the trace
    run_time: float  # wall time spent running, summed over all starts
    preemptions: int
    nodes: int  # nodes of the first placement (0 if never started)
    racks: int  # racks of the first placement (0 if never started)
    worst_link: int  # LinkTier value of the first placement (-1 if never started)
    time_limit: float  # NaN when none
    killed_at_limit: bool = False
    # The shortest time the job could run anywhere on this cluster under the
    # run's speed model (its duration unless faster GPUs exist, or, for an
    # elastic job, its duration at the fastest count of its range): the
    # bounds' processing time. The bounds still charge an elastic job its
    # traced GPU count, so with --elastic they are estimates, not proofs.
    # NaN in files written before it was recorded.
    best_time: float = float("nan")

    @property
    def jct(self) -> float:
        return self.end_time - self.submit_time

    @property
    def wait(self) -> float:
        return self.start_time - self.submit_time


@dataclass(frozen=True, slots=True)
class Sample:
    """Cluster state right after an event time, for time-series plots."""

    time: float
    busy_gpus: int
    pending_jobs: int
    running_jobs: int
    fragmentation: float
