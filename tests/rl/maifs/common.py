"""A small elastic workload, random MAIFS weights and partly busy pools, for the MAIFS tests."""

from __future__ import annotations

import numpy as np
import torch

from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.rl.env import trace_workload
from slurmrl.rl.maifs.obs import MaifsObs
from slurmrl.rl.nets.config import MaifsNetConfig
from slurmrl.rl.nets.torch_nets import MaifsNet
from slurmrl.sim.experiment import Workload
from slurmrl.traces.schema import Trace, TraceJob

CLUSTER = "2x2x8:v100"  # 2 racks x 2 nodes x 8 GPUs


def small_trace(n: int = 80, seed: int = 3) -> Trace:
    """``n`` jobs of 1-16 GPUs arriving every ~40 s, durations 100 s to 2 h."""
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += float(rng.exponential(40.0))
        dur = float(rng.choice([100.0, 900.0, 7200.0]))
        gpus = int(rng.choice([1, 1, 2, 3, 4, 8, 16]))
        jobs.append(TraceJob(f"j{i}", t, dur, gpus, user=f"u{i % 4}", vc=f"vc{i % 2}", time_limit=3 * dur))
    return Trace(tuple(jobs), "test", "test")


def small_workload(n: int = 80, seed: int = 3) -> Workload:
    return trace_workload(small_trace(n, seed), CLUSTER)


def random_net(obs: MaifsObs | None = None, seed: int = 0, hidden: int = 16, scale: float = 50.0) -> MaifsNet:
    """Random weights, the option head scaled up so options really differ."""
    obs = obs or MaifsObs()
    torch.manual_seed(seed)
    net = MaifsNet(MaifsNetConfig(obs.job_features, obs.option_features, obs.global_features, hidden))
    with torch.no_grad():
        net.option[-1].weight.mul_(scale)
    return net


def cluster() -> Cluster:
    return load_cluster(CLUSTER)


def busy_pool(c: Cluster, rng: np.random.Generator, busy: float) -> GpuPool:
    """A pool with about ``busy`` of its GPUs taken, at random."""
    pool = GpuPool(c)
    for node in c.nodes:
        taken = [g for g in range(node.gpus) if rng.random() < busy]
        if taken:
            pool.allocate(Placement.of([(node.index, taken)]))
    return pool


def view_of(c: Cluster, pool: GpuPool, pending: list[JobView], now: float = 1000.0) -> ClusterView:
    return ClusterView(now=now, cluster=c, pool=pool.readonly(), pending=pending, running=[])
