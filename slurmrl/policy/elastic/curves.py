"""What an elastic policy may know about a job's scaling: its range and its model's curve.

Deployable: a job's model class counts only where the view carries one
(the trace recorded it, or the user declared it to Slurm); every other job
follows the generic curve of :mod:`slurmrl.perf.scaling`. Nothing here
reads a duration.
"""

from __future__ import annotations

import math
from dataclasses import replace

from slurmrl.cluster.model import Cluster
from slurmrl.perf import PerformanceModel
from slurmrl.perf.scaling import ScalingModel
from slurmrl.policy.view import JobView


class Curves:
    """Speedups of jobs at each GPU count on one cluster (built once per cluster)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.scaling = ScalingModel(PerformanceModel(cluster, speed_model="placement"))

    def speedup(self, job: JobView, gpus: int) -> float:
        """Throughput on ``gpus`` GPUs over one GPU's, by the job's visible model class."""
        return self.scaling.throughput(job.model, gpus) / self.scaling.throughput(job.model, 1)

    def gain_per_gpu(self, job: JobView, have: int, want: int) -> float:
        """GPU-equivalents of progress each extra GPU brings going from ``have`` to ``want``."""
        return (self.speedup(job, want) - self.speedup(job, have)) / (want - have)


def bounds(job: JobView) -> tuple[int, int]:
    """(min, max) GPUs the job may run on: just ``gpus`` for a rigid job."""
    return job.gpu_range if job.gpu_range is not None else (job.gpus, job.gpus)


def next_up(job: JobView, have: int) -> int | None:
    """The next larger count to try: the next power of two, capped at the range's top; None at the top."""
    top = bounds(job)[1]
    if have >= top:
        return None
    return min(top, 1 << have.bit_length())


def next_down(job: JobView, have: int) -> int | None:
    """The next smaller count: the largest power of two below ``have``, not under the range's bottom."""
    low = bounds(job)[0]
    if have <= low:
        return None
    return max(low, 1 << ((have - 1).bit_length() - 1))


def sized(job: JobView, gpus: int, cluster: Cluster) -> JobView:
    """``job`` asking for ``gpus`` GPUs, its packed node count scaled to match: what placements take."""
    if gpus == job.gpus:
        return job
    nodes = None if job.num_nodes is None else max(1, math.ceil(gpus / max(cluster.max_gpus_per_node, 1)))
    return replace(job, gpus=gpus, num_nodes=nodes)
