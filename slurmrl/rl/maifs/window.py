"""Which pending jobs are agents in a step: a window of the ranking that could start now.

The window takes, in this order, the ``oldest`` longest-waiting jobs (the
pending queue is in arrival order), then the smallest estimated GPU-time
first, as ``qssf`` ranks (Helios, Hu et al., SC'21), skipping jobs whose
smallest allowed count cannot fit in the free GPUs at all. The old-job slots
keep large jobs from being passed over forever by a stream of small ones;
the rest put the jobs most likely to finish soon in front, the shortest-first
rule that minimises average JCT when estimates are right.

One agent per job, not per rack: the two choices MAIFS makes together (how
many GPUs, and where) are a job's, and its scaling curve, range and wait are
what they depend on. A rack agent would have to pick a job and its count for
its own GPUs, and two racks would then contend for the same job (a conflict
between agents that a job's single start cannot resolve), while a job that
spans racks belongs to none of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable

from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.elastic.curves import bounds
from slurmrl.policy.view import JobView

SCAN = 512  # ranked jobs looked at per window at most: a pass on a full cluster stays cheap


def could_fit(job: JobView, pool: GpuPool) -> bool:
    """A cheap necessary test: the smallest allowed count fits the free GPUs (one node if it must)."""
    need = bounds(job)[0]
    if need > pool.total_free:
        return False
    if job.num_nodes is not None and need <= pool.cluster.max_gpus_per_node:
        return int(pool.free_count.max()) >= need  # packed: one node must hold it
    return True


def pick_window(
    pending: Collection[JobView],
    ranked: Iterable[JobView],
    pool: GpuPool,
    *,
    size: int,
    oldest: int,
    skip: set[str],
    pool_for: Callable[[JobView], GpuPool] | None = None,
) -> list[JobView]:
    """Up to ``size`` agents: ``oldest`` by arrival, the rest by rank; none from ``skip``.

    ``pool_for`` gives the GPUs a job may use (a reservation keeps some from
    it); by default all of ``pool``.
    """
    chosen: list[JobView] = []
    seen: set[str] = set()
    for source, limit in ((pending, oldest), (ranked, size)):
        for job in itertools.islice(source, SCAN):
            if len(chosen) >= limit:
                break
            if job.job_id in skip or job.job_id in seen:
                continue
            if could_fit(job, pool if pool_for is None else pool_for(job)):
                chosen.append(job)
                seen.add(job.job_id)
    return chosen
