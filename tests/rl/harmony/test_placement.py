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


def test_a_probe_on_a_scratch_pool_sees_no_load_from_the_jobs_it_released() -> None:
    """A reservation asks on a pool where jobs that end first are released: they load no node then."""
    seen: list[PlacementObs] = []

    def first_allowed(o: PlacementObs) -> tuple[int, float]:
        seen.append(o)
        return int(np.flatnonzero(o.mask)[0]), 0.0

    ends = JobView("ends", 1, 0.0, model="resnet50", start_time=0.0, placement=Placement.of([(0, [0])]))
    stays = JobView("stays", 2, 0.0, model="lstm", start_time=0.0, placement=Placement.of([(0, [1, 2])]))
    other = JobView("other", 1, 0.0, model="lstm", start_time=0.0, placement=Placement.of([(1, [0])]))
    job = JobView("j", 1, 0.0, model="transformer")
    place = HarmonyPlacement(HarmonyObs(), first_allowed, InterferenceAware())
    view = view_of([ends, stays, other])
    scratch = view.pool.copy()
    scratch.release(ends.placement)  # type: ignore[arg-type]
    place.place(job, scratch, view)
    without = view_of([stays, other])
    HarmonyPlacement(HarmonyObs(), first_allowed, InterferenceAware()).place(
        job, without.pool.copy(), without
    )
    probe, alone = seen
    np.testing.assert_array_equal(probe.nodes, alone.nodes)
    np.testing.assert_array_equal(probe.globals[[0, 1, 5]], alone.globals[[0, 1, 5]])  # not the running count
    # The loads of the view itself are untouched by the probe, and a start confirmed in the
    # pass loads its node until a scratch pool releases it too.
    place.place(job, view.pool.copy(), view)
    assert seen[-1].nodes[0, 8] * 4 == 2.0  # two jobs on node 0 (4 GPUs a node on MIXED)
    started = Placement.of([(0, [3])])
    place.confirm(JobView("s", 1, 0.0, model="lstm"), started, view)
    walk = view.pool.copy()
    walk.allocate(started)
    place.place(job, walk, view)
    assert seen[-1].nodes[0, 8] * 4 == 3.0
    walk.release(started)
    walk.release(ends.placement)  # type: ignore[arg-type]
    place.place(job, walk, view)
    np.testing.assert_array_equal(seen[-1].nodes, alone.nodes)
