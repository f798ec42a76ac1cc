"""A clairvoyant reference for elastic runs: SRTF on true durations, each start as fast as the GPUs allow.

``srtf-oracle`` starts every job on its traced GPU count, so with
``--elastic`` on, an elastic policy can beat it by running jobs wider and the
gap to it stops being a ceiling. ``srtf-oracle-elastic`` keeps the bound's
order and churn rules (true remaining time first, preempting only markedly
longer work) and, in a pass where every waiting job starts anyway, starts
the elastic ones on the largest count of their range that the free GPUs
hold (trying smaller counts down to the range's bottom); when some job
would be left waiting, it starts them rigid, as widening would crowd that
job out. It is a reference, not a proof (it never resizes a running job); it
reads true durations and is registered as a bound, never deployed.
"""

from __future__ import annotations

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.base import PlacementPolicy, confirm_start
from slurmrl.policy.elastic.curves import bounds, next_down, sized
from slurmrl.policy.ordering.oracle import SrtfOracle
from slurmrl.policy.view import ClusterView, Decisions, JobView


class WidestFirst:
    """``inner``'s placement of an elastic job on the largest count of its range that fits."""

    # Not monotone in the preemptive pass's sense: an elastic job may start
    # below the GPUs it asked for, so a failure says nothing about others.
    monotone = False

    def __init__(self, inner: PlacementPolicy) -> None:
        self.inner = inner
        self.name = inner.name
        self.widen = True  # False: every job on its asked count, as ``inner`` places it

    def place(self, job: JobView, pool: GpuPool, view: ClusterView) -> Placement | None:
        if job.gpu_range is None or not self.widen:
            return self.inner.place(job, pool, view)
        count: int | None = bounds(job)[1]
        while count is not None:
            if count <= pool.total_free:
                found = self.inner.place(sized(job, count, view.cluster), pool, view)
                if found is not None:
                    return found
            count = next_down(job, count)
        return None

    def confirm(self, job: JobView, placement: Placement, view: ClusterView) -> None:
        confirm_start(self.inner, job, placement, view)


class ElasticSrtfOracle(SrtfOracle):
    def __init__(self, placement: PlacementPolicy) -> None:
        self.widest = WidestFirst(placement)
        super().__init__(self.widest)
        self.name = "srtf-oracle-elastic"

    def decide(self, view: ClusterView) -> Decisions:
        """The rigid pass; widened instead when it starts every waiting job and widening still does."""
        self.widest.widen = False
        rigid = super().decide(view)
        if len(rigid.starts) < len(view.pending) or not any(j.gpu_range for j in view.pending):
            return rigid
        self.widest.widen = True
        wide = super().decide(view)
        return wide if len(wide.starts) == len(rigid.starts) else rigid


def make_elastic_srtf_oracle(placement: PlacementPolicy) -> ElasticSrtfOracle:
    return ElasticSrtfOracle(placement)
