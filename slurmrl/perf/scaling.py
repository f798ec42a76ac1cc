"""How a data-parallel job's throughput grows with its GPU count: the curves elastic jobs follow.

A rigid job runs on the GPUs it asked for, so its trace duration says all
there is to say. An elastic job may run on another count, and its run time
then follows from how its throughput scales. The model is Pollux's
throughput model (Qiao et al., OSDI'21, Section 3.2) in the form this
project's speed model already uses:

* Compute per iteration grows linearly with the per-GPU batch ``m``:
  ``T_compute = alpha + beta * m`` (Pollux's ``T_grad``). Only the ratio
  ``alpha / (alpha + beta * m0)`` at the class's typical per-GPU batch
  ``m0`` matters here (``fixed_fraction``); the absolute time is the zoo's
  ``compute_ms_per_iter`` (one V100 at ``m0``).
* Gradient exchange over the slowest link of the best placement this
  cluster allows for ``n`` GPUs, from the link bandwidths of
  :mod:`slurmrl.perf.links` (ring all-reduce or parameter servers, exactly
  as :class:`~slurmrl.perf.model.PerformanceModel` prices placements). No
  overlap with compute (Pollux's gamma = 1), as in the placement model.
* Batch-size limits. Replicas keep the per-GPU batch ``m0`` (weak scaling)
  until the global batch reaches ``max_batch``, the largest batch the model
  is known to train well with; beyond it the per-GPU batch shrinks to
  ``max_batch / n`` (strong scaling), down to ``min_local_batch``. Replicas
  beyond ``max_batch // min_local_batch`` add nothing: Pollux's simulator
  caps a job's replicas at exactly that count (petuum/adaptdl
  ``osdi21-artifact``, ``simulator/simulator.py``, ``max_replicas``).

Throughput is the global batch over the iteration time, in samples per
second. Pollux's statistical efficiency (progress per sample falling as the
batch grows) is not modelled: the batch never exceeds ``max_batch``, which
for Pollux's six classes is the largest batch its artifact validated to the
same accuracy, so within the cap a sample counts as a sample. That makes the
curves optimistic for large counts of the classes without such a figure.

Where the figures come from. Pollux's artifact ships per-application
step-time measurements (``simulator/traces/<app>/placements.csv``: step
time per per-GPU batch, measured on its T4 testbed) and the batch sizes it
validated (``validation-<batch>.csv``). For its six applications the fixed
fraction is read off the single-replica rows (alpha and beta of a line
through the smallest and largest per-GPU batch), and the per-GPU bounds and
largest batch are the artifact's. Every other class gets the documented
generic curve: the median of those fixed fractions (0.2) and a largest batch
of 1,024 samples, the low end of the batch sizes at which Shallue et al.
(JMLR'19, "Measuring the Effects of Data Parallelism on Neural Network
Training") saw perfect scaling end across their workloads. Jobs whose model
is unknown (a policy that sees no model class) use that curve on a median
zoo class (:data:`GENERIC_PROFILE`).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from slurmrl.perf.model import PerformanceModel
from slurmrl.perf.zoo import ModelProfile, _profile


@dataclass(frozen=True, slots=True)
class ScalingProfile:
    """Batch-size limits and compute split of one model class."""

    local_batch: int  # per-GPU batch m0 the zoo's compute time is for
    min_local_batch: int  # smallest per-GPU batch worth running
    max_batch: int  # largest global batch known to train well
    fixed_fraction: float  # alpha / (alpha + beta * m0): compute that does not shrink with the batch
    source: str

    @property
    def useful_gpus(self) -> int:
        """Replicas beyond this count add nothing (the per-GPU batch would fall below its minimum)."""
        return max(1, self.max_batch // self.min_local_batch)


def _measured(
    local_batch: int, min_local: int, max_batch: int, alpha_s: float, beta_s: float, source: str
) -> ScalingProfile:
    """A profile from a measured line ``step = alpha + beta * m`` (single replica)."""
    return ScalingProfile(
        local_batch, min_local, max_batch, alpha_s / (alpha_s + beta_s * local_batch), source
    )


_POLLUX = "petuum/adaptdl osdi21-artifact simulator/traces"
# The six Pollux applications, keyed by the zoo class they train. alpha and
# beta: (step time at the largest - at the smallest single-replica per-GPU
# batch) / batch difference, and the intercept, from placements.csv rows
# with placement "1" (deepspeech2 has none: compute = step - sync of its
# 6-node rows in scalability.csv). Per-GPU bounds are placements.csv's
# local_bsz range (yolov3's max local batch is set to 8 in the artifact's
# applications.py); max_batch is the largest validation-<batch>.csv.
SCALING: MappingProxyType[str, ScalingProfile] = MappingProxyType(
    {
        # imagenet: step 0.147 s at 20, 0.924 s at 200 -> alpha 0.061 s, beta 4.32 ms; batches 200-800.
        "resnet50": _measured(64, 20, 800, 0.061, 0.00432, f"{_POLLUX}/imagenet (Pollux OSDI'21)"),
        # cifar10: 0.0428 s at 32, 0.702 s at 1024 -> alpha 0.0215 s, beta 0.665 ms; batches 256-2048.
        "resnet18": _measured(128, 32, 2048, 0.0215, 0.000665, f"{_POLLUX}/cifar10 (Pollux OSDI'21)"),
        # bert: 0.455 s at 4, 0.922 s at 12 -> alpha 0.222 s, beta 58.3 ms; batches 12-384.
        "bert": _measured(12, 4, 384, 0.222, 0.0583, f"{_POLLUX}/bert (Pollux OSDI'21)"),
        # yolov3: 0.267 s at 4, 0.573 s at 16 -> alpha 0.165 s, beta 25.5 ms; batches 8-128.
        "yolov3": _measured(16, 4, 128, 0.165, 0.0255, f"{_POLLUX}/yolov3 (Pollux OSDI'21)"),
        # deepspeech2: compute 0.563 s at 10, 2.557 s at 80 (6 nodes) -> alpha 0.278 s, beta 28.5 ms; batches 160-640.
        "deepspeech2": _measured(32, 10, 640, 0.278, 0.0285, f"{_POLLUX}/deepspeech2 (Pollux OSDI'21)"),
        # ncf: Pollux's simulator never gives NCF more than one replica (max_replicas = 1
        # in simulator.py): its 32,768-sample batch fits one GPU and gains nothing from more.
        "ncf": ScalingProfile(32768, 32768, 32768, 0.2, f"{_POLLUX}/ncf (Pollux OSDI'21: one replica)"),
    }
)

# The curve of every other class, and of jobs whose class is unknown.
GENERIC_SCALING = ScalingProfile(
    32,
    8,
    1024,
    0.2,
    "median Pollux fixed fraction; max batch 1024 from Shallue et al. JMLR'19 (low end of perfect-scaling limits)",
)
# A model class nobody named: the median of the 12 core zoo classes' sizes
# (44M parameters) and V100 step times (177.5 ms), trained with all-reduce.
GENERIC_PROFILE: ModelProfile = _profile(
    "generic", 44.0, 177.5, "allreduce", 0.5, "median of the zoo's 12 core classes"
)


def scaling_profile(model_class: str) -> ScalingProfile:
    """The scaling entry of a zoo class (the generic curve when it has none)."""
    return SCALING.get(model_class, GENERIC_SCALING)


class ScalingModel:
    """Throughput of a model class at each GPU count on one cluster, cached.

    ``model`` is a zoo name or alias as :meth:`PerformanceModel.profile`
    resolves it; the empty string means "unknown" and takes the generic
    curve on :data:`GENERIC_PROFILE`.
    """

    def __init__(self, perf: PerformanceModel) -> None:
        self.perf = perf
        self._cache: dict[tuple[str, int], float] = {}

    def profiles(self, model: str) -> tuple[ModelProfile, ScalingProfile]:
        if not model:
            return GENERIC_PROFILE, GENERIC_SCALING
        prof = self.perf.profile(model)
        return prof, scaling_profile(prof.name)

    def useful_gpus(self, model: str) -> int:
        return self.profiles(model)[1].useful_gpus

    def throughput(self, model: str, gpus: int) -> float:
        """Samples per second on ``gpus`` GPUs under the best placement this cluster allows."""
        key = (model, gpus)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._throughput(*self.profiles(model), gpus)
        return found

    def _throughput(self, prof: ModelProfile, scaling: ScalingProfile, gpus: int) -> float:
        n = max(1, min(gpus, scaling.useful_gpus))
        batch = min(n * scaling.local_batch, max(scaling.max_batch, scaling.local_batch))
        per_gpu = batch / n
        f = scaling.fixed_fraction
        compute = prof.compute_ms_per_iter / 1000.0 * (f + (1.0 - f) * per_gpu / scaling.local_batch)
        tier, counts = self.perf.ideal_shape(n)
        return batch / (compute + self.perf.exchange_seconds(prof, tier, counts))

    def count_factor(self, model: str, gpus: int, traced: int) -> float:
        """Speed on ``gpus`` GPUs relative to the traced count: run time scales by its inverse."""
        if gpus == traced:
            return 1.0
        return self.throughput(model, gpus) / self.throughput(model, traced)
