"""Scaling curves: the throughput elastic jobs get at each GPU count."""

from __future__ import annotations

import pytest

from slurmrl.cluster import load_cluster
from slurmrl.perf import PerformanceModel
from slurmrl.perf.scaling import GENERIC_SCALING, SCALING, ScalingModel, scaling_profile
from slurmrl.perf.zoo import MODELS


@pytest.fixture(scope="module")
def curves() -> ScalingModel:
    return ScalingModel(PerformanceModel(load_cluster("8x8x8:v100"), speed_model="placement"))


def test_every_entry_is_a_zoo_class_with_a_source_and_a_sane_split() -> None:
    for name, entry in SCALING.items():
        assert name in MODELS
        assert entry.source and 0.0 < entry.fixed_fraction < 1.0
        assert entry.min_local_batch <= entry.local_batch <= entry.max_batch or entry.useful_gpus == 1
    assert scaling_profile("vgg16") is GENERIC_SCALING


@pytest.mark.parametrize("model", [*MODELS, ""])
def test_speedups_are_sublinear_and_one_at_one_gpu(curves: ScalingModel, model: str) -> None:
    one = curves.throughput(model, 1)
    for n in (2, 4, 8, 16, 32, 64, 128):
        assert 0.0 < curves.throughput(model, n) / one <= n * (1 + 1e-12)
    assert curves.count_factor(model, 8, 8) == 1.0


@pytest.mark.parametrize("model", ["resnet50", "resnet18", "bert", "yolov3", "deepspeech2", ""])
def test_within_one_nvlink_node_more_gpus_run_faster(curves: ScalingModel, model: str) -> None:
    speeds = [curves.throughput(model, n) for n in (1, 2, 4, 8)]
    assert speeds == sorted(speeds) and speeds[-1] > 4 * speeds[0]


def test_replicas_past_the_batch_cap_add_nothing(curves: ScalingModel) -> None:
    cap = curves.useful_gpus("yolov3")
    assert cap == 128 // 4
    assert curves.throughput("yolov3", 2 * cap) == curves.throughput("yolov3", cap)
    assert curves.useful_gpus("ncf") == 1 and curves.count_factor("ncf", 8, 1) == 1.0


def test_large_batches_scale_worse_than_small_ones(curves: ScalingModel) -> None:
    """Past max_batch the per-GPU batch shrinks: resnet50 (cap 800 = 12.5 x 64) loses efficiency beyond 16."""
    eff = [curves.throughput("resnet50", n) / (n * curves.throughput("resnet50", 1)) for n in (8, 16, 32)]
    assert eff[0] > eff[1] > eff[2]


def test_unknown_models_follow_the_generic_curve_not_a_drawn_class(curves: ScalingModel) -> None:
    assert curves.throughput("", 4) != curves.throughput("resnet50", 4)
    assert curves.useful_gpus("") == GENERIC_SCALING.useful_gpus
    assert curves.throughput("imagenet", 4) == curves.throughput("resnet50", 4)  # aliases resolve
