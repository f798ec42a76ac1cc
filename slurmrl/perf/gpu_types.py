"""How fast each GPU type trains each zoo model class, relative to one V100.

A trace's durations were measured on its own cluster's GPUs; a job replayed
on an older or newer GPU runs slower or faster by the ratio of the two
types' throughputs for its model. The table gives that throughput per
(type, model) as a multiple of one V100's, each entry tagged with where it
comes from:

* ``gavel``: measured. Gavel (Narayanan et al., OSDI'20) published isolated
  single-GPU throughputs (steps/s) of its job types on K80, P100 and V100
  (repository stanford-futuredata/gavel, ``scheduler/simulation_throughputs.json``,
  key ``null`` of each ``(job, 1)`` entry). The ratios below divide the K80 or
  P100 figure by the V100 one at the batch size the zoo assumes (ResNet-18
  batch 128, ResNet-50 batch 64) or, where the zoo names none, the median of
  Gavel's batch sizes (Transformer 64, LM 20).
* ``nvidia``: measured. NVIDIA DeepLearningExamples (PyTorch) publishes
  single-GPU training throughputs on a DGX A100 (TF32, PyTorch's default for
  FP32 training on A100) and a DGX-1 V100 (FP32); the ratio is the A100 one.
* ``family``: derived. A model class no one measured on that type takes the
  measured ratio of the nearest measured class (an image CNN takes
  ResNet-50's, a recurrent model the LM's, a transformer BERT's or the
  Transformer's); the entry names the class it borrows from.
* ``spec``: derived. Scaled by the vendors' datasheet peaks, FP32 TFLOPS for
  compute-bound classes and memory bandwidth for memory-bound ones (T4:
  8.1 TFLOPS, 320 GB/s; V100 SXM2: 15.7, 900; A100 40GB: 1555 GB/s; K80 one
  GK210 die: 240 GB/s; P100: 732 GB/s; P40: 11.8 TFLOPS, 346 GB/s). No public
  T4 or P40 training throughputs were found for these models, so every T4
  and P40 entry is derived; a T4 at 70 W rarely holds its boost clock, so its
  figures are upper estimates.

Gavel's "Recommendation" job (an autoencoder on ML-20M) is not used for the
zoo's NeuMF class: it is a different model, and its measured V100 figure is
below its K80 and P100 ones (23.3 vs 32.9 and 48.9 steps/s at batch 512),
a host-bound artefact rather than a property of the GPUs.

Cluster specs spell types freely ("V100M16", "Tesla V100-SXM2", "A800-SXM4",
"12GB" mapped to "k80" by the trace readers); :func:`canonical_gpu` maps them
to the table's keys and returns None for a type the table lacks ("G2", "A10",
"H800", ""), which the performance model treats as its reference type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType

from slurmrl.perf.zoo import MODELS

GPU_TYPES = ("k80", "p40", "p100", "t4", "v100", "a100")
BASE_TYPE = "v100"  # every throughput below is a multiple of one V100's


@dataclass(frozen=True, slots=True)
class Throughput:
    """One table entry: speed relative to a V100, and how it was obtained."""

    relative: float
    source: str  # base (V100 itself) | gavel | nvidia | family:<model> | spec:<flops|bandwidth>

    @property
    def measured(self) -> bool:
        return self.source in ("gavel", "nvidia")


# Datasheet ratios to a V100 SXM2 (NVIDIA Tesla K80, P40, P100, T4, V100 and
# A100 datasheets; figures in the module docstring).
_T4_FLOPS = 8.1 / 15.7
_T4_BW = 320 / 900
_A100_BW = 1555 / 900
_K80_BW = 240 / 900
_P100_BW = 732 / 900
_P40_PER_P100_BW = 346 / 732  # P40 vs P100: similar FP32 peak, half the bandwidth

# Gavel OSDI'20 measured ratios (K80/V100, P100/V100), steps/s in the key ``null``.
_GAVEL: dict[str, tuple[float, float]] = {
    "resnet18": (1.807 / 17.995, 11.675 / 17.995),  # ResNet-18, batch 128
    "resnet50": (0.619 / 4.395, 2.619 / 4.395),  # ResNet-50, batch 64
    "transformer": (1.752 / 8.618, 5.092 / 8.618),  # Transformer, batch 64
    "lstm": (17.142 / 64.742, 58.173 / 64.742),  # LM, batch 20
    "cyclegan": (0.505 / 4.426, 2.403 / 4.426),  # CycleGAN
    "a3c": (3.439 / 7.176, 5.681 / 7.176),  # A3C
}

# NVIDIA DeepLearningExamples (PyTorch READMEs): single-GPU A100 TF32 over
# V100 FP32 training throughput.
_NVIDIA_A100: dict[str, float] = {
    "resnet50": 938 / 367,  # ConvNets/resnet50v1.5: 938 vs 367 img/s (DGX-1 16GB)
    "yolov3": 364.27 / 107.22,  # Detection/SSD: 364.27 vs 107.22 img/s
    "deepspeech2": 42.18 / 12.22,  # SpeechRecognition/Jasper: 42.18 vs 12.22 (V100 32GB, batch 32)
    "bert": 61.5 / 12.0,  # LanguageModeling/BERT fine-tuning: 61.5 vs 12 seq/s
    "transformer": 179245 / 4 / (30204 / 4),  # Translation/Transformer, 4 GPUs: per-GPU tokens/s
    "ncf": 22.59 / 10.42,  # Recommendation/NCF: 22.59M vs 10.42M samples/s
}

# Which measured class a class without its own measurement borrows from, and
# whether it is compute- or memory-bound (for the datasheet scaling).
_FAMILY: dict[str, tuple[str, str, str]] = {
    # model: (borrow K80/P100 from, borrow A100 from, bound)
    "resnet50": ("resnet50", "resnet50", "flops"),
    "resnet18": ("resnet18", "resnet50", "flops"),
    "vgg16": ("resnet50", "resnet50", "flops"),
    "vgg11": ("resnet50", "resnet50", "flops"),
    "vgg19": ("resnet50", "resnet50", "flops"),
    "alexnet": ("resnet50", "resnet50", "flops"),
    "resnet101": ("resnet50", "resnet50", "flops"),
    "resnet152": ("resnet50", "resnet50", "flops"),
    "inception3": ("resnet50", "resnet50", "flops"),
    "inception4": ("resnet50", "resnet50", "flops"),
    "googlenet": ("resnet50", "resnet50", "flops"),
    "mobilenet_v2": ("resnet50", "resnet50", "bandwidth"),
    "yolov3": ("resnet50", "yolov3", "flops"),
    "cyclegan": ("cyclegan", "resnet50", "flops"),
    "transformer": ("transformer", "transformer", "flops"),
    "bert": ("transformer", "bert", "flops"),
    "gpt2": ("transformer", "bert", "flops"),
    "lstm": ("lstm", "", "bandwidth"),
    "deepspeech2": ("lstm", "deepspeech2", "bandwidth"),
    "ncf": ("", "ncf", "bandwidth"),
    "a3c": ("a3c", "", "bandwidth"),
}


def _older(model: str, index: int, bw_ratio: float) -> Throughput:
    """K80 (index 0) or P100 (index 1): Gavel's measurement, a family's, or bandwidth."""
    borrow = _FAMILY[model][0]
    if borrow == model and model in _GAVEL:
        return Throughput(_GAVEL[model][index], "gavel")
    if borrow:
        return Throughput(_GAVEL[borrow][index], f"family:{borrow}")
    return Throughput(bw_ratio, "spec:bandwidth")


def _a100(model: str) -> Throughput:
    borrow = _FAMILY[model][1]
    if borrow == model:
        return Throughput(_NVIDIA_A100[model], "nvidia")
    if borrow:
        return Throughput(_NVIDIA_A100[borrow], f"family:{borrow}")
    return Throughput(_A100_BW, "spec:bandwidth")


def _t4(model: str) -> Throughput:
    bound = _FAMILY[model][2]
    return Throughput(_T4_FLOPS if bound == "flops" else _T4_BW, f"spec:{bound}")


def _p40(p100: Throughput, model: str) -> Throughput:
    # GP102 matches GP100's FP32 peak but has under half its memory bandwidth.
    bound = _FAMILY[model][2]
    ratio = p100.relative * (1.0 if bound == "flops" else _P40_PER_P100_BW)
    return Throughput(ratio, f"spec:{bound}")


def _build() -> dict[str, dict[str, Throughput]]:
    table: dict[str, dict[str, Throughput]] = {t: {} for t in GPU_TYPES}
    for model in MODELS:
        k80 = _older(model, 0, _K80_BW)
        p100 = _older(model, 1, _P100_BW)
        table["k80"][model] = k80
        table["p100"][model] = p100
        table["p40"][model] = _p40(p100, model)
        table["t4"][model] = _t4(model)
        table["v100"][model] = Throughput(1.0, "base")
        table["a100"][model] = _a100(model)
    return table


THROUGHPUTS: MappingProxyType[str, MappingProxyType[str, Throughput]] = MappingProxyType(
    {t: MappingProxyType(row) for t, row in _build().items()}
)

_NON_ALNUM = re.compile(r"[^a-z0-9]")
# Longest prefixes first, so "a100" is not read as something shorter.
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("a100", "a100"),
    ("a800", "a100"),  # the export variant of the A100: same SMs, slower NVLink
    ("v100", "v100"),
    ("p100", "p100"),
    ("p40", "p40"),
    ("k80", "k80"),
)


def canonical_gpu(name: str) -> str | None:
    """The table key for a GPU type as cluster specs spell it, or None if unknown.

    Case, punctuation and a vendor prefix are ignored and memory/form-factor
    suffixes dropped ("Tesla V100-SXM2-32GB", "V100M16" -> ``v100``); "t4" must
    match whole, so that "T400" is not read as a T4.
    """
    key = _NON_ALNUM.sub("", name.lower())
    for prefix in ("nvidia", "tesla"):
        if key.startswith(prefix):
            key = key[len(prefix) :]
    if key == "t4" or key.startswith("t416"):
        return "t4"
    for prefix, canonical in _PREFIXES:
        if key.startswith(prefix):
            return canonical
    return None


def relative_throughput(gpu: str, model: str) -> float:
    """Throughput of ``model`` (a zoo key) on table type ``gpu``, a V100 being 1."""
    return THROUGHPUTS[gpu][model].relative
