"""What a MAIFS agent reads: its job, its (count, target) options, and the cluster.

Only what Slurm knows at decision time goes in: GPUs asked, the elastic range,
wait, the user's time limit, a run-time estimate learned from finished jobs
(:class:`~slurmrl.policy.ordering.qssf.DurationEstimator`, as ``qssf`` ranks
by), the scaling curve of the job's model class where Slurm knows it (else
the generic curve of :mod:`slurmrl.perf.scaling`), and free GPUs per node and
rack. Never a duration.

Arrays, for a window of K agents, C count choices and R racks
(O = C x (R + 1) + 1 options: each count on each rack or "anywhere", then
"not now", open only when nothing else is):

* ``jobs`` ``[K, F_j]``: one row per agent (row 0 column 0 marks real agents);
* ``options`` ``[K, O, F_o]``: one row per agent and option, built when the
  agent's turn comes, so it shows the GPUs its predecessors took;
* ``mask`` ``[K, O]``: options that can be placed at that moment;
* ``globals`` ``[S]``: cluster-wide scalars.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.elastic.curves import Curves, bounds
from slurmrl.policy.placement.common import eligible, tables
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.rl.config_fields import flag, only, section, whole

_NONE = 1 << 30  # free-GPU count standing for "no node fits"
LOG_TIME = 15.0  # log1p(seconds) / LOG_TIME is in [0, 1] up to about 38 days
JOB_FEATURES = (
    "valid",
    "log_gpus",
    "elastic",
    "log_low_ratio",
    "log_high_ratio",
    "log_wait",
    "log_limit",
    "log_estimate",
    "log_gpu_time",
    "model_known",
    "range_efficiency",
    "rank",
    "open_options",
    "fits_low",
)
OPTION_FEATURES = (
    "anywhere",
    "count_ratio",
    "log_count",
    "relative_speed",
    "gain_per_gpu",
    "share_of_free",
    "target_free",
    "target_max_node",
    "one_node",
    "best_fit_left",
    "exact_fit",
    "target_empty",
    "is_asked",
)
GLOBAL_FEATURES = (
    "free_fraction",
    "empty_nodes",
    "log_pending",
    "log_running",
    "window_demand",
    "log_oldest_wait",
    "partial_free",
)


@dataclass(frozen=True)
class MaifsObs:
    """Observation layout; saved with every checkpoint."""

    window: int = 8  # K: agents per step
    max_counts: int = 3  # C: GPU counts an elastic agent may choose from
    oldest: int = 2  # of the K agents, slots for the longest-waiting jobs that fit
    # Whether the head job's reservation masks the agents' options (.reservation).
    # Checkpoints saved before it existed have no such key and load with it off,
    # so they replay as they were trained.
    reserve: bool = True

    @property
    def job_features(self) -> int:
        return len(JOB_FEATURES)

    @property
    def option_features(self) -> int:
        return len(OPTION_FEATURES)

    @property
    def global_features(self) -> int:
        return len(GLOBAL_FEATURES)

    def options(self, racks: int) -> int:
        """O: every count on every rack and anywhere, plus "not now"."""
        return self.max_counts * (racks + 1) + 1

    def to_dict(self) -> dict[str, int]:
        return {
            "window": self.window,
            "max_counts": self.max_counts,
            "oldest": self.oldest,
            "reserve": int(self.reserve),
        }

    @classmethod
    def from_dict(cls, data: object) -> MaifsObs:
        table = section(data, "obs")
        only(table, {"window", "max_counts", "oldest", "reserve"}, "obs")
        window = whole(table, "window", "obs")
        return cls(
            window,
            whole(table, "max_counts", "obs"),
            whole(table, "oldest", "obs", least=0, most=window),
            flag(table, "reserve", "obs", default=False),
        )


@dataclass(frozen=True)
class Option:
    """What option index ``o`` of an agent means: a GPU count and a rack (None = anywhere)."""

    count: int
    rack: int | None


def count_choices(job: JobView, limit: int) -> tuple[int, ...]:
    """The GPU counts an agent chooses between: the range's ends, the asked count, powers of two between.

    At most ``limit``; when a declared range holds more, the ends and the
    asked count stay and the rest are the powers of two nearest the asked
    count (in log scale). A rigid job has its one count.
    """
    low, high = bounds(job)
    counts = {low, high, job.gpus} & set(range(low, high + 1))
    p = 1
    while p <= high:
        if p >= low:
            counts.add(p)
        p <<= 1
    if len(counts) <= limit:
        return tuple(sorted(counts))
    keep = {low, high, job.gpus}
    rest = sorted(counts - keep, key=lambda c: (abs(math.log2(c / job.gpus)), c))
    return tuple(sorted(keep | set(rest[: max(0, limit - len(keep))])))


def option_table(counts: tuple[int, ...], racks: int, limit: int) -> tuple[Option | None, ...]:
    """Options by index: count slot ``c`` on target ``t`` is ``c * (racks + 1) + t``; the last is "not now"."""
    table: list[Option | None] = []
    for c in range(limit):
        for t in range(racks + 1):
            table.append(Option(counts[c], t if t < racks else None) if c < len(counts) else None)
    table.append(None)
    return tuple(table)


def _log_ratio(a: float, b: float) -> float:
    return math.log2(a / b) if a > 0 and b > 0 else 0.0


def job_row(
    job: JobView,
    obs: MaifsObs,
    curves: Curves,
    *,
    now: float,
    estimate: float,
    rank: int,
    open_options: float,
    fits_low: bool,
) -> np.ndarray:
    """One agent's own features (see :data:`JOB_FEATURES`)."""
    low, high = bounds(job)
    eff = curves.speedup(job, high) / curves.speedup(job, low) / (high / low) if high > low else 1.0
    limit = job.time_limit
    return np.array(
        [
            1.0,
            math.log2(1 + job.gpus) / 6.0,
            float(job.gpu_range is not None),
            _log_ratio(low, job.gpus),
            _log_ratio(high, job.gpus),
            math.log1p(job.waited(now)) / LOG_TIME,
            math.log1p(limit) / LOG_TIME if limit is not None else 0.0,
            math.log1p(estimate) / LOG_TIME,
            math.log1p(estimate * job.gpus) / (LOG_TIME + 5.0),
            float(bool(job.model)),
            eff,
            rank / max(obs.window, 1),
            open_options,
            float(fits_low),
        ],
        dtype=np.float32,
    )


class RackState:
    """Per-rack free GPUs of one pool as one job may use them, for the option rows and masks."""

    def __init__(self, job: JobView, pool: GpuPool) -> None:
        cluster = pool.cluster
        tab = tables(cluster)
        free = np.where(eligible(job, pool), pool.free_count, 0)
        self.node_size = max(cluster.max_gpus_per_node, 1)
        self.free = free
        per_rack = np.append(free, 0)[tab.rack_nodes]  # [R, W]
        self.sorted = -np.sort(-per_rack, axis=1)
        self.cum = np.cumsum(self.sorted, axis=1)
        size = np.append(cluster.node_gpus, 0)[tab.rack_nodes]
        self.size = size.sum(axis=1)
        self.empty = ((per_rack == size) & (size > 0)).sum(axis=1) / np.maximum((size > 0).sum(axis=1), 1)
        self.all_sorted = -np.sort(-free)
        self.all_cum = np.cumsum(self.all_sorted)
        self.rack_nodes = tab.rack_nodes
        self.total = max(cluster.total_gpus, 1)

    def nodes_for(self, job: JobView, count: int, now: float) -> int | None:
        """The most nodes ``count`` GPUs of this job may span now (None: any number)."""
        if job.max_nodes(now) is None:
            return None
        return max(1, math.ceil(count / self.node_size))

    def fits(self, count: int, nodes: int | None) -> np.ndarray:
        """[R + 1] whether ``count`` GPUs on at most ``nodes`` nodes fit in each rack, and anywhere."""
        r = self.cum.shape[1]
        k = r if nodes is None else min(nodes, r)
        racks = self.cum[:, k - 1] >= count if r else np.zeros(0, dtype=bool)
        n = self.all_cum.size
        ka = n if nodes is None else min(nodes, n)
        anywhere = bool(n) and self.all_cum[ka - 1] >= count
        return np.append(racks, anywhere)


def option_rows(
    job: JobView,
    counts: tuple[int, ...],
    state: RackState,
    obs: MaifsObs,
    curves: Curves,
    *,
    now: float,
    total_free: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Option features ``[O, F_o]`` and mask ``[O]`` for ``job`` against ``state``."""
    racks = state.cum.shape[0]
    width = racks + 1
    n_opt = obs.options(racks)
    rows = np.zeros((n_opt, obs.option_features), dtype=np.float32)
    mask = np.zeros(n_opt, dtype=bool)
    g = state.node_size
    rack_free = state.cum[:, -1] if state.cum.shape[1] else np.zeros(racks)
    target_free = np.append(
        rack_free / np.maximum(state.size, 1), state.all_cum[-1] / state.total if state.all_cum.size else 0.0
    )
    target_max = (
        np.append(
            state.sorted[:, 0] if state.sorted.shape[1] else np.zeros(racks), state.all_sorted[:1].sum()
        )
        / g
    )
    target_empty = np.append(state.empty, float(np.mean(state.free == g)) if state.free.size else 0.0)
    base = curves.speedup(job, job.gpus)
    prev_speed = prev_count = None
    for c, count in enumerate(counts[: obs.max_counts]):
        speed = curves.speedup(job, count)
        gain = (speed - prev_speed) / (count - prev_count) if prev_count is not None else 0.0
        prev_speed, prev_count = speed, count
        fit = state.fits(count, state.nodes_for(job, count, now))
        sl = slice(c * width, (c + 1) * width)
        mask[sl] = fit
        if count <= g:
            cand = np.where(state.free >= count, state.free, _NONE)
            best = np.append(cand, _NONE)[state.rack_nodes].min(axis=1)
            best = np.append(best, cand.min() if cand.size else _NONE)
            one = best < _NONE
            left = np.where(one, best - count, 0)
            exact = one & (left == 0)
        else:
            left = np.zeros(width)
            exact = np.zeros(width, dtype=bool)
            one = np.zeros(width, dtype=bool)
        block = rows[sl]
        block[:, 0] = 0.0
        block[-1, 0] = 1.0
        block[:, 1] = count / job.gpus
        block[:, 2] = math.log2(count) / 6.0
        block[:, 3] = speed / base
        block[:, 4] = gain
        block[:, 5] = count / max(total_free, 1)
        block[:, 6] = target_free
        block[:, 7] = target_max
        block[:, 8] = one
        block[:, 9] = left / g
        block[:, 10] = exact
        block[:, 11] = target_empty
        block[:, 12] = float(count == job.gpus)
    if not mask.any():
        mask[-1] = True  # "not now": only when nothing can be placed
    return rows, mask


def global_row(view: ClusterView, pool: GpuPool, demand: int) -> np.ndarray:
    """Cluster-wide scalars (see :data:`GLOBAL_FEATURES`); ``demand``: the window's GPUs asked."""
    cluster = pool.cluster
    total = max(cluster.total_gpus, 1)
    oldest = next(iter(view.pending), None)
    wait = oldest.waited(view.now) if oldest is not None else 0.0
    free = pool.free_count
    return np.array(
        [
            pool.total_free / total,
            float(np.mean(free == cluster.node_gpus)) if free.size else 0.0,
            math.log1p(len(view.pending)) / 10.0,
            math.log1p(len(view.running)) / 10.0,
            min(demand / max(pool.total_free, 1), 4.0),
            math.log1p(wait) / LOG_TIME,
            pool.partial_free / max(pool.total_free, 1),
        ],
        dtype=np.float32,
    )
