"""Co-location never speeds a job up and more neighbours never help."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster.model import Cluster, Node, Placement, Rack, islands_for
from slurmrl.perf import MODELS, PerformanceModel
from slurmrl.perf.model import INTERFERENCE_FLOOR, NODE_CONTENTION, JobTerms

NODES = tuple(Node(f"n{i}", i, i // 2, 8, "V100", islands_for("nvswitch", 8)) for i in range(4))
CLUSTER = Cluster("c", (Rack("r0", 0, (0, 1)), Rack("r1", 1, (2, 3))), NODES)
PM = PerformanceModel(CLUSTER)
MODEL_NAMES = sorted(MODELS)

neighbour = st.tuples(
    st.sampled_from(MODEL_NAMES),
    st.lists(
        st.tuples(st.integers(0, 3), st.sets(st.integers(0, 7), min_size=1, max_size=8)),
        min_size=1,
        max_size=3,
    ).map(lambda pairs: Placement.of(dict(pairs).items())),
)


def test_alone_is_one() -> None:
    p = Placement.of([(0, range(4))])
    assert PM.interference_factor("resnet50", p, []) == 1.0
    assert PM.speed("resnet50", p, []) == 1.0


def test_distant_single_node_jobs_do_not_interfere() -> None:
    mine = Placement.of([(0, range(4))])
    other = Placement.of([(3, range(8))])
    assert PM.interference_factor("resnet50", mine, [("vgg16", other)]) == 1.0


def test_node_sharing_anchor() -> None:
    """Two highly sensitive jobs splitting one node lose NODE_CONTENTION scaled by both."""
    mine = Placement.of([(0, range(4))])
    other = Placement.of([(0, range(4, 8))])
    sens = MODELS["vgg16"].interference_sensitivity * MODELS["a3c"].interference_sensitivity
    expected = math.exp(-NODE_CONTENTION * sens)
    assert PM.interference_factor("vgg16", mine, [("a3c", other)]) == pytest.approx(expected)
    # No pair loses more than the worst pair Gandiva measured (two LM jobs, 19%).
    assert expected > 0.81


def test_each_extra_neighbour_costs_more() -> None:
    mine = Placement.of([(0, [0])])
    one = [("resnet50", Placement.of([(0, [1])]))]
    two = [*one, ("resnet50", Placement.of([(0, [2, 3])]))]
    assert PM.interference_factor("resnet50", mine, two) < PM.interference_factor("resnet50", mine, one) < 1.0


@settings(max_examples=200, deadline=None)
@given(
    model=st.sampled_from(MODEL_NAMES),
    mine=neighbour.map(lambda t: t[1]),
    first=st.lists(neighbour, max_size=6),
    extra=neighbour,
)
def test_factor_bounded_and_monotone_in_neighbours(
    model: str, mine: Placement, first: list[tuple[str, Placement]], extra: tuple[str, Placement]
) -> None:
    before = PM.interference_factor(model, mine, first)
    after = PM.interference_factor(model, mine, [*first, extra])
    assert INTERFERENCE_FLOOR <= after <= before <= 1.0
    assert (
        PM.speed(model, mine, [*first, extra])
        <= PM.speed(model, mine, first)
        <= PM.placement_factor(model, mine)
    )


def test_neighbour_order_does_not_matter() -> None:
    mine = Placement.of([(0, range(4)), (2, range(4))])
    ns = [("vgg16", Placement.of([(0, [4, 5])])), ("bert", Placement.of([(1, range(4)), (2, [6, 7])]))]
    assert PM.speed("resnet50", mine, ns) == PM.speed("resnet50", mine, ns[::-1])


def test_speed_from_loads_matches_speed() -> None:
    """The simulator's precomputed path agrees with the neighbour-list API."""
    mine = Placement.of([(0, range(4)), (1, range(4))])
    others = [("vgg16", Placement.of([(0, range(4, 8))])), ("bert", Placement.of([(1, [4])]))]
    nodes = len(PM.cluster.nodes)
    node_load = [0.0] * nodes
    rack_load = [0.0] * len(PM.cluster.racks)
    for model, placement in [("resnet50", mine), *others]:
        terms = PM.job_terms(model, placement)
        for node in terms.nodes:
            node_load[node] += terms.sensitivity
        for rack in terms.racks:
            rack_load[rack] += terms.sensitivity
    fast, _ = PM.speed_from_loads(PM.job_terms("resnet50", mine), node_load, rack_load, 0.0)
    assert fast == pytest.approx(PM.speed("resnet50", mine, others))
    assert fast < PM.placement_factor("resnet50", mine)


def _loads(terms: list[JobTerms]) -> tuple[list[float], list[float], float]:
    """Summed sensitivities per node, per rack and on the core, as the simulator keeps them."""
    node_load = [0.0] * len(PM.cluster.nodes)
    rack_load = [0.0] * len(PM.cluster.racks)
    core = 0.0
    for t in terms:
        for node in t.nodes:
            node_load[node] += t.sensitivity
        for rack in t.racks:
            rack_load[rack] += t.sensitivity
        core += t.sensitivity if t.crosses_core else 0.0
    return node_load, rack_load, core


@settings(max_examples=300, deadline=None)
@given(
    mine=neighbour,
    others=st.lists(neighbour, min_size=1, max_size=14),
    leaving=st.integers(0, 13),
)
def test_slack_minus_relief_bounds_the_slack_after_a_neighbour_leaves(
    mine: tuple[str, Placement], others: list[tuple[str, Placement]], leaving: int
) -> None:
    """What lets the simulator leave a job at the floor unrecomputed when a neighbour leaves."""
    me = PM.job_terms(*mine)
    terms = [PM.job_terms(*o) for o in others]
    gone = terms.pop(leaving % len(terms))
    speed, slack = PM.speed_from_loads(me, *_loads([me, gone, *terms]))
    after, slack_after = PM.speed_from_loads(me, *_loads([me, *terms]))
    assert slack_after >= slack - me.sensitivity * gone.relief - 1e-12
    if slack - me.sensitivity * gone.relief > 1e-9:
        assert speed == after == me.placement_factor * INTERFERENCE_FLOOR
    if slack > 0:
        assert speed == me.placement_factor * INTERFERENCE_FLOOR
