"""From a :class:`ClusterView` to the arrays an RL scheduler reads.

The training environment and the deployed policy build their observations
with this one :class:`Featurizer`, so a checkpoint sees in production exactly
what it saw in training. Only what Slurm knows at decision time goes in: GPU
counts, waits, the user's time limit and what finished jobs of the same user
or group actually ran; never a true duration.

Three arrays come out:

* ``jobs`` ``[K, F]``: a window of up to K pending jobs, one row each.
* ``cluster`` ``[C, R, N, G]``: a rack x node x GPU grid with one channel per
  GPU property (exists, free, NVLink island, the holding job's elapsed time,
  time left to its limit, its size, whether it spans nodes), read by a CNN.
* ``globals`` ``[S]``: a few cluster-wide scalars.

The window is filled in two parts: the ``oldest`` longest-waiting jobs (so the
agent can see, and serve, the head of the queue) and then the jobs with the
smallest asked GPU-time (GPUs x time limit) among those that could fit in the
free GPUs. A queue of thousands of jobs thus shrinks to K candidates that
include both the urgent and the quick ones; the agent chooses among them.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.perf.zoo import MODELS
from slurmrl.policy.base import PlacementPolicy
from slurmrl.policy.placement.common import tables
from slurmrl.policy.view import ClusterView, FinishedJob, JobView
from slurmrl.rl.config_fields import names, only, section, whole

# log1p(seconds) divided by this lands in [0, 1] up to about 38 days.
LOG_TIME = 15.0
# Time limit assumed for a job that states none: Slurm's default partition
# MaxTime is often a few days; one day keeps such jobs mid-ranked.
UNKNOWN_LIMIT_S = 86400.0
FEATURE_CAP = 4.0  # every feature is clipped into [0, FEATURE_CAP]

JOB_BASE_FEATURES = (
    "valid",
    "log_gpus",
    "gpus_over_free",
    "log_wait",
    "log_limit",
    "limit_known",
    "user_log_runtime",
    "user_known",
    "user_log_count",
    "group_log_runtime",
    "group_known",
    "fits",
    "link_tier",
    "log_gpu_time",
    "oldest_slot",
    # Ranks within the window (0 = least, 1 = most; ties share a rank): the
    # absolute columns differ between candidates by a few hundredths, too
    # little for a freshly initialised network to tell them apart.
    "wait_rank",
    "gpus_rank",
    "limit_rank",
    "gpu_time_rank",
)
# Absolute columns the rank columns above are computed from, in that order.
_RANKED = ("log_wait", "log_gpus", "log_limit", "log_gpu_time")
CLUSTER_CHANNELS = (
    "exists",
    "free",
    "island",
    "holder_log_elapsed",
    "holder_log_left",
    "holder_log_gpus",
    "holder_multi_node",
)
GLOBAL_FEATURES = (
    "free_fraction",
    "idle_node_fraction",
    "log_pending",
    "log_running",
    "max_node_free",
    "window_fill",
)


@dataclass(frozen=True)
class ObsConfig:
    """What the observation holds; saved with every checkpoint."""

    window: int = 32  # K: pending jobs shown to the agent
    oldest: int = 8  # window slots reserved for the longest-waiting jobs
    models: tuple[str, ...] = tuple(sorted(MODELS))  # model-class vocabulary of the one-hot

    @property
    def job_features(self) -> int:
        return len(JOB_BASE_FEATURES) + len(self.models) + 1  # +1: unknown model

    def to_dict(self) -> dict[str, object]:
        return {"window": self.window, "oldest": self.oldest, "models": list(self.models)}

    @classmethod
    def from_dict(cls, data: object) -> ObsConfig:
        table = section(data, "obs")
        only(table, {"window", "oldest", "models"}, "obs")
        window = whole(table, "window", "obs")
        return cls(window, whole(table, "oldest", "obs", least=0, most=window), names(table, "models", "obs"))


def grid_shape(cluster: Cluster) -> tuple[int, int, int]:
    """(racks, most nodes in a rack, most GPUs in a node)."""
    per_rack = max((len(r.nodes) for r in cluster.racks), default=1)
    return len(cluster.racks), max(per_rack, 1), max(cluster.max_gpus_per_node, 1)


@dataclass
class Observation:
    jobs: np.ndarray  # [K, F] float32
    cluster: np.ndarray  # [C, R, N, G] float32
    globals: np.ndarray  # [S] float32
    mask: np.ndarray  # [K + 1] bool; last = wait
    window: list[JobView]  # the jobs behind the rows, in row order
    placements: list[Placement | None]  # where each window job would go now (topology)

    def as_dict(self) -> dict[str, np.ndarray]:
        return {
            "jobs": self.jobs,
            "cluster": self.cluster,
            "globals": self.globals,
            "mask": self.mask.astype(np.int8),
        }


@dataclass
class RunTimeHistory:
    """Running mean of log run time of finished jobs per key (user or group)."""

    stats: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, run_time: float) -> None:
        if not key:
            return
        s = self.stats.setdefault(key, [0.0, 0.0])
        s[0] += 1.0
        s[1] += math.log1p(max(run_time, 0.0))

    def copy(self) -> RunTimeHistory:
        """An independent copy (each key's running sums are lists)."""
        return RunTimeHistory({key: list(s) for key, s in self.stats.items()})

    def get(self, key: str) -> tuple[float, float]:
        s = self.stats.get(key) if key else None
        if s is None:
            return 0.0, 0.0
        return s[1] / s[0], s[0]


class Featurizer:
    """Builds observations for one cluster; keeps per-user history between calls."""

    def __init__(self, cluster: Cluster, config: ObsConfig, placement: PlacementPolicy) -> None:
        self.cluster = cluster
        self.config = config
        self.placement = placement
        self.model_index = {m: i for i, m in enumerate(config.models)}
        self.users = RunTimeHistory()
        self.groups = RunTimeHistory()
        r, n, g = grid_shape(cluster)
        self.shape = (len(CLUSTER_CHANNELS), r, n, g)
        # Map each (node, gpu) to its grid cell.
        self._cell_rack = np.zeros(len(cluster.nodes), dtype=np.int64)
        self._cell_slot = np.zeros(len(cluster.nodes), dtype=np.int64)
        for rack_i, rack in enumerate(cluster.racks):
            for slot, node in enumerate(rack.nodes):
                idx = node if isinstance(node, int) else node.index
                self._cell_rack[idx] = rack_i
                self._cell_slot[idx] = slot
        width = self.shape[3]
        static = np.zeros((3, r, n, g), dtype=np.float32)
        island_of = tables(cluster).island_of
        for node in cluster.nodes:
            ri, si = self._cell_rack[node.index], self._cell_slot[node.index]
            static[0, ri, si, : node.gpus] = 1.0
            isl = island_of[node.index, : node.gpus].astype(np.float32)
            static[2, ri, si, : node.gpus] = isl / max(float(isl.max()), 1.0)
        self._static = static
        nodes = len(cluster.nodes)
        # What the job holding each GPU looks like (NaN start = free).
        self._start = np.full((nodes, width), np.nan)
        self._end = np.full((nodes, width), np.nan)
        self._gpus = np.zeros((nodes, width), dtype=np.float32)
        self._multi = np.zeros((nodes, width), dtype=np.float32)
        self._held: dict[str, Placement] = {}

    # -- state carried between decision points ---------------------------

    def absorb(self, finished: Sequence[FinishedJob]) -> None:
        for f in finished:
            self.users.add(f.job.user, f.run_time)
            self.groups.add(f.job.group, f.run_time)

    def sync_running(self, running: Iterable[JobView]) -> None:
        """Bring the per-GPU holder arrays in line with the running set."""
        seen: set[str] = set()
        for job in running:
            seen.add(job.job_id)
            if job.job_id not in self._held and job.placement is not None:
                self.hold(job, job.placement, job.start_time if job.start_time is not None else math.nan)
        for job_id in [j for j in self._held if j not in seen]:
            self._clear(self._held.pop(job_id))

    def hold(self, job: JobView, placement: Placement, start: float) -> None:
        self._held[job.job_id] = placement
        limit = job.time_limit if job.time_limit is not None else UNKNOWN_LIMIT_S
        multi = 1.0 if len(placement.allocs) > 1 else 0.0
        for a in placement.allocs:
            idx = list(a.gpus)
            self._start[a.node, idx] = start
            self._end[a.node, idx] = start + limit
            self._gpus[a.node, idx] = job.gpus
            self._multi[a.node, idx] = multi

    def _clear(self, placement: Placement) -> None:
        for a in placement.allocs:
            idx = list(a.gpus)
            self._start[a.node, idx] = np.nan
            self._end[a.node, idx] = np.nan
            self._gpus[a.node, idx] = 0.0
            self._multi[a.node, idx] = 0.0

    # -- one observation ---------------------------------------------------

    def select(
        self, pending: Iterable[JobView], pool: GpuPool, skip: set[str] | None = None
    ) -> list[JobView]:
        """The window: the oldest jobs, then the smallest asked GPU-time among those that may fit."""
        cfg = self.config
        jobs = [j for j in pending if not skip or j.job_id not in skip]
        oldest = jobs[: cfg.oldest]  # pending comes in arrival order
        free = pool.total_free
        rest = jobs[cfg.oldest :]
        fitting = [j for j in rest if j.gpus <= free]
        key = _asked_gpu_time
        smallest = heapq.nsmallest(cfg.window - len(oldest), fitting, key=key)
        if len(smallest) < cfg.window - len(oldest):
            chosen = {j.job_id for j in smallest}
            others = [j for j in rest if j.job_id not in chosen]
            smallest += heapq.nsmallest(cfg.window - len(oldest) - len(smallest), others, key=key)
        return oldest + smallest

    def window_observation(
        self,
        view: ClusterView,
        pool: GpuPool,
        *,
        allow_wait: bool,
        skip: set[str] | None = None,
        started: int = 0,
    ) -> tuple[list[JobView], Observation]:
        """The window and its observation; ``started`` jobs of this pass count as running."""
        window = self.select(view.pending, pool, skip)
        return window, self.observe(view, pool, window, started=started, allow_wait=allow_wait)

    def observe(
        self,
        view: ClusterView,
        pool: GpuPool,
        window: list[JobView],
        *,
        started: int = 0,
        allow_wait: bool = False,
        placed: Sequence[Placement | None] | None = None,
    ) -> Observation:
        """The observation of ``window`` on ``pool``, ``started`` jobs of this pass counted as running.

        ``placed`` is :meth:`place_window`'s answer where the caller has it.
        """
        cfg = self.config
        k = cfg.window
        now = view.now
        jobs = np.zeros((k, cfg.job_features), dtype=np.float32)
        mask = np.zeros(k + 1, dtype=bool)
        placements = list(placed) if placed is not None else self.place_window(view, pool, window)
        free = pool.total_free
        rows: list[list[float]] = []
        model_cols: list[int] = []
        base = len(JOB_BASE_FEATURES)
        unknown_model = len(cfg.models)
        log1p, log2 = math.log1p, math.log2
        tiers: dict[Placement, float] = {}
        for i, job in enumerate(window):
            placement = placements[i]
            tier = 1.0
            if placement is not None:
                tier = tiers.get(placement, -1.0)
                if tier < 0:
                    tier = tiers[placement] = int(self.cluster.worst_link(placement)) / 3.0
            limit = job.time_limit
            u_mean, u_n = self.users.get(job.user)
            g_mean, g_n = self.groups.get(job.group)
            rows.append(
                [
                    1.0,
                    log2(1 + job.gpus) / 8.0,
                    min(job.gpus / max(free, 1), 2.0) / 2.0,
                    log1p(max(now - job.submit_time, 0.0)) / LOG_TIME,
                    log1p(limit) / LOG_TIME if limit is not None else 0.0,
                    1.0 if limit is not None else 0.0,
                    u_mean / LOG_TIME,
                    1.0 if u_n else 0.0,
                    log1p(u_n) / 8.0,
                    g_mean / LOG_TIME,
                    1.0 if g_n else 0.0,
                    1.0 if placement is not None else 0.0,
                    tier,
                    log1p(_asked_gpu_time(job)) / (LOG_TIME + 5.0),
                    1.0 if i < cfg.oldest else 0.0,
                ]
            )
            model_cols.append(base + self.model_index.get(job.model, unknown_model))
            mask[i] = placement is not None
        if rows:
            n = len(rows)
            jobs[:n, : base - len(_RANKED)] = rows
            jobs[:n, base - len(_RANKED) : base] = _ranks(jobs[:n])
            jobs[np.arange(n), model_cols] = 1.0
        mask[k] = allow_wait or not mask[:k].any()
        np.clip(jobs, 0.0, FEATURE_CAP, out=jobs)
        glob = self._globals(pool, len(view.pending) - started, len(view.running) + started, len(window))
        return Observation(jobs, self._grid(pool, now), glob, mask, window, placements)

    def place_window(
        self, view: ClusterView, pool: GpuPool, window: Sequence[JobView]
    ) -> list[Placement | None]:
        """Where the placement would put each window job on ``pool`` now (None: it does not fit).

        Apart from :meth:`observe` so a caller can learn that nothing fits
        without building the arrays. Jobs of one shape (GPUs, nodes, type) get
        one answer: a placement depends on nothing else of the job.
        """
        free = pool.total_free
        cache: dict[tuple[int, int | None, str], Placement | None] = {}
        out: list[Placement | None] = []
        for job in window:
            shape = (job.gpus, job.num_nodes, job.gpu_type)
            if shape not in cache:
                cache[shape] = self.placement.place(job, pool, view) if 0 < job.gpus <= free else None
            out.append(cache[shape])
        return out

    def _grid(self, pool: GpuPool, now: float) -> np.ndarray:
        grid = np.zeros(self.shape, dtype=np.float32)
        grid[0] = self._static[0]
        grid[2] = self._static[2]
        busy = ~pool.free & np.isfinite(self._start)
        elapsed = np.where(busy, np.log1p(np.maximum(now - np.nan_to_num(self._start, nan=now), 0.0)), 0.0)
        left = np.where(busy, np.log1p(np.maximum(np.nan_to_num(self._end, nan=now) - now, 0.0)), 0.0)
        r, s = self._cell_rack, self._cell_slot
        w = pool.free.shape[1]
        grid[1, r, s, :w] = pool.free
        grid[3, r, s, :w] = elapsed / LOG_TIME
        grid[4, r, s, :w] = left / LOG_TIME
        grid[5, r, s, :w] = np.where(busy, np.log2(1 + self._gpus) / 8.0, 0.0)
        grid[6, r, s, :w] = np.where(busy, self._multi, 0.0)
        np.clip(grid, 0.0, FEATURE_CAP, out=grid)
        return grid

    def _globals(self, pool: GpuPool, pending: int, running: int, filled: int) -> np.ndarray:
        total = max(self.cluster.total_gpus, 1)
        node_gpus = self.cluster.node_gpus
        idle = float(np.mean(pool.free_count == node_gpus)) if len(node_gpus) else 0.0
        out = np.array(
            [
                pool.total_free / total,
                idle,
                math.log1p(pending) / 10.0,
                math.log1p(running) / 10.0,
                float(pool.free_count.max()) / max(self.shape[3], 1) if len(node_gpus) else 0.0,
                filled / self.config.window,
            ],
            dtype=np.float32,
        )
        return np.clip(out, 0.0, FEATURE_CAP)


_RANK_SOURCES = [JOB_BASE_FEATURES.index(name) for name in _RANKED]


def _ranks(rows: np.ndarray) -> np.ndarray:
    """Dense rank of each ranked column among the rows, scaled to [0, 1] (all equal: 0).

    Every column at once (one sort of the window's few rows): a call per
    column cost more than the ranking itself, once per observation.
    """
    cols = rows[:, _RANK_SOURCES]
    out = np.zeros(cols.shape, dtype=np.float32)
    if not len(cols):
        return out
    order = np.argsort(cols, axis=0, kind="stable")
    ascending = np.take_along_axis(cols, order, axis=0)
    dense = np.zeros(cols.shape, dtype=np.int64)  # rank among distinct values, in sorted position
    np.cumsum(ascending[1:] != ascending[:-1], axis=0, out=dense[1:])
    ranks = np.empty_like(dense)
    np.put_along_axis(ranks, order, dense, axis=0)
    top = dense[-1]  # distinct values - 1, per column
    spread = top > 0
    out[:, spread] = ranks[:, spread] / top[spread]
    return out


def _asked_gpu_time(job: JobView) -> float:
    limit = job.time_limit if job.time_limit is not None else UNKNOWN_LIMIT_S
    return job.gpus * limit
