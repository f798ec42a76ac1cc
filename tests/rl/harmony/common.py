"""A small workload with recorded model classes, and random Harmony weights, for the tests."""

from __future__ import annotations

import numpy as np
import torch

from slurmrl.rl.env import trace_workload
from slurmrl.rl.harmony.features import HarmonyObs
from slurmrl.rl.nets.config import HarmonyNetConfig
from slurmrl.rl.nets.torch_nets import HarmonyNet
from slurmrl.sim.experiment import Workload
from slurmrl.traces.schema import Trace, TraceJob

MODELS = ("resnet18", "resnet50", "lstm", "transformer", "ncf", "a3c")


def small_trace(n: int = 60, seed: int = 5, scale: float = 1.0) -> Trace:
    """``n`` jobs of 1-16 GPUs with model classes; ``scale`` multiplies every duration."""
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += float(rng.exponential(30.0))
        dur = float(rng.choice([100.0, 1000.0, 8000.0])) * scale
        gpus = int(rng.choice([1, 1, 1, 2, 4, 8, 16]))
        jobs.append(
            TraceJob(
                f"j{i}",
                t,
                dur,
                gpus,
                vc=f"vc{i % 2}",
                model=str(rng.choice(MODELS)),
                time_limit=3 * dur / scale,
            )
        )
    return Trace(tuple(jobs), "test", "test")


def small_workload(n: int = 60, seed: int = 5, scale: float = 1.0) -> Workload:
    return trace_workload(small_trace(n, seed, scale), "1x4x8:v100")


DEFAULT_OBS = HarmonyObs()


def random_net(obs: HarmonyObs = DEFAULT_OBS, seed: int = 0, hidden: int = 32) -> HarmonyNet:
    torch.manual_seed(seed)
    net = HarmonyNet(HarmonyNetConfig(obs.job_features, obs.node_features, obs.global_features, hidden))
    with torch.no_grad():  # larger output weights than the init, so node scores really differ
        net.attn_v.weight.mul_(100.0)
    return net
