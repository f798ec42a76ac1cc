"""Placement factor: ideal is exactly 1, worse links never run faster."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster.model import Cluster, LinkTier, Node, Placement, Rack, islands_for
from slurmrl.errors import ConfigError
from slurmrl.perf import MODELS, LinkBandwidths, PerformanceModel


def small_cluster(intra: str = "nvlink:4", racks: int = 2, nodes_per_rack: int = 2, gpus: int = 8) -> Cluster:
    nodes: list[Node] = []
    rack_list: list[Rack] = []
    for r in range(racks):
        members = []
        for _ in range(nodes_per_rack):
            i = len(nodes)
            nodes.append(Node(f"n{i}", i, r, gpus, "V100", islands_for(intra, gpus)))
            members.append(i)
        rack_list.append(Rack(f"r{r}", r, tuple(members)))
    return Cluster("small", tuple(rack_list), tuple(nodes))


CLUSTER = small_cluster()
PM = PerformanceModel(CLUSTER)
MODEL_NAMES = sorted(MODELS)
ALLREDUCE = [m for m in MODEL_NAMES if MODELS[m].comm == "allreduce"]


@st.composite
def placements(draw: st.DrawFn, size: int | None = None) -> Placement:
    """Any non-empty set of distinct GPUs on CLUSTER (exactly ``size`` if given)."""
    gpus = st.tuples(st.integers(0, len(CLUSTER.nodes) - 1), st.integers(0, 7))
    low, high = (size, size) if size is not None else (1, 16)
    chosen = draw(st.sets(gpus, min_size=low, max_size=high))
    by_node: dict[int, list[int]] = {}
    for node, gpu in chosen:
        by_node.setdefault(node, []).append(gpu)
    return Placement.of(sorted(by_node.items()))


def moved(placement: Placement, targets: list[int]) -> Placement:
    """The same per-node GPU sets relocated onto ``targets`` (distinct nodes)."""
    return Placement.of((t, a.gpus) for t, a in zip(targets, placement.allocs, strict=True))


def test_single_gpu_job_is_always_ideal() -> None:
    for model in MODEL_NAMES:
        assert PM.placement_factor(model, Placement.of([(3, [5])])) == 1.0


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_ideal_placements_have_factor_exactly_one(model: str) -> None:
    island = Placement.of([(0, [0, 1, 2, 3])])  # one NVLink quad
    node = Placement.of([(1, range(8))])  # best possible for 8 GPUs on nvlink:4 nodes
    rack = Placement.of([(0, range(8)), (1, range(8))])  # one rack, fewest nodes
    assert PM.placement_factor(model, island) == 1.0
    assert PM.placement_factor(model, node) == 1.0
    assert PM.placement_factor(model, rack) == 1.0
    assert PM.iteration_time(model, node) == PM.ideal_placement_time(model, 8)


def test_split_quad_is_slower_than_one_island() -> None:
    split = Placement.of([(0, [2, 3, 4, 5])])  # crosses the two NVLink quads over PCIe
    assert CLUSTER.worst_link(split) == LinkTier.PCIE
    assert PM.placement_factor("resnet50", split) < 1.0


@settings(max_examples=150, deadline=None)
@given(placement=placements(), model=st.sampled_from(MODEL_NAMES))
def test_factor_is_in_unit_interval(placement: Placement, model: str) -> None:
    factor = PM.placement_factor(model, placement)
    assert 0.0 < factor <= 1.0


@settings(max_examples=150, deadline=None)
@given(placement=placements(), model=st.sampled_from(MODEL_NAMES), data=st.data())
def test_moving_to_a_farther_tier_never_raises_the_factor(
    placement: Placement, model: str, data: st.DataObject
) -> None:
    k = len(placement.allocs)
    targets = data.draw(st.permutations(range(len(CLUSTER.nodes))))[:k]
    other = moved(placement, list(targets))
    a, b = sorted((placement, other), key=CLUSTER.worst_link)
    if CLUSTER.worst_link(a) < CLUSTER.worst_link(b):
        assert PM.placement_factor(model, b) <= PM.placement_factor(model, a)


@settings(max_examples=150, deadline=None)
@given(a=placements(), model=st.sampled_from(ALLREDUCE), data=st.data())
def test_allreduce_farther_tier_is_never_faster(a: Placement, model: str, data: st.DataObject) -> None:
    """For ring all-reduce the time depends only on GPU count and worst link."""
    b = data.draw(placements(size=a.num_gpus))
    fa, fb = PM.placement_factor(model, a), PM.placement_factor(model, b)
    ta, tb = CLUSTER.worst_link(a), CLUSTER.worst_link(b)
    if ta < tb:
        assert fb <= fa
    elif ta == tb:
        assert fa == fb


def test_parameter_server_suffers_more_than_allreduce_across_nodes() -> None:
    spread = Placement.of([(0, range(4)), (2, range(4))])
    # Same gradient size, so only the exchange pattern differs.
    vgg_ps = PM.iteration_time("vgg16", spread) - MODELS["vgg16"].compute_ms_per_iter / 1000
    ring = (
        2 * 7 / 8 * MODELS["vgg16"].gradient_bytes / (LinkBandwidths().effective(LinkTier.CROSS_RACK) * 1e9)
    )
    assert vgg_ps == pytest.approx(ring * 4 / 1.75)


def test_faster_network_shrinks_the_penalty() -> None:
    spread = Placement.of([(0, range(4)), (2, range(4))])
    slow = PerformanceModel(CLUSTER, LinkBandwidths.ethernet(10))
    fast = PerformanceModel(CLUSTER, LinkBandwidths().with_overrides(network_efficiency=1.0))
    assert slow.placement_factor("bert", spread) < PM.placement_factor("bert", spread)
    assert PM.placement_factor("bert", spread) < fast.placement_factor("bert", spread)


def test_bad_bandwidths_are_reported_by_field() -> None:
    with pytest.raises(ConfigError, match="switch"):
        LinkBandwidths(switch=0)
    with pytest.raises(ConfigError, match="unknown link tier 'nvlnk'"):
        LinkBandwidths().with_overrides(nvlnk=100.0)
    with pytest.raises(ConfigError, match="network_efficiency"):
        LinkBandwidths(network_efficiency=1.5)


def test_ideal_on_single_rack_cluster_and_oversized_request() -> None:
    one_rack = PerformanceModel(small_cluster("nvswitch", racks=1, nodes_per_rack=2))
    assert one_rack.ideal_placement_time("resnet50", 16) > one_rack.ideal_placement_time("resnet50", 8)
    # More GPUs than exist is still priced (as if larger), not an error.
    assert one_rack.ideal_placement_time("resnet50", 64) >= one_rack.ideal_placement_time("resnet50", 16)


def test_unknown_model_name_is_resolved_not_rejected() -> None:
    p = Placement.of([(0, range(4)), (2, range(4))])
    assert PM.placement_factor("ResNet-50 (batch size 64)", p) == PM.placement_factor("resnet50", p)
    assert 0 < PM.placement_factor("some-internal-model", p) <= 1


def test_spread_parameter_server_job_is_clamped_not_sped_up() -> None:
    """Four PS shards on four NICs beat two, but the factor still stops at 1."""
    pm = PerformanceModel(small_cluster("nvswitch", racks=1, nodes_per_rack=4))
    spread = Placement.of([(n, range(4)) for n in range(4)])
    assert pm.iteration_time("vgg16", spread) < pm.ideal_placement_time("vgg16", 16)
    assert pm.placement_factor("vgg16", spread) == 1.0
