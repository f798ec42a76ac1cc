"""First come, first served, with or without EASY backfill."""

from __future__ import annotations

from collections.abc import Sequence

from slurmrl.policy.backfill import EasyBackfill
from slurmrl.policy.base import OrderedScheduler, PlacementPolicy
from slurmrl.policy.view import ClusterView, JobView


class FifoOrdering:
    # Arrivals join the back of the queue: none ranks ahead of a job already waiting.
    arrivals_last = True

    def order(self, view: ClusterView) -> Sequence[JobView]:
        # The view's pending list is in submit order by contract, so FIFO is
        # the list as is: no per-pass sort of a queue that may hold thousands.
        return view.pending


def make_fifo(placement: PlacementPolicy) -> OrderedScheduler:
    return OrderedScheduler("fifo", FifoOrdering(), placement)


def make_fifo_backfill(placement: PlacementPolicy) -> EasyBackfill:
    return EasyBackfill("fifo-backfill", FifoOrdering(), placement)
