"""The one in-memory job record every trace loader produces.

Loaders for Philly, Helios, PAI, openb, Tiresias, Gavel, Pollux and SWF all
map their columns onto :class:`TraceJob`; everything downstream (selection,
the simulator, the RL environment) sees only this type. ``duration`` is the
job's run time under ideal placement; whatever a policy may use at decision
time is kept apart from it (see :mod:`slurmrl.policy.view`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class TraceJob:
    job_id: str
    submit_time: float  # seconds from the start of the trace window
    duration: float  # seconds of run time under ideal placement (ground truth)
    num_gpus: int
    user: str = ""
    vc: str = ""  # virtual cluster, queue, organisation or partition
    num_nodes: int | None = None  # requested node count when the source says
    status: str = ""  # COMPLETED, FAILED, ... or "" when unknown
    model: str = ""  # model class or job type when the source says, else ""
    time_limit: float | None = None  # user-requested limit (seconds) when known
    name: str = ""
    gpu_type: str = ""  # required GPU type when the source constrains it

    def with_time_limit(self, limit: float) -> TraceJob:
        """This job with ``limit``: spelled out, as ``dataclasses.replace`` costs twice as much, once per job."""
        return TraceJob(
            self.job_id,
            self.submit_time,
            self.duration,
            self.num_gpus,
            self.user,
            self.vc,
            self.num_nodes,
            self.status,
            self.model,
            limit,
            self.name,
            self.gpu_type,
        )


@dataclass(frozen=True)
class Trace:
    """A loaded workload: jobs sorted by submit time, plus provenance."""

    jobs: tuple[TraceJob, ...]
    source: str  # file path or "embedded:<name>"
    format: str
    skipped: int = 0  # rows dropped by --skip-bad
    skip_reasons: tuple[str, ...] = field(default=(), repr=False)  # first few reasons
    # Source line of each job (job_id -> 1-based physical line) so later checks can point at the row.
    lines: Mapping[str, int] | None = field(default=None, repr=False, compare=False)
    # Rows left out on purpose by the loader's documented policy (reason -> count), not errors.
    dropped: Mapping[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.jobs)

    def describe(self) -> str:
        if not self.jobs:
            return f"{self.source} ({self.format}): no jobs"
        gpus = sum(j.num_gpus for j in self.jobs)
        span = self.jobs[-1].submit_time - self.jobs[0].submit_time
        text = f"{self.source} ({self.format}): {len(self.jobs)} jobs, {gpus} GPUs asked, span {span / 86400:.1f} days"
        if self.skipped:
            text += f", {self.skipped} bad rows skipped"
        if self.dropped:
            text += ", dropped: " + ", ".join(f"{n} {why}" for why, n in self.dropped.items())
        return text
