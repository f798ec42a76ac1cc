"""The three speed models: none, placement (links and GPU types), full (plus co-location)."""

from __future__ import annotations

from slurmrl.cluster.model import Cluster, Node, Placement, Rack, islands_for
from slurmrl.perf import MODELS, PerformanceModel

NODES = tuple(Node(f"n{i}", i, i // 2, 8, "V100", islands_for("nvswitch", 8)) for i in range(4))
CLUSTER = Cluster("c", (Rack("r0", 0, (0, 1)), Rack("r1", 1, (2, 3))), NODES)
SPLIT = Placement.of([(0, range(4)), (2, range(4))])
NEIGHBOUR = [("lstm", Placement.of([(0, [4, 5])]))]


def test_none_is_always_one() -> None:
    pm = PerformanceModel(CLUSTER, speed_model="none")
    for model in MODELS:
        assert pm.static_speed(model, SPLIT) == 1.0
        assert pm.placement_factor(model, SPLIT) == 1.0
    assert not pm.colocation


def test_placement_charges_links_but_ignores_neighbours() -> None:
    pm = PerformanceModel(CLUSTER, speed_model="placement")
    assert not pm.colocation
    assert pm.static_speed("vgg16", SPLIT) < 1.0
    terms = pm.job_terms("lstm", SPLIT)
    assert terms.sensitivity == 0.0 and terms.relief == 0.0
    loads = [9.0] * len(CLUSTER.nodes)
    assert pm.speed_from_loads(terms, loads, [9.0, 9.0], 9.0)[0] == pm.static_speed("lstm", SPLIT)


def test_full_slows_co_located_jobs() -> None:
    pm = PerformanceModel(CLUSTER, speed_model="full")
    assert pm.colocation
    alone = pm.speed("lstm", SPLIT)
    assert alone == pm.static_speed("lstm", SPLIT)
    assert pm.speed("lstm", SPLIT, NEIGHBOUR) < alone


def test_default_constructor_and_simulator_default_differ_only_in_colocation() -> None:
    full, placement = (
        PerformanceModel(CLUSTER, speed_model="full"),
        PerformanceModel(CLUSTER, speed_model="placement"),
    )
    for model in MODELS:
        assert full.static_speed(model, SPLIT) == placement.static_speed(model, SPLIT)
