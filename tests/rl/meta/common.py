"""A small workload with recorded model classes, for the meta-learning tests."""

from __future__ import annotations

import numpy as np

from slurmrl.rl.env import trace_workload
from slurmrl.sim.experiment import Workload
from slurmrl.traces.schema import Trace, TraceJob

MODELS = ("resnet18", "resnet50", "lstm", "transformer", "ncf", "a3c")


def small_workload(n: int = 80, seed: int = 3, cluster: str = "1x4x8:v100") -> Workload:
    """``n`` jobs of 1-8 GPUs, each with a model class, arriving every ~30 s."""
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += float(rng.exponential(30.0))
        dur = float(rng.choice([100.0, 1000.0, 8000.0]))
        gpus = int(rng.choice([1, 1, 1, 2, 4, 8]))
        jobs.append(TraceJob(f"j{i}", t, dur, gpus, model=str(rng.choice(MODELS)), time_limit=3 * dur))
    return trace_workload(Trace(tuple(jobs), "test", "test"), cluster)
