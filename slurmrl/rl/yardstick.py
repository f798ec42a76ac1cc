"""What trainers choose checkpoints on, never an evaluation scenario.

The yardstick is the last jobs of each training workload, replayed on
their own timeline; a validation window is a training-side scenario left
out of the training episodes (``philly-512-week2-val``: week 2's last days).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from slurmrl.errors import ConfigError
from slurmrl.sim.cutoff import JctCutoff, ReplayAbandoned
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


def validation_workloads(names: Sequence[str], seed: int, seeds: int = 1) -> list[Workload]:
    """Each validation scenario under workload seeds ``seed`` to ``seed + seeds - 1``, scenario by scenario.

    One workload seed is one draw of the scenario's seeded parts (time limits,
    elastic jobs); a checkpoint that beats its lead on one draw may only have
    drawn well, so a trainer may ask for several and keep the best mean.
    """
    if seeds < 1:
        raise ConfigError(f"validate_seeds must be at least 1, got {seeds}")
    found = (validation_workload(name, s) for name in names for s in range(seed, seed + seeds))
    return [w for w in found if w is not None]


def mean_jct(
    windows: Sequence[Workload],
    replay: Callable[[Workload, JctCutoff | None], float],
    beat: float = math.inf,
) -> float:
    """Mean over ``windows`` of ``replay``'s average JCT, or ``math.inf`` once it cannot come in under ``beat``.

    A checkpoint is kept only if it beats the best so far, so a validation
    replay that can no longer do so is abandoned (:mod:`slurmrl.sim.cutoff`)
    instead of run to its end: the windows still to replay can add no less
    than nothing, so each is cut at what the mean leaves it. ``replay(window,
    cutoff)`` returns that window's average JCT and lets
    :class:`~slurmrl.sim.cutoff.ReplayAbandoned` through.
    """
    total = 0.0
    for window in windows:
        left = beat * len(windows) - total
        try:
            total += replay(window, JctCutoff(left) if math.isfinite(left) else None)
        except ReplayAbandoned:
            return math.inf
    return total / len(windows) if windows else math.nan
