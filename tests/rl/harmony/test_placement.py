from __future__ import annotations

import numpy as np

from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.placement.interference import InterferenceAware
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.rl.harmony.features import HarmonyObs, PlacementObs
from slurmrl.rl.harmony.placement import HarmonyPlacement
from tests.sim.fixtures.clusters import MIXED


def last_allowed(o: PlacementObs) -> tuple[int, float]:
    """A pointer that prefers the highest node index it may take: on MIXED, a K80 node."""
    return int(np.flatnonzero(o.mask)[-1]), 0.0


def view_of(running: list[JobView]) -> ClusterView:
    cluster = load_cluster(MIXED)
    pool = GpuPool(cluster)
    for job in running:
        pool.allocate(job.placement)  # type: ignore[arg-type]
    return ClusterView(0.0, cluster, pool.readonly(), (), tuple(running))


def test_the_pointer_chooses_among_nodes_of_the_fastest_type_with_room() -> None:
    place = HarmonyPlacement(HarmonyObs(), last_allowed, InterferenceAware())
    view = view_of([])
    got = place.place(JobView("j", 2, 0.0, model="resnet50"), view.pool.copy(), view)
    assert got is not None and got.nodes == (1,)  # the last V100 node, never a K80
    view = view_of(
        [
            JobView(f"r{n}", 4, 0.0, start_time=0.0, placement=Placement.of([(n, [0, 1, 2, 3])]))
            for n in (0, 1)
        ]
    )
    got = place.place(JobView("j", 2, 0.0), view.pool.copy(), view)
    assert got is not None and got.nodes == (3,)  # V100s full: the K80s take it
    typed = place.place(JobView("k", 2, 0.0, gpu_type="k80"), view.pool.copy(), view)
    assert typed is not None and typed.nodes == (3,)
