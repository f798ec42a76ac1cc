"""GPU types: the throughput table and the type factor of a placement."""

from __future__ import annotations

import pytest

from slurmrl.cluster.model import Cluster, Node, Placement, Rack, islands_for
from slurmrl.errors import ConfigError
from slurmrl.perf import MODELS, PerformanceModel
from slurmrl.perf.gpu_types import GPU_TYPES, THROUGHPUTS, canonical_gpu
from slurmrl.perf.model import check_speed_model

MODEL_NAMES = sorted(MODELS)


def cluster_of(*types: str) -> Cluster:
    """One rack, one 8-GPU PCIe node per listed type."""
    nodes = tuple(Node(f"n{i}", i, 0, 8, t, islands_for("pcie", 8)) for i, t in enumerate(types))
    return Cluster("typed", (Rack("r0", 0, tuple(range(len(types)))),), nodes)


ONE_GPU = [Placement.of([(i, [0])]) for i in range(4)]


def test_table_covers_every_type_and_model_with_a_source() -> None:
    for gpu in GPU_TYPES:
        assert set(THROUGHPUTS[gpu]) == set(MODELS)
        for entry in THROUGHPUTS[gpu].values():
            assert entry.relative > 0
            assert entry.source.split(":")[0] in {"base", "gavel", "nvidia", "family", "spec"}


def test_gavel_measured_entries_are_gavels_ratios() -> None:
    # ResNet-50 batch 64: 0.619 / 2.619 / 4.395 steps/s on K80 / P100 / V100.
    assert THROUGHPUTS["k80"]["resnet50"].relative == pytest.approx(0.619 / 4.395)
    assert THROUGHPUTS["p100"]["resnet50"].measured
    assert not THROUGHPUTS["t4"]["resnet50"].measured


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_k80_slower_and_a100_faster_than_v100_for_every_model(model: str) -> None:
    pm = PerformanceModel(cluster_of("v100", "v100", "k80", "a100"))
    v100, k80, a100 = (pm.placement_factor(model, ONE_GPU[i]) for i in (0, 2, 3))
    assert v100 == 1.0
    assert k80 < v100 < a100


@pytest.mark.parametrize("types", [("v100",) * 3, ("k80",) * 3, ("G2",) * 3, ("t4", "T4", "Tesla T4")])
def test_homogeneous_cluster_has_factor_one(types: tuple[str, ...]) -> None:
    pm = PerformanceModel(cluster_of(*types), speed_model="placement")
    for model in MODEL_NAMES:
        assert all(pm.placement_factor(model, p) == 1.0 for p in ONE_GPU[:3])
        assert pm.best_speed(model) == 1.0


def test_reference_is_the_most_common_type_by_gpu_count() -> None:
    pm = PerformanceModel(cluster_of("k80", "k80", "v100"))
    assert pm.reference_type == "k80"
    assert pm.placement_factor("resnet50", ONE_GPU[0]) == 1.0
    assert pm.placement_factor("resnet50", ONE_GPU[2]) == pytest.approx(4.395 / 0.619)


def test_explicit_reference_overrides_the_majority() -> None:
    pm = PerformanceModel(cluster_of("k80", "k80", "v100"), reference_gpu="V100-SXM2-16GB")
    assert pm.placement_factor("resnet50", ONE_GPU[2]) == 1.0
    assert pm.placement_factor("resnet50", ONE_GPU[0]) == pytest.approx(0.619 / 4.395)


def test_unknown_type_runs_as_the_reference() -> None:
    pm = PerformanceModel(cluster_of("v100", "v100", "G2", ""))
    for model in MODEL_NAMES:
        assert pm.placement_factor(model, ONE_GPU[2]) == pm.placement_factor(model, ONE_GPU[3]) == 1.0


def test_unknown_explicit_reference_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="reference GPU type 'h100'"):
        PerformanceModel(cluster_of("v100"), reference_gpu="h100")


def test_slowest_type_sets_the_pace_of_a_mixed_placement() -> None:
    pm = PerformanceModel(cluster_of("v100", "v100", "k80"))
    mixed = Placement.of([(1, range(4)), (2, range(4))])
    same = Placement.of([(0, range(4)), (1, range(4))])
    ratio = pm.placement_factor("bert", mixed) / pm.placement_factor("bert", same)
    assert ratio == pytest.approx(THROUGHPUTS["k80"]["bert"].relative)


def test_link_part_stays_at_most_one_on_a_faster_type() -> None:
    pm = PerformanceModel(cluster_of("v100", "v100", "a100", "a100"), reference_gpu="v100")
    split = Placement.of([(2, range(4)), (3, range(4))])
    assert pm.link_factor("vgg16", split) <= 1.0
    assert pm.placement_factor("vgg16", split) == pytest.approx(
        pm.link_factor("vgg16", split) * THROUGHPUTS["a100"]["vgg16"].relative
    )


def test_best_speed_is_the_fastest_type_on_the_cluster() -> None:
    hetero = PerformanceModel(cluster_of("k80", "k80", "k80", "a100"))
    for model in MODEL_NAMES:
        expected = THROUGHPUTS["a100"][model].relative / THROUGHPUTS["k80"][model].relative
        assert hetero.best_speed(model) == pytest.approx(expected)
        assert hetero.best_speed(model) == pytest.approx(hetero.placement_factor(model, ONE_GPU[3]))
    assert PerformanceModel(cluster_of("k80", "a100"), speed_model="none").best_speed("bert") == 1.0


def test_speed_model_none_charges_no_type() -> None:
    pm = PerformanceModel(cluster_of("v100", "v100", "k80"), speed_model="none")
    assert pm.static_speed("resnet50", ONE_GPU[2]) == 1.0


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("V100M16", "v100"),
        ("V100M32", "v100"),
        ("Tesla V100-SXM2-32GB", "v100"),
        ("A100-SXM4-80GB", "a100"),
        ("A800-SXM4-80GB", "a100"),
        ("k80", "k80"),
        ("P100", "p100"),
        ("p40", "p40"),
        ("T4", "t4"),
        ("G2", None),
        ("A10", None),
        ("H800", None),
        ("T400", None),
        ("", None),
    ],
)
def test_gpu_names_are_normalised(name: str, canonical: str | None) -> None:
    assert canonical_gpu(name) == canonical


def test_bad_speed_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown speed model 'fast'"):
        check_speed_model("fast")
    with pytest.raises(ConfigError, match="speed model"):
        PerformanceModel(cluster_of("v100"), speed_model="Full")
