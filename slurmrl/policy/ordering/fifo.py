"""First come, first served."""

from __future__ import annotations

from typing import Iterable

from slurmrl.policy.base import OrderedScheduler, PlacementPolicy
from slurmrl.policy.view import ClusterView, JobView


class FifoOrdering:
    def order(self, view: ClusterView) -> Iterable[JobView]:
        # Both backends hand over pending jobs in arrival order, so FIFO costs
        # nothing per pass even with thousands of jobs waiting.
        return view.pending


def make_fifo(placement: PlacementPolicy) -> OrderedScheduler:
    return OrderedScheduler("fifo", FifoOrdering(), placement)
