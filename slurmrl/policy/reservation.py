"""A heuristic's reservation for its blocked head job, as a policy led by it must keep it.

EASY backfill promises the first job that cannot start a *shadow time*: no
later job may start now unless it ends (by its user time limit) by then or
stays off the GPUs the head would get then. A learned policy led by such a
heuristic (:mod:`slurmrl.rl.lead`) may start jobs the heuristic did not
propose; it keeps the same promise by judging those starts against the
heuristic's reservation, which the heuristic exposes through
:class:`HoldsReservation`. Heuristics without one (preemptive, or no
backfill) simply lack the method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.view import ClusterView, JobView


@dataclass(frozen=True, eq=False)
class Reservation:
    """The head job's promise: it starts by ``shadow`` on (among others) the GPUs of ``gpus``."""

    head: str  # job id of the blocked head job
    shadow: float  # the limit-based time by which the head can start
    gpus: np.ndarray  # [node, gpu] bool: the GPUs, free now or freed by the pass's own starts, it gets then

    def admits(self, end: float, placement: Placement) -> bool:
        """Whether a job ending (by its limit) at ``end`` on ``placement`` leaves the head's start alone."""
        if end <= self.shadow:
            return True
        return not any(self.gpus[a.node, list(a.gpus)].any() for a in placement.allocs)


@runtime_checkable
class HoldsReservation(Protocol):
    """A scheduler whose passes hold a reservation for their head job (EASY backfill)."""

    def held_reservation(self, view: ClusterView, pool: GpuPool, head: JobView) -> Reservation | None:
        """The reservation for ``head`` after this pass, ``pool`` being what the pass left free.

        None when it promises nothing (``head`` cannot be placed even once
        every running job reaches its limit).
        """
        ...
