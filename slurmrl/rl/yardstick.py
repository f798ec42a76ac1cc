"""What trainers choose checkpoints on, never an evaluation scenario.

The yardstick is the last jobs of each training workload, replayed on
their own timeline; a validation window is a training-side scenario left
out of the training episodes (``philly-512-week2-val``: week 2's last days).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from slurmrl.errors import ConfigError
from slurmrl.sim.experiment import Workload


def last_jobs(workloads: Iterable[Workload], jobs: int) -> list[Workload]:
    """The last ``jobs`` jobs of each workload, labelled as such."""
    return [
        replace(wl, trace=replace(wl.trace, jobs=wl.trace.jobs[-jobs:]), label=f"{wl.label}[-{jobs}:]")
        for wl in workloads
    ]


def validation_workload(name: str, seed: int) -> Workload | None:
    """The validation scenario's workload (None for ""); it must be a training-side one."""
    if not name:
        return None
    from slurmrl.scenarios import get_scenario
    from slurmrl.sim.experiment import prepare

    if get_scenario(name).role != "train":
        raise ConfigError(
            f"validation scenario '{name}' is not on the training side",
            hint="validate on a scenario with role 'train' (see `slurmrl scenarios`)",
        )
    return prepare(scenario=name, seed=seed)
