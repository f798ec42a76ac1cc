"""What the Harmony placement agent reads: one job to place, the jobs queued behind it, the nodes.

Only what Slurm knows goes in: GPUs asked, wait, the user's time limit, the
model class where the trace records one (its interference sensitivity from
the public performance zoo, as the ``interference-aware`` heuristic reads
it), each node's free GPUs and the jobs running there. Never a duration.

Arrays, for a cluster of N nodes, a window of K jobs and M model classes:

* ``job`` ``[F_j]``: the job being placed;
* ``window`` ``[K, F_j]``: the next jobs in the ordering's rank (the encoder's input);
* ``nodes`` ``[N, F_n]``: one row per node, partly relative to the job (fits, conflict);
* ``globals`` ``[S]``: cluster-wide scalars;
* ``mask`` ``[N]``: nodes that can host the whole job now (the pointer's choices).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.perf.zoo import MODELS
from slurmrl.policy.placement.interference import zoo_sensitivity
from slurmrl.policy.view import JobView
from slurmrl.rl.config_fields import names, only, section, whole

LOG_TIME = 15.0  # log1p(seconds) / LOG_TIME is in [0, 1] up to about 38 days
JOB_BASE = ("valid", "log_gpus", "gpus_over_node", "sensitivity", "log_wait", "log_limit")
NODE_BASE = (
    "valid",
    "free",
    "fits",
    "exact",
    "empty",
    "left_after",
    "sum_sensitivity",
    "max_sensitivity",
    "jobs",
    "conflict",
)
GLOBALS = ("free_fraction", "empty_nodes", "log_pending", "log_running", "whole_node_demand", "mean_load")


@dataclass(frozen=True)
class HarmonyObs:
    """Observation layout; saved with every checkpoint."""

    window: int = 8  # K: jobs of the ordering's rank the encoder reads
    models: tuple[str, ...] = tuple(sorted(MODELS))

    @property
    def job_features(self) -> int:
        return len(JOB_BASE) + len(self.models) + 1  # +1: unknown model

    @property
    def node_features(self) -> int:
        return len(NODE_BASE) + len(self.models) + 1

    @property
    def global_features(self) -> int:
        return len(GLOBALS)

    def to_dict(self) -> dict[str, object]:
        return {"window": self.window, "models": list(self.models)}

    @classmethod
    def from_dict(cls, data: object) -> HarmonyObs:
        table = section(data, "obs")
        only(table, {"window", "models"}, "obs")
        return cls(whole(table, "window", "obs"), names(table, "models", "obs"))


@dataclass(frozen=True)
class PlacementObs:
    """One decision's arrays (see the module docstring)."""

    job: np.ndarray
    window: np.ndarray
    nodes: np.ndarray
    globals: np.ndarray
    mask: np.ndarray
    # Added to the network's logits before the choice (``[N]``, or None): a
    # heuristic-led placement's bonus on the node the heuristic would take.
    prior: np.ndarray | None = None


class NodeLoads:
    """Per node: running jobs' count, summed and largest sensitivity, and model-class counts.

    Built once per view from its running jobs; jobs started during the pass
    are added with :meth:`add`, so later decisions of the pass see them.
    :meth:`in_pool` leaves out the jobs a scratch pool has released.
    """

    def __init__(
        self, cluster: Cluster, obs: HarmonyObs, running: Iterable[JobView], held: np.ndarray
    ) -> None:
        n = len(cluster.nodes)
        self.jobs = np.zeros(n, dtype=np.float32)
        self.sum_sens = np.zeros(n, dtype=np.float32)
        self.max_sens = np.zeros(n, dtype=np.float32)
        self.models = np.zeros((n, len(obs.models) + 1), dtype=np.float32)
        self._index = {m: i for i, m in enumerate(obs.models)}
        self._held = held.copy()  # GPUs of the counted jobs: the view's busy ones, then the pass's starts
        self._placed = [(j, j.placement) for j in running if j.placement is not None]
        for job, placement in self._placed:
            self._count(job, placement.nodes)

    def model_column(self, model: str) -> int:
        return self._index.get(model, len(self._index))

    def add(self, job: JobView, placement: Placement) -> None:
        self._count(job, placement.nodes)
        self._placed.append((job, placement))
        for a in placement.allocs:
            self._held[a.node, list(a.gpus)] = True

    def _count(self, job: JobView, nodes: Iterable[int]) -> None:
        s = sensitivity(job.model)
        col = self.model_column(job.model)
        for node in nodes:
            self.jobs[node] += 1.0
            self.sum_sens[node] += s
            self.max_sens[node] = max(self.max_sens[node], s)
            self.models[node, col] += 1.0

    def in_pool(self, pool: GpuPool) -> NodeLoads:
        """These loads less the jobs whose GPUs ``pool`` has free on a node.

        A backfill reservation asks where its head would go on a scratch
        pool that has released every job ending before then, a preemptive
        pass on one without its victims; those jobs are no load on their
        nodes at that time. Usually nothing is released: ``self`` itself.
        Otherwise a copy for that one observation, never to :meth:`add` to.
        """
        touched = np.flatnonzero((pool.free & self._held).any(axis=1))
        if not touched.size:
            return self
        loads = copy.copy(self)
        for name in ("jobs", "sum_sens", "max_sens", "models"):
            column = getattr(self, name).copy()
            column[touched] = 0.0
            setattr(loads, name, column)
        free = pool.free
        gone = set(touched.tolist())
        for job, placement in self._placed:
            kept = [
                a.node for a in placement.allocs if a.node in gone and not free[a.node, list(a.gpus)].all()
            ]
            if kept:
                loads._count(job, kept)
        return loads


_SENS: dict[str, float] = {}


def sensitivity(model: str) -> float:
    """The zoo's interference sensitivity of a recorded model class; 0 when unknown."""
    found = _SENS.get(model)
    if found is None:
        found = _SENS[model] = float(zoo_sensitivity(model))
    return found


def job_row(job: JobView, obs: HarmonyObs, node_gpus: int, now: float, col: int) -> np.ndarray:
    row = np.zeros(obs.job_features, dtype=np.float32)
    limit = job.time_limit
    row[: len(JOB_BASE)] = (
        1.0,
        math.log2(1 + job.gpus) / 6.0,
        min(job.gpus / max(node_gpus, 1), 2.0),
        sensitivity(job.model),
        math.log1p(max(now - job.submit_time, 0.0)) / LOG_TIME,
        math.log1p(limit) / LOG_TIME if limit is not None else 0.0,
    )
    row[len(JOB_BASE) + col] = 1.0
    return row


def observe(
    job: JobView,
    queue: Sequence[JobView],
    pool: GpuPool,
    loads: NodeLoads,
    obs: HarmonyObs,
    *,
    now: float,
    pending: int,
    running: int,
    eligible: np.ndarray,
) -> PlacementObs:
    """The arrays for placing ``job``; ``eligible`` marks nodes the job may use at all."""
    cluster = pool.cluster
    g_max = max(cluster.max_gpus_per_node, 1)
    cur = job_row(job, obs, g_max, now, loads.model_column(job.model))
    win = np.zeros((obs.window, obs.job_features), dtype=np.float32)
    others = [j for j in queue if j.job_id != job.job_id][: obs.window]
    for i, other in enumerate(others):
        win[i] = job_row(other, obs, g_max, now, loads.model_column(other.model))
    free = pool.free_count.astype(np.float32)
    size = cluster.node_gpus.astype(np.float32)
    fits = (free >= job.gpus) & eligible
    base = len(NODE_BASE)
    nodes = np.zeros((len(free), obs.node_features), dtype=np.float32)
    nodes[:, 0] = size > 0
    nodes[:, 1] = free / g_max
    nodes[:, 2] = fits
    nodes[:, 3] = fits & (free == job.gpus)
    nodes[:, 4] = (free == size) & (size > 0)
    nodes[:, 5] = np.where(fits, (free - job.gpus) / g_max, 0.0)
    nodes[:, 6] = loads.sum_sens / 4.0
    nodes[:, 7] = loads.max_sens
    nodes[:, 8] = loads.jobs / g_max
    nodes[:, 9] = cur[3] * loads.sum_sens
    nodes[:, base:] = loads.models / g_max
    total = max(cluster.total_gpus, 1)
    whole = sum(1 for j in others if j.gpus >= g_max) / max(len(free), 1)
    glob = np.array(
        [
            pool.total_free / total,
            float(np.mean(free == size)) if len(free) else 0.0,
            math.log1p(pending) / 10.0,
            math.log1p(running) / 10.0,
            whole,
            float(loads.sum_sens.mean()) / 4.0 if len(free) else 0.0,
        ],
        dtype=np.float32,
    )
    return PlacementObs(cur, win, nodes, glob, fits.copy())
