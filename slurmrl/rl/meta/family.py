"""The workload family meta-training draws its tasks from.

A task is a workload built from a pool of recorded jobs (a training scenario
whose trace records each job's model class, the Gavel msr per-VC traces):

* **model mix**: class weights drawn from a symmetric Dirichlet over the
  classes the pool records; every job keeps its own recorded class, so no
  label the trace does not record reaches the policy;
* **job sizes**: a tilt ``w(g) = g ** beta`` on the GPUs asked, ``beta``
  drawn uniformly (negative: more single-GPU jobs; positive: more 4- and
  8-GPU jobs, which crowd nodes and make placement matter more);
* **arrival rate**: the pool's own inter-arrival gaps of a random stretch of
  the trace (so its burstiness is kept) divided by a log-uniform factor.

Jobs are resampled with replacement from the pool under the product of the
mix and size weights, with their recorded duration, GPUs, class and time
limit; the task keeps the pool's cluster. Everything is seeded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from slurmrl.errors import ConfigError
from slurmrl.sim.experiment import Workload, offered_load, prepare
from slurmrl.traces.schema import Trace, TraceJob

DEFAULT_POOLS = ("gavel-msr-6c71a0", "gavel-msr-b436b2")


@dataclass(frozen=True)
class FamilyConfig:
    """The family's ranges; saved with every meta-training run."""

    pools: tuple[str, ...] = DEFAULT_POOLS
    jobs: int = 256  # jobs per task window
    mix_concentration: float = 0.7  # Dirichlet alpha over recorded model classes
    size_tilt: tuple[float, float] = (-0.5, 1.0)  # beta range of w(g) = g ** beta
    rate_scale: tuple[float, float] = (0.7, 1.6)  # arrival-rate factor range (log-uniform)

    def __post_init__(self) -> None:
        if self.jobs < 2:
            raise ConfigError(f"family jobs must be at least 2, got {self.jobs}")
        if self.mix_concentration <= 0:
            raise ConfigError(f"mix_concentration must be positive, got {self.mix_concentration}")
        lo, hi = self.rate_scale
        if not 0 < lo <= hi:
            raise ConfigError(f"rate_scale must be 0 < low <= high, got {self.rate_scale}")
        if self.size_tilt[0] > self.size_tilt[1]:
            raise ConfigError(f"size_tilt must be low <= high, got {self.size_tilt}")


@dataclass(frozen=True)
class TaskSpec:
    """One drawn task: which pool, and the mix, size tilt and rate it was drawn with."""

    pool: int
    mix: tuple[tuple[str, float], ...]  # (model class, weight), weights sum to 1
    size_tilt: float
    rate_scale: float
    start: int  # first arrival gap taken from the pool's timeline
    seed: int  # the job resampling's own seed


@dataclass(frozen=True)
class Pool:
    """A training workload's jobs grouped for resampling."""

    workload: Workload
    classes: tuple[str, ...]  # recorded model classes, sorted
    gaps: np.ndarray  # the trace's inter-arrival times, seconds


def load_pools(names: Sequence[str], *, seed: int = 0) -> list[Pool]:
    """The pools' workloads; a pool must record a model class for its jobs."""
    return [pool_of(prepare(scenario=name, seed=seed)) for name in names]


def pool_of(workload: Workload) -> Pool:
    """``workload`` as a pool; it must record a model class for some of its jobs."""
    jobs = workload.trace.jobs
    classes = tuple(sorted({j.model for j in jobs if j.model}))
    if not classes:
        raise ConfigError(f"workload '{workload.label}' records no model class: it cannot vary a model mix")
    if len(jobs) < 2:
        raise ConfigError(f"workload '{workload.label}' has fewer than 2 jobs: no arrival gaps to resample")
    times = np.array([j.submit_time for j in jobs], dtype=np.float64)
    return Pool(workload, classes, np.diff(times))


class FamilySampler:
    """Draws :class:`TaskSpec` values and builds their workloads."""

    def __init__(self, config: FamilyConfig = FamilyConfig(), *, pools: Sequence[Pool] | None = None) -> None:
        self.config = config
        self.pools = list(pools) if pools is not None else load_pools(config.pools)
        if not self.pools:
            raise ConfigError("the workload family needs at least one pool")

    def sample(self, rng: np.random.Generator) -> TaskSpec:
        cfg = self.config
        p = int(rng.integers(len(self.pools)))
        pool = self.pools[p]
        weights = rng.dirichlet(np.full(len(pool.classes), cfg.mix_concentration))
        lo, hi = cfg.rate_scale
        rate = float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
        tilt = float(rng.uniform(*cfg.size_tilt))
        start = int(rng.integers(0, max(len(pool.gaps) - cfg.jobs + 2, 1)))
        mix = tuple((c, float(w)) for c, w in zip(pool.classes, weights, strict=True))
        return TaskSpec(p, mix, tilt, rate, start, int(rng.integers(2**31)))

    def build(self, spec: TaskSpec) -> Workload:
        """The task's workload: ``jobs`` resampled jobs on the pool's timeline, rate-scaled."""
        pool = self.pools[spec.pool]
        jobs = pool.workload.trace.jobs
        probs = job_weights(jobs, dict(spec.mix), spec.size_tilt)
        rng = np.random.default_rng(spec.seed)
        n = self.config.jobs
        picks = rng.choice(len(jobs), size=n, replace=True, p=probs)
        gaps = pool.gaps[spec.start : spec.start + n - 1]
        if len(gaps) < n - 1:  # a pool shorter than a window: wrap its gaps
            gaps = np.resize(pool.gaps, n - 1)
        times = np.concatenate([[0.0], np.cumsum(gaps / spec.rate_scale)])
        new = tuple(
            replace(jobs[i], job_id=f"task-{k}", submit_time=float(t))
            for k, (i, t) in enumerate(zip(picks, times, strict=True))
        )
        trace = Trace(new, source=pool.workload.trace.source, format=pool.workload.trace.format)
        label = f"{pool.workload.label}~mix{_mix_tag(spec)}~g^{spec.size_tilt:.2f}~x{spec.rate_scale:.2f}"
        cluster = pool.workload.cluster
        return replace(
            pool.workload,
            trace=trace,
            label=label,
            arrival_scale=spec.rate_scale,
            offered_load=offered_load(trace, cluster),
            target_load=None,
        )


def job_weights(jobs: Sequence[TraceJob], mix: dict[str, float], tilt: float) -> np.ndarray:
    """Resampling probabilities: class weight spread over the class's jobs, times ``gpus ** tilt``.

    A job of a class the mix leaves out (or with no recorded class) gets no weight.
    """
    counts: dict[str, int] = {}
    for j in jobs:
        counts[j.model] = counts.get(j.model, 0) + 1
    w = np.array(
        [mix.get(j.model, 0.0) / counts[j.model] * float(j.num_gpus) ** tilt for j in jobs], dtype=np.float64
    )
    total = w.sum()
    if not total > 0:
        raise ConfigError("the task's model mix gives no job any weight")
    return w / total


def _mix_tag(spec: TaskSpec) -> str:
    top = max(spec.mix, key=lambda cw: cw[1])
    return f"[{top[0]}:{top[1]:.2f}]"
