"""The deep-learning model classes the simulator knows how fast to run.

Traces rarely say what a job trained, yet how much a bad placement hurts
depends on the model: a large gradient over a slow link dominates a short
compute step, a small one does not. The zoo gives every job a concrete model
class so placement and co-location penalties can be computed from physical
quantities (gradient bytes, compute time) instead of one global constant.

Parameter counts are the published sizes of the reference architectures.
Gradient sizes follow from them at fp32 (4 bytes per parameter), in MiB.
Compute times are per training iteration on one V100 at a typical batch and
are approximate: they are rounded from published throughputs or scaled from
ResNet-50 by per-sample FLOPs where no direct figure exists; each entry says
which. ``interference_sensitivity`` (how much the job leans on resources a
node or the core network shares: host CPU for input decoding, the PCIe root
complex, memory bandwidth, NIC) is measured for two classes only (the LSTM
language model, 1, and ResNet-50, 0.1, from Gandiva OSDI'18) and a
modelling choice in [0, 0.9] for the rest.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from types import MappingProxyType
from typing import Literal

BYTES_PER_PARAM = 4  # fp32 gradients, as in the data-parallel jobs of the Philly/Gavel era
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ModelProfile:
    name: str
    params_millions: float
    gradient_mb: float  # MiB exchanged per iteration (one full gradient)
    compute_ms_per_iter: float  # one V100, typical batch, no communication
    comm: Literal["allreduce", "ps"]
    interference_sensitivity: float  # 0 = immune to shared node/switch, 1 = most affected
    source: str

    @property
    def gradient_bytes(self) -> float:
        return self.gradient_mb * MIB


def _profile(
    name: str,
    params_millions: float,
    compute_ms: float,
    comm: Literal["allreduce", "ps"],
    sensitivity: float,
    source: str,
) -> ModelProfile:
    grad_mb = round(params_millions * 1e6 * BYTES_PER_PARAM / MIB, 1)
    return ModelProfile(name, params_millions, grad_mb, compute_ms, comm, sensitivity, source)


# Communication style: "ps" marks the classes that era-typical jobs trained with
# TensorFlow parameter servers: the VGG family and AlexNet, whose gradients are
# dominated by huge fully connected layers (Tiresias models exactly these TF
# jobs as PS jobs; SymbioticLab/Tiresias simulator/models.py lists a 392 MB
# FC tensor for VGG), and A3C, whose asynchronous workers push to a shared
# parameter copy (Mnih et al., ICML'16). Everything else uses ring all-reduce
# (Horovod/PyTorch DDP, as in the Gavel and Pollux job implementations).
_ZOO: tuple[ModelProfile, ...] = (
    # ---- the 12 core classes -------------------------------------------------
    _profile(
        "resnet50",
        25.6,
        175.0,
        "allreduce",
        0.1,
        # 25.6M params: He et al. CVPR'16 / torchvision. ~365 img/s fp32 on V100
        # (NVIDIA DeepLearningExamples, PyTorch ResNet-50 v1.5 README) -> batch 64 ~ 175 ms.
        # Sensitivity low, measured: Gandiva (OSDI'18, Section 3) saw no loss for
        # ResNet-50 next to a language-model job on another GPU of its server.
        "He et al. CVPR'16; NVIDIA DeepLearningExamples ResNet-50 v1.5 (approx.)",
    ),
    _profile(
        "resnet18",
        11.2,
        30.0,
        "allreduce",
        0.6,
        # CIFAR-10 variant as in Gavel's and Pollux's ResNet-18 jobs (11.2M params).
        # ~4,300 img/s fp32 on V100 at batch 128 -> ~30 ms (approx., FLOP-scaled).
        "He et al. CVPR'16 (CIFAR variant); Gavel/Pollux ResNet-18 job (approx.)",
    ),
    _profile(
        "vgg16",
        138.4,
        265.0,
        "ps",
        0.9,
        # 138.4M params (Simonyan & Zisserman ICLR'15) = 528 MiB, matching the
        # 526.8 MB tensor total in Tiresias simulator/models.py. ~240 img/s fp32
        # V100 at batch 64 -> ~265 ms (approx., 3.8x ResNet-50 FLOPs).
        "Simonyan & Zisserman ICLR'15; SymbioticLab/Tiresias simulator/models.py (approx.)",
    ),
    _profile(
        "bert",
        110.0,
        300.0,
        "allreduce",
        0.5,
        # BERT-base, 110M params (Devlin et al. NAACL'19); SQuAD fine-tuning as in
        # Pollux's BERT job; ~40 seq/s fp32 V100 at seq 384, batch 12 (approx.).
        "Devlin et al. NAACL'19 (BERT-base); Pollux bert job (approx.)",
    ),
    _profile(
        "gpt2",
        124.0,
        900.0,
        "allreduce",
        0.5,
        # GPT-2 small, 124M params (Radford et al. 2019). 6*N*tokens FLOPs for
        # batch 8 x 1024 tokens at ~40% of V100 fp32 peak -> ~0.9 s (approx.).
        "Radford et al. 2019 (GPT-2 small, 124M); FLOP estimate (approx.)",
    ),
    _profile(
        "transformer",
        48.0,
        120.0,
        "allreduce",
        0.5,
        # Transformer-base-like translation model on Multi30k as in Gavel's
        # Transformer job: d_model 512, 6+6 layers, ~48M params with its vocab
        # (Vaswani et al. NeurIPS'17). Per-iteration time approx.
        "Vaswani et al. NeurIPS'17; Gavel Transformer job (approx.)",
    ),
    _profile(
        "lstm",
        50.0,
        60.0,
        "allreduce",
        1.0,
        # Sensitivity 1, measured: the zoo's most sensitive class. Gandiva
        # (OSDI'18, Section 3) saw two language-model jobs on one server each
        # lose 19%, the anchor of NODE_CONTENTION in slurmrl/perf/model.py.
        # Word-level LSTM LM on Wikitext-2 (Gavel's "LM" job, PyTorch
        # word_language_model): 2 layers x 650 units, 33,278-word vocab, untied
        # embedding/decoder -> ~50M params. Per-iteration time approx.
        "Gavel LM job / pytorch examples word_language_model, medium config (approx.)",
    ),
    _profile(
        "deepspeech2",
        40.0,
        400.0,
        "allreduce",
        0.6,
        # DeepSpeech2-style recurrent speech model as in Pollux's deepspeech2 job
        # (Amodei et al. ICML'16); size and step time approx.
        "Amodei et al. ICML'16; Pollux deepspeech2 job (approx.)",
    ),
    _profile(
        "yolov3",
        61.9,
        250.0,
        "allreduce",
        0.7,
        # 61.9M params (Redmon & Farhadi 2018, Darknet-53 backbone); batch 16 at
        # 416 px on V100 ~ 250 ms (approx.). Image decoding/augmentation on host.
        "Redmon & Farhadi 2018 (YOLOv3); Pollux yolov3 job (approx.)",
    ),
    _profile(
        "ncf",
        2.0,
        15.0,
        "allreduce",
        0.7,
        # NeuMF (He et al. WWW'17) on MovieLens-1M as in Pollux's ncf job: ~2M
        # params; tiny compute, embedding lookups are memory-bandwidth bound.
        "He et al. WWW'17 (NeuMF); Pollux ncf job (approx.)",
    ),
    _profile(
        "cyclegan",
        28.3,
        180.0,
        "allreduce",
        0.4,
        # Two ResNet-9 generators (11.4M each) + two PatchGAN discriminators
        # (2.8M each) = 28.3M (Zhu et al. ICCV'17 reference implementation);
        # batch 1 at 256 px ~ 180 ms on V100 (approx.).
        "Zhu et al. ICCV'17 (CycleGAN); Gavel CycleGAN job (approx.)",
    ),
    _profile(
        "a3c",
        1.1,
        40.0,
        "ps",
        0.9,
        # Atari A3C actor-critic with an LSTM head, ~1.1M params (Mnih et al.
        # ICML'16). Rollouts run on host CPUs, so CPU sharing hurts most.
        "Mnih et al. ICML'16 (A3C); Gavel A3C job (approx.)",
    ),
    # ---- image models named by Tiresias/Chronus benchmark traces --------------
    # Params from torchvision model docs / the original papers; compute times
    # scaled from ResNet-50 (175 ms, 4.1 GFLOPs/img) by per-image FLOPs, with a
    # floor for small models whose speed is memory-bound (approx.).
    _profile(
        # Batch 256 (tf_cnn_benchmarks-style AlexNet jobs use large batches).
        "alexnet",
        61.1,
        100.0,
        "ps",
        0.9,
        "Krizhevsky et al. NeurIPS'12; torchvision (61.1M); Tiresias PS job (approx.)",
    ),
    _profile(
        "vgg11",
        132.9,
        170.0,
        "ps",
        0.9,
        "Simonyan & Zisserman ICLR'15; torchvision (132.9M); Tiresias PS job (approx.)",
    ),
    _profile(
        "vgg19",
        143.7,
        320.0,
        "ps",
        0.9,
        "Simonyan & Zisserman ICLR'15; torchvision (143.7M); Tiresias PS job (approx.)",
    ),
    _profile(
        "resnet101",
        44.5,
        290.0,
        "allreduce",
        0.8,
        "He et al. CVPR'16; torchvision (44.5M), 7.8 GFLOPs/img (approx.)",
    ),
    _profile(
        "resnet152",
        60.2,
        410.0,
        "allreduce",
        0.8,
        "He et al. CVPR'16; torchvision (60.2M), 11.5 GFLOPs/img (approx.)",
    ),
    _profile(
        "inception3",
        27.2,
        255.0,
        "allreduce",
        0.8,
        "Szegedy et al. CVPR'16; torchvision inception_v3 (27.2M), 299 px (approx.)",
    ),
    _profile(
        "inception4",
        42.7,
        530.0,
        "allreduce",
        0.8,
        "Szegedy et al. AAAI'17 (Inception-v4, 42.7M), 12.3 GFLOPs/img (approx.)",
    ),
    _profile(
        "googlenet",
        6.6,
        70.0,
        "allreduce",
        0.7,
        "Szegedy et al. CVPR'15; torchvision (6.6M), memory-bound floor (approx.)",
    ),
    _profile(
        "mobilenet_v2",
        3.5,
        70.0,
        "allreduce",
        0.7,
        "Sandler et al. CVPR'18; torchvision (3.5M), memory-bound floor (approx.)",
    ),
)

MODELS: MappingProxyType[str, ModelProfile] = MappingProxyType({m.name: m for m in _ZOO})

# Mix used when a trace names no model. Philly logs carry no model names; the
# public Philly-derived benchmark traces are image-heavy (Gavel's msr_seed0
# traces: ResNet-18/50 and CycleGAN ~ 40% of jobs, LM and Transformer ~ 38%,
# recommendation ~ 19%, A3C ~ 4%; Chronus' Philly MIX traces: CNNs only), and
# Jeon et al. (ATC'19) describe the Philly workload as image, language and
# speech models. This is a stated choice: half vision, a third language.
ASSIGNMENT_MIX: tuple[tuple[str, float], ...] = (
    ("resnet50", 0.18),
    ("resnet18", 0.12),
    ("vgg16", 0.10),
    ("yolov3", 0.05),
    ("cyclegan", 0.05),
    ("bert", 0.08),
    ("gpt2", 0.04),
    ("transformer", 0.10),
    ("lstm", 0.10),
    ("deepspeech2", 0.06),
    ("ncf", 0.07),
    ("a3c", 0.05),
)
_MIX_NAMES = tuple(n for n, _ in ASSIGNMENT_MIX)
_MIX_CUMULATIVE = tuple(accumulate(w for _, w in ASSIGNMENT_MIX))


def model_for(job_id: str, seed: int) -> str:
    """A model class for a job whose trace names none.

    Derived from a keyed hash of ``(seed, job_id)`` rather than a random
    stream, so a job keeps its model whatever order jobs are visited in and
    however many other jobs a run includes; ``hash()`` is avoided because it
    is salted per process.
    """
    digest = hashlib.blake2b(f"{seed}\x1f{job_id}".encode(), digest_size=8).digest()
    u = int.from_bytes(digest, "big") / 2.0**64 * _MIX_CUMULATIVE[-1]
    return _MIX_NAMES[min(bisect_right(_MIX_CUMULATIVE, u), len(_MIX_NAMES) - 1)]


# Normalised spellings (lower case, alphanumerics only) -> zoo key. Covers the
# names used by the Gavel, Pollux, Tiresias and Chronus benchmark traces.
_ALIASES: dict[str, str] = {
    "imagenet": "resnet50",  # Pollux's imagenet job trains ResNet-50
    "cifar": "resnet18",
    "cifar10": "resnet18",  # Pollux's cifar10 job trains ResNet-18
    "vgg": "vgg16",
    "bertbase": "bert",
    "squad": "bert",
    "gpt": "gpt2",
    "gpt2small": "gpt2",
    "lm": "lstm",
    "languagemodel": "lstm",
    "languagemodeling": "lstm",
    "rnn": "lstm",
    "wikitext2": "lstm",
    "translation": "transformer",
    "deepspeech": "deepspeech2",
    "speech": "deepspeech2",
    "yolo": "yolov3",
    "recommendation": "ncf",
    "neumf": "ncf",
    "movielens": "ncf",
    "gan": "cyclegan",
    "rl": "a3c",
    "inception": "inception3",
    "inceptionv3": "inception3",
    "inceptionv4": "inception4",
    "mobilenet": "mobilenet_v2",
    "mobilenetv2": "mobilenet_v2",
}
_BATCH_SUFFIX = re.compile(r"\(.*\)")
_NON_ALNUM = re.compile(r"[^a-z0-9]")
_BY_NORMAL: dict[str, str] = {_NON_ALNUM.sub("", k): k for k in MODELS}
_BY_NORMAL.update(_ALIASES)


def canonical_model(name: str | None, job_id: str | None = None, seed: int = 0) -> str:
    """The zoo key for a model name as traces spell it.

    Spelling, case, punctuation and a trailing ``(batch size N)`` are ignored
    ("ResNet-50 (batch size 32)" -> ``resnet50``). A name the zoo does not know
    (or no name) falls back to :func:`model_for`, keyed on ``job_id`` when given
    and otherwise on the name itself, so the fallback stays deterministic.
    """
    if name:
        key = _NON_ALNUM.sub("", _BATCH_SUFFIX.sub("", name.lower()))
        found = _BY_NORMAL.get(key)
        if found is not None:
            return found
    return model_for(job_id if job_id is not None else (name or ""), seed)
