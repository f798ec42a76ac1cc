from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster.model import Cluster, LinkTier, Node, Placement, Rack, islands_for
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy import make_placement
from slurmrl.policy.placement.interference import InterferenceAware
from slurmrl.policy.view import ClusterView, JobView


def make_cluster(racks: int, per_rack: int, gpus: int = 8, intra: str = "nvlink:4") -> Cluster:
    nodes, rack_list = [], []
    for r in range(racks):
        ids = tuple(range(r * per_rack, (r + 1) * per_rack))
        nodes += [Node(f"n{i}", i, r, gpus, "v100", islands_for(intra, gpus)) for i in ids]
        rack_list.append(Rack(f"r{r}", r, ids))
    return Cluster("t", tuple(rack_list), tuple(nodes))


def busy(pool: GpuPool, taken: dict[int, list[int]]) -> None:
    for node, gpus in taken.items():
        pool.allocate(Placement.of([(node, gpus)]))


def check_valid(placement: Placement, pool: GpuPool, gpus: int) -> None:
    assert placement.num_gpus == gpus
    assert pool.is_free(placement)
    assert len(set(placement.nodes)) == len(placement.nodes)


def test_consolidate_prefers_fullest_node_that_fits() -> None:
    cluster = make_cluster(1, 4)
    pool = GpuPool(cluster)
    busy(pool, {0: [0, 1], 1: [0, 1, 2, 3, 4, 5], 2: [0, 1, 2, 3, 4]})  # free: 6, 2, 3, 8
    got = make_placement("consolidate").place(JobView("j", 3, 0.0), pool, None)
    assert got is not None and got.nodes == (2,)  # 3 free: exact fit
    got = make_placement("consolidate").place(JobView("j", 2, 0.0), pool, None)
    assert got is not None and got.nodes == (1,)
    # First fit would take node 0 and break up a 6-GPU block.
    assert make_placement("first-fit").place(JobView("j", 2, 0.0), pool, None).nodes == (0,)  # type: ignore[union-attr]


def test_consolidate_uses_fewest_nodes_for_large_jobs() -> None:
    cluster = make_cluster(1, 4)
    pool = GpuPool(cluster)
    busy(pool, {0: [0, 1, 2, 3, 4, 5], 1: [0, 1, 2, 3, 4, 5], 2: [0]})  # free: 2, 2, 7, 8
    got = make_placement("consolidate").place(JobView("j", 12, 0.0), pool, None)
    assert got is not None
    check_valid(got, pool, 12)
    assert sorted(got.nodes) == [2, 3]
    ff = make_placement("first-fit").place(JobView("j", 12, 0.0), pool, None)
    assert ff is not None and len(ff.nodes) > len(got.nodes)


def test_topology_prefers_one_nvlink_island() -> None:
    cluster = make_cluster(1, 2)  # two quads per node
    pool = GpuPool(cluster)
    busy(pool, {0: [0, 4], 1: [0, 1]})  # node 0: 3 + 3 free across quads; node 1: quad 0 has 2, quad 1 has 4
    got = make_placement("topology").place(JobView("j", 4, 0.0), pool, None)
    assert got is not None and got.nodes == (1,) and got.allocs[0].gpus == (4, 5, 6, 7)
    assert cluster.worst_link(got) == LinkTier.NVLINK
    ff = make_placement("first-fit").place(JobView("j", 4, 0.0), pool, None)
    assert ff is not None and cluster.worst_link(ff) == LinkTier.PCIE


def test_topology_keeps_multi_node_jobs_in_one_rack() -> None:
    cluster = make_cluster(2, 3)
    pool = GpuPool(cluster)
    busy(pool, {0: [0, 1, 2, 3], 1: list(range(8)), 2: list(range(8)), 3: [0, 1], 4: [0, 1]})
    # free: rack 0 -> node 0: 4; rack 1 -> nodes 3, 4: 6 each, node 5: 8
    got = make_placement("topology").place(JobView("j", 12, 0.0), pool, None)
    assert got is not None
    check_valid(got, pool, 12)
    assert cluster.worst_link(got) == LinkTier.SWITCH
    assert {cluster.nodes[n].rack for n in got.nodes} == {1}


def test_gpu_type_and_node_count_constraints() -> None:
    nodes = (
        Node("a", 0, 0, 4, "k80", islands_for("pcie", 4)),
        Node("b", 1, 0, 4, "p40", islands_for("pcie", 4)),
    )
    cluster = Cluster("t", (Rack("r", 0, (0, 1)),), nodes)
    pool = GpuPool(cluster)
    for name in ("consolidate", "topology", "interference-aware"):
        place = make_placement(name)
        got = place.place(JobView("j", 2, 0.0, gpu_type="p40"), pool, None)
        assert got is not None and got.nodes == (1,), name
        assert place.place(JobView("j", 6, 0.0, num_nodes=1), pool, None) is None, name
        assert place.place(JobView("j", 2, 0.0, gpu_type="a100"), pool, None) is None, name


@st.composite
def fragmented(draw: st.DrawFn) -> tuple[Cluster, GpuPool, int]:
    racks = draw(st.integers(1, 3))
    per_rack = draw(st.integers(1, 4))
    cluster = make_cluster(racks, per_rack)
    pool = GpuPool(cluster)
    bits = draw(st.lists(st.booleans(), min_size=len(cluster.nodes) * 8, max_size=len(cluster.nodes) * 8))
    for n in range(len(cluster.nodes)):
        taken = [g for g in range(8) if bits[n * 8 + g]]
        if taken:
            pool.allocate(Placement.of([(n, taken)]))
    gpus = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16]))
    return cluster, pool, gpus


@settings(max_examples=150, deadline=None)
@given(fragmented())
def test_topology_locality_never_worse_than_first_fit(case: tuple[Cluster, GpuPool, int]) -> None:
    cluster, pool, gpus = case
    job = JobView("j", gpus, 0.0)
    ff = make_placement("first-fit").place(job, pool, None)
    topo = make_placement("topology").place(job, pool, None)
    cons = make_placement("consolidate").place(job, pool, None)
    assert (ff is None) == (topo is None) == (cons is None)
    if topo is None or ff is None or cons is None:
        assert gpus > pool.total_free
        return
    for got in (topo, cons):
        check_valid(got, pool, gpus)
    assert cluster.worst_link(topo) <= cluster.worst_link(ff)
    assert len(cons.nodes) <= len(ff.nodes)
    # consolidate uses the minimum possible node count
    assert len(cons.nodes) == int(np.searchsorted(np.cumsum(np.sort(pool.free_count)[::-1]), gpus)) + 1


def test_interference_aware_separates_sensitive_jobs() -> None:
    cluster = make_cluster(1, 3, intra="nvswitch")
    pool = GpuPool(cluster)
    runs = []
    for node, model in ((0, "hot"), (1, "cold")):
        p = Placement.of([(node, [0, 1, 2, 3])])
        pool.allocate(p)
        runs.append(JobView(f"r{node}", 4, 0.0, model=model, start_time=0.0, placement=p))
    view = ClusterView(10.0, cluster, pool.readonly(), (), tuple(runs), ())
    place = InterferenceAware(sensitivity={"hot": 0.9, "cold": 0.0}.get)
    got = place.place(JobView("j", 2, 0.0, model="hot"), pool, view)
    assert got is not None and got.nodes == (1,)  # best fit, next to the insensitive job
    got = place.place(JobView("k", 2, 0.0, model="cold"), pool, view)
    assert got is not None and got.nodes == (0,)  # an insensitive job may sit next to anything


def test_interference_aware_counts_only_the_jobs_a_pool_still_holds() -> None:
    """On a scratch pool (a reservation's releases, a preemptive pass's victims) a released job is no neighbour."""
    cluster = make_cluster(1, 2, intra="nvswitch")
    pool = GpuPool(cluster)
    hot = Placement.of([(0, [0, 1, 2, 3, 4, 5])])
    cold = Placement.of([(1, [0, 1, 2, 3])])
    pool.allocate(hot)
    pool.allocate(cold)
    runs = (
        JobView("hot", 6, 0.0, model="hot", start_time=0.0, placement=hot),
        JobView("cold", 4, 0.0, model="cold", start_time=0.0, placement=cold),
    )
    view = ClusterView(10.0, cluster, pool.readonly(), (), runs, ())
    place = InterferenceAware(sensitivity={"hot": 0.9, "cold": 0.0}.get)
    job = JobView("j", 2, 0.0, model="hot")
    got = place.place(job, pool, view)
    assert got is not None and got.nodes == (1,)  # away from the running hot job
    scratch = pool.copy()
    scratch.release(Placement.of([(1, [0, 1, 2, 3])]))  # the cold job ends first: node 1 all free
    scratch.release(hot)  # then the hot one: it is gone when the job would start
    got = place.place(job, scratch, view)
    assert got is not None and got.nodes == (0,)  # best fit, nothing sensitive left
    assert place.place(job, pool, view).nodes == (1,)  # the probe changed no later answer
    # A start confirmed in the pass is a neighbour until a scratch pool releases it too.
    second = Placement.of([(1, [4, 5])])
    place.confirm(JobView("s", 2, 0.0, model="hot"), second, view)
    walk = pool.copy()
    walk.allocate(second)
    assert place._neighbours(walk, view).tolist() == [0.9, 0.9]
    released = walk.copy()
    released.release(second)
    released.release(hot)
    assert place._neighbours(released, view).tolist() == [0.0, 0.0]


@settings(max_examples=200, deadline=None)
@given(
    intra=st.sampled_from(["nvlink:4", "nvlink:2", "pcie", "nvswitch"]),
    free=st.lists(st.booleans(), min_size=8, max_size=8).filter(any),
    need=st.integers(1, 8),
)
def test_in_node_pick_is_the_same_whether_computed_or_remembered(
    intra: str, free: list[bool], need: int
) -> None:
    from slurmrl.policy.placement.common import _pick, pick_in_node, tables

    need = min(need, sum(free))
    cluster = make_cluster(1, 2, intra=intra)
    pool = GpuPool(cluster)
    busy(pool, {1: [g for g, f in enumerate(free) if not f]} if not all(free) else {})
    tab = tables(cluster)
    first = pick_in_node(pool, 1, need)
    assert first == tuple(sorted(_pick(pool.free[1], tab.island_of[1], tab.flat[1], need)))
    assert len(first) == need and all(free[g] for g in first)
    # Node 0 has the same layout: the same free pattern there is answered from the memo.
    busy(pool, {0: [g for g, f in enumerate(free) if not f]} if not all(free) else {})
    assert pick_in_node(pool, 0, need) == first


def test_withheld_gpus_are_busy_and_counted() -> None:
    cluster = make_cluster(2, 2)
    pool = GpuPool(cluster)
    busy(pool, {0: [0, 1]})
    mask = np.zeros_like(pool.free)
    mask[0, [1, 2]] = True  # one GPU already busy, one free
    mask[3, :] = True
    pool.withhold(mask)
    assert not pool.free[0, 2] and not pool.free[3].any()
    assert pool.total_free == 32 - 2 - 1 - 8
    assert pool.free_count.tolist() == [5, 8, 8, 0]
    assert pool.rack_free.tolist() == [13, 8]
    assert pool.partial_free == 5


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["consolidate", "first-fit", "interference-aware", "topology"]),
    st.integers(1, 20),
    st.sets(st.integers(0, 7), max_size=8),
    st.lists(st.integers(0, 8), min_size=8, max_size=8),
    st.sampled_from([None, 1, 2]),
)
def test_placements_stay_on_allowed_nodes(
    name: str, gpus: int, allowed: set[int], busy_counts: list[int], num_nodes: int | None
) -> None:
    """A job's usable nodes (partition, --exclude, features, CPUs, memory) bound every placement."""
    cluster = make_cluster(2, 4)
    pool = GpuPool(cluster)
    busy(pool, {n: list(range(c)) for n, c in enumerate(busy_counts) if c})
    job = JobView("j", gpus, 0.0, num_nodes=num_nodes, allowed_nodes=frozenset(allowed))
    view = ClusterView(now=0.0, cluster=cluster, pool=pool.readonly(), pending=[job], running=[])
    got = make_placement(name).place(job, pool, view)
    free_allowed = sum(int(pool.free_count[n]) for n in allowed)
    if got is not None:
        check_valid(got, pool, gpus)
        assert set(got.nodes) <= allowed
    if gpus > free_allowed:
        assert got is None
    unrestricted = make_placement(name).place(JobView("j", gpus, 0.0, num_nodes=num_nodes), pool, view)
    if allowed == set(range(8)):
        assert (got is None) == (unrestricted is None)
    if name == "first-fit":  # backfill's reservation bound agrees with the placement
        assert make_placement(name).bound(job, pool, 0.0).possible() == (got is not None)


def test_placement_made_equals_the_dataclass_constructor() -> None:
    from slurmrl.cluster.model import NodeAlloc, Placement

    allocs = (NodeAlloc(3, (0, 1)), NodeAlloc(1, (5,)))
    made, built = Placement.made(allocs), Placement(allocs)
    assert made == built and hash(made) == hash(built)
    assert made.nodes == built.nodes == (3, 1) and made.num_gpus == 3
    assert Placement.of([(3, [1, 0]), (1, [5])]) == built


@given(node=st.integers(0, 63), gpus=st.sets(st.integers(0, 7), min_size=1))
def test_placement_on_node_equals_of(node: int, gpus: set[int]) -> None:
    from slurmrl.cluster.model import Placement

    ordered = sorted(gpus)
    fast, built = Placement.on_node(node, ordered), Placement.of([(node, ordered)])
    assert fast == built and hash(fast) == hash(built)
    assert fast.nodes == built.nodes == (node,) and fast.allocs == built.allocs
