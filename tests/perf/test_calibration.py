"""The placement penalties land in the bands published measurements report.

Gavel (Narayanan et al., OSDI'20) measured unconsolidated multi-GPU V100 jobs
at a median 0.43 of consolidated throughput; multi-machine penalties of
0.6-0.9 are reported elsewhere (e.g. Synergy, Mohan et al., OSDI'22). Our
cross-rack split should sit between those, our same-rack split inside the
0.6-0.9 band, and communication-heavy PS jobs should reach Gavel's 0.43.
"""

from __future__ import annotations

import statistics

import pytest

from slurmrl.cluster.model import Cluster, Node, Placement, Rack, islands_for
from slurmrl.perf import MODELS, PerformanceModel
from slurmrl.perf.zoo import ASSIGNMENT_MIX

CORE = [name for name, _ in ASSIGNMENT_MIX]
GAVEL_UNCONSOLIDATED_MEDIAN = 0.43  # Narayanan et al. OSDI'20
MULTI_MACHINE_BAND = (0.6, 0.9)  # e.g. Synergy, Mohan et al. OSDI'22


def two_by_two(intra: str) -> Cluster:
    nodes = tuple(Node(f"n{i}", i, i // 2, 8, "V100", islands_for(intra, 8)) for i in range(4))
    racks = (Rack("r0", 0, (0, 1)), Rack("r1", 1, (2, 3)))
    return Cluster("cal", racks, nodes)


def median_factor(pm: PerformanceModel, placement: Placement, models: list[str]) -> float:
    return statistics.median(pm.placement_factor(m, placement) for m in models)


@pytest.mark.parametrize("intra", ["nvswitch", "nvlink:4"])
def test_cross_rack_split_between_gavel_and_multi_machine_band(intra: str) -> None:
    pm = PerformanceModel(two_by_two(intra))
    split = Placement.of([(0, range(4)), (2, range(4))])
    for models in (CORE, sorted(MODELS)):
        assert GAVEL_UNCONSOLIDATED_MEDIAN <= median_factor(pm, split, models) <= MULTI_MACHINE_BAND[1]


@pytest.mark.parametrize("intra", ["nvswitch", "nvlink:4"])
def test_same_rack_split_inside_multi_machine_band(intra: str) -> None:
    pm = PerformanceModel(two_by_two(intra))
    split = Placement.of([(0, range(4)), (1, range(4))])
    low, high = MULTI_MACHINE_BAND
    assert low <= median_factor(pm, split, CORE) <= high


def test_cross_rack_is_worse_than_same_rack_on_median() -> None:
    pm = PerformanceModel(two_by_two("nvswitch"))
    rack = Placement.of([(0, range(4)), (1, range(4))])
    core = Placement.of([(0, range(4)), (2, range(4))])
    assert median_factor(pm, core, CORE) < median_factor(pm, rack, CORE)


def test_communication_heavy_jobs_reach_gavels_median() -> None:
    pm = PerformanceModel(two_by_two("nvswitch"))
    split = Placement.of([(0, range(4)), (2, range(4))])
    worst = min(pm.placement_factor(m, split) for m in MODELS)
    assert worst <= GAVEL_UNCONSOLIDATED_MEDIAN
    # Compute-bound models barely notice (none is hit to zero).
    assert pm.placement_factor("inception4", split) > 0.8


# ---- co-location (speed model "full") ----------------------------------------


def test_two_language_models_on_one_server_lose_gandivas_19_percent() -> None:
    """Gandiva (Xiao et al., OSDI'18, Section 3): two LM jobs on one server each lose 19%."""
    pm = PerformanceModel(two_by_two("nvswitch"), speed_model="full")
    a, b = Placement.of([(0, [0])]), Placement.of([(0, [1])])
    assert pm.interference_factor("lstm", a, [("lstm", b)]) == pytest.approx(0.81)
    assert pm.interference_factor("lstm", b, [("lstm", a)]) == pytest.approx(0.81)


def test_resnet50_next_to_a_language_model_barely_notices() -> None:
    """Gandiva: ResNet-50 lost nothing measurable next to an LM job on its server."""
    pm = PerformanceModel(two_by_two("nvswitch"), speed_model="full")
    a, b = Placement.of([(0, [0])]), Placement.of([(0, [1])])
    assert pm.interference_factor("resnet50", a, [("lstm", b)]) > 0.97


def test_no_node_sharing_pair_loses_more_than_gandivas_worst() -> None:
    pm = PerformanceModel(two_by_two("nvswitch"), speed_model="full")
    a, b = Placement.of([(0, [0])]), Placement.of([(0, [1])])
    worst = min(pm.interference_factor(x, a, [(y, b)]) for x in MODELS for y in MODELS)
    assert worst == pytest.approx(0.81)


def test_two_fully_sensitive_jobs_sharing_the_core_lose_mltcps_worst_case() -> None:
    """MLTCP (arXiv 2402.09589): competing for a bottleneck link costs up to 2x per iteration."""
    pm = PerformanceModel(two_by_two("nvswitch"), speed_model="full")
    mine = Placement.of([(0, range(4)), (2, range(4))])
    theirs = Placement.of([(1, range(4)), (3, range(4))])  # other nodes: only the core is shared
    assert pm.interference_factor("lstm", mine, [("lstm", theirs)]) == pytest.approx(0.5)


def test_sharing_only_a_rack_switch_costs_nothing() -> None:
    """A top-of-rack switch is non-blocking: no measurement charges jobs on other nodes."""
    pm = PerformanceModel(two_by_two("nvswitch"), speed_model="full")
    mine = Placement.of([(0, range(2)), (1, range(2))])
    theirs = Placement.of([(0, range(4, 6)), (1, range(4, 6))])
    other_nodes = Placement.of([(2, range(2)), (3, range(2))])
    assert pm.interference_factor("lstm", Placement.of([(0, [0])]), [("lstm", other_nodes)]) == 1.0
    assert pm.interference_factor("lstm", mine, [("lstm", other_nodes)]) == 1.0
    assert pm.interference_factor("lstm", mine, [("lstm", theirs)]) == pytest.approx(0.81)


def test_many_neighbours_never_cost_more_than_mltcps_2x() -> None:
    pm = PerformanceModel(two_by_two("nvswitch"), speed_model="full")
    mine = Placement.of([(0, [0])])
    crowd = [("lstm", Placement.of([(0, [g])])) for g in range(1, 8)]
    assert pm.interference_factor("lstm", mine, crowd) == pytest.approx(0.5)
