"""Zoo contents, seeded assignment and alias resolution."""

from __future__ import annotations

import collections

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmrl.perf import MODELS, canonical_model, model_for
from slurmrl.perf.zoo import ASSIGNMENT_MIX

CORE = (
    "resnet50",
    "resnet18",
    "vgg16",
    "bert",
    "gpt2",
    "transformer",
    "lstm",
    "deepspeech2",
    "yolov3",
    "ncf",
    "cyclegan",
    "a3c",
)


def test_core_classes_present_and_sane() -> None:
    for name in CORE:
        m = MODELS[name]
        assert m.name == name
        assert m.comm in ("allreduce", "ps")
        assert 0.0 <= m.interference_sensitivity <= 1.0
        assert m.compute_ms_per_iter > 0 and m.source
        assert m.gradient_mb == pytest.approx(m.params_millions * 1e6 * 4 / 2**20, abs=0.1)


def test_gradient_sizes_match_quoted_figures() -> None:
    assert MODELS["resnet50"].gradient_mb == pytest.approx(98, abs=1)
    assert MODELS["vgg16"].gradient_mb == pytest.approx(528, abs=2)


def test_mix_covers_core_and_sums_to_one() -> None:
    assert sorted(n for n, _ in ASSIGNMENT_MIX) == sorted(CORE)
    assert sum(w for _, w in ASSIGNMENT_MIX) == pytest.approx(1.0)


@given(job_id=st.text(max_size=20), seed=st.integers(0, 2**31))
def test_model_for_is_deterministic_and_in_zoo(job_id: str, seed: int) -> None:
    assert model_for(job_id, seed) == model_for(job_id, seed)
    assert model_for(job_id, seed) in MODELS


def test_model_for_is_order_independent_and_seed_dependent() -> None:
    ids = [f"job-{i}" for i in range(500)]
    forward = {j: model_for(j, 7) for j in ids}
    backward = {j: model_for(j, 7) for j in reversed(ids)}
    assert forward == backward
    assert forward != {j: model_for(j, 8) for j in ids}


def test_model_for_follows_the_mix() -> None:
    counts = collections.Counter(model_for(f"j{i}", 1) for i in range(20_000))
    for name, weight in ASSIGNMENT_MIX:
        assert counts[name] / 20_000 == pytest.approx(weight, abs=0.015)


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("ResNet-50", "resnet50"),
        ("resnet-50", "resnet50"),
        ("ResNet-50 (batch size 128)", "resnet50"),
        ("imagenet", "resnet50"),
        ("cifar10", "resnet18"),
        ("ResNet-18 (batch size 16)", "resnet18"),
        ("Transformer (batch size 64)", "transformer"),
        ("LM (batch size 20)", "lstm"),
        ("Recommendation (batch size 8192)", "ncf"),
        ("A3C", "a3c"),
        ("CycleGAN", "cyclegan"),
        ("GPT-2", "gpt2"),
        ("BERT", "bert"),
        ("deepspeech2", "deepspeech2"),
        ("YOLOv3", "yolov3"),
        ("VGG16", "vgg16"),
        ("inception_v3", "inception3"),
        ("mobilenet_v2", "mobilenet_v2"),
        ("alexnet", "alexnet"),
    ],
)
def test_aliases(raw: str, key: str) -> None:
    assert canonical_model(raw) == key


def test_unknown_names_fall_back_to_seeded_assignment() -> None:
    assert canonical_model("mystery-net", job_id="42", seed=3) == model_for("42", 3)
    assert canonical_model(None, job_id="42", seed=3) == model_for("42", 3)
    assert canonical_model("", job_id="42", seed=3) == model_for("42", 3)
    assert canonical_model("mystery-net") == canonical_model("mystery-net")
