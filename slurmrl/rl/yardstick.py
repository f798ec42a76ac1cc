"""The training yardstick: the last jobs of each training workload, replayed on their own timeline.

Trainers pick the checkpoint they ship by its average JCT here, so the
choice never looks at an evaluation scenario.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from slurmrl.sim.experiment import Workload


def last_jobs(workloads: Iterable[Workload], jobs: int) -> list[Workload]:
    """The last ``jobs`` jobs of each workload, labelled as such."""
    return [
        replace(wl, trace=replace(wl.trace, jobs=wl.trace.jobs[-jobs:]), label=f"{wl.label}[-{jobs}:]")
        for wl in workloads
    ]
