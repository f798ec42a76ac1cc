"""Interference-aware consolidation.

Packing jobs onto shared nodes saves whole nodes for big jobs but makes
co-located jobs contend for PCIe, host memory bandwidth and NICs; how much a
model suffers from that is its *interference sensitivity* in the performance
zoo (``slurmrl.perf``). This placement consolidates like best fit, except that
a sensitive job avoids nodes whose running jobs are sensitive too: nodes are
ranked first by the expected conflict (product of the two sensitivities,
binned so that near-equal conflicts fall back to best fit), then by free GPUs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.placement.common import build, eligible, fewest_nodes, may_fit_one_node, node_request
from slurmrl.policy.view import ClusterView, JobView

# Sensitivity assumed for a model the zoo does not know: none, so that jobs
# without a known model are placed exactly as best fit would (our choice).
UNKNOWN_SENSITIVITY = 0.0
# Conflicts within one bin count as equal and fall back to best fit (our choice):
# with 0.1-wide bins only clearly worse neighbours push a job elsewhere.
CONFLICT_BIN = 0.1


def zoo_sensitivity(model: str) -> float:
    """Sensitivity of ``model`` from the performance zoo, or UNKNOWN_SENSITIVITY.

    Names the zoo only maps by a hash fallback (it does that for unknown
    names, keyed on the job id) count as unknown: a policy must not act on an
    invented model.
    """
    if not model:
        return UNKNOWN_SENSITIVITY
    try:
        from slurmrl.perf import MODELS, canonical_model
    except ImportError:
        return UNKNOWN_SENSITIVITY
    profile = MODELS.get(model)
    if profile is None:
        name = canonical_model(model, "probe-a")
        if name != canonical_model(model, "probe-b"):
            return UNKNOWN_SENSITIVITY
        profile = MODELS.get(name)
    return float(profile.interference_sensitivity) if profile is not None else UNKNOWN_SENSITIVITY


class InterferenceAware:
    name = "interference-aware"
    # Reads the pool, the cluster and the running jobs, never the waiting queue.
    queue_blind = True

    def __init__(self, sensitivity: Callable[[str], float] | None = None) -> None:
        self._lookup = sensitivity or zoo_sensitivity
        self._cache: dict[str, float] = {}
        self._view: ClusterView | None = None
        self._node_sens: np.ndarray = np.zeros(0)
        # Of the same view: the GPUs held by its running jobs and the pass's
        # confirmed starts, the starts themselves, and (built on first need)
        # per node the (sensitivity, GPUs there) of every job holding some.
        self._held: np.ndarray = np.zeros((0, 0), dtype=bool)
        self._confirmed: list[tuple[float, Placement]] = []
        self._on_node: list[list[tuple[float, list[int]]]] | None = None
        self._hot = False  # any sensitive job among them

    def sensitivity(self, model: str) -> float:
        s = self._cache.get(model)
        if s is None:
            s = self._cache[model] = min(1.0, max(0.0, float(self._lookup(model))))
        return s

    def _neighbours(self, pool: GpuPool, view: ClusterView | None) -> np.ndarray:
        """Highest sensitivity on each node among the jobs that hold GPUs in ``pool``.

        Those are the view's running jobs and the pass's confirmed starts,
        less any whose GPUs ``pool`` has free: a backfill reservation asks on
        a scratch pool where the jobs that end before the head's start are
        released, a preemptive pass on one without its victims, and neither
        of those jobs is a neighbour then.
        """
        if view is None:
            return np.zeros(len(pool.cluster.nodes))
        sens = self._neighbours_of(view)
        if not self._hot:
            return sens  # no sensitive job anywhere: nothing to take away
        gone = pool.free & self._held
        if not gone.any():
            return sens  # most pools: the view's, less the pass's starts
        touched = np.flatnonzero(gone.any(axis=1) & (sens > 0))
        if not touched.size:
            return sens
        on_node = self._jobs_on_nodes(view)
        sens = sens.copy()
        free = pool.free
        for node in touched.tolist():
            row = free[node]
            sens[node] = max((s for s, gpus in on_node[node] if not row[gpus].all()), default=0.0)
        return sens

    def _neighbours_of(self, view: ClusterView) -> np.ndarray:
        """Built once per view from its running jobs; :meth:`confirm` adds the pass's starts."""
        if view is not self._view or self._node_sens.size != len(view.cluster.nodes):
            sens = np.zeros(len(view.cluster.nodes))
            for job in view.running:
                if job.placement is None:
                    continue
                s = self.sensitivity(job.model)
                for node in job.placement.nodes:
                    if s > sens[node]:
                        sens[node] = s
            self._view, self._node_sens = view, sens
            self._held, self._confirmed, self._on_node = ~view.pool.free, [], None
            self._hot = bool(sens.any())
        return self._node_sens

    def _jobs_on_nodes(self, view: ClusterView) -> list[list[tuple[float, list[int]]]]:
        """Per node, (sensitivity, its GPUs there) of every running job and confirmed start of ``view``."""
        if self._on_node is None:
            on_node: list[list[tuple[float, list[int]]]] = [[] for _ in view.cluster.nodes]
            placed = [
                (self.sensitivity(j.model), j.placement) for j in view.running if j.placement is not None
            ]
            for s, placement in placed + self._confirmed:
                for a in placement.allocs:
                    on_node[a.node].append((s, list(a.gpus)))
            self._on_node = on_node
        return self._on_node

    def place(self, job: JobView, pool: GpuPool, view: ClusterView | None) -> Placement | None:
        job = node_request(job, view)
        if job.gpus <= 0 or job.gpus > pool.total_free:
            return None
        mask = eligible(job, pool)
        neigh = self._neighbours(pool, view)
        mine = self.sensitivity(job.model)
        conflict = np.floor(mine * neigh / CONFLICT_BIN).astype(np.int64)
        width = pool.free.shape[1] + 1
        shares: list[tuple[int, int]] | None = None
        if may_fit_one_node(job, pool.cluster):
            fits = mask & (pool.free_count >= job.gpus)
            if fits.any():
                key = np.where(fits, conflict * width + pool.free_count, np.iinfo(np.int64).max)
                shares = [(int(np.argmin(key)), job.gpus)]
            elif job.num_nodes == 1:
                return None
        if shares is None:
            nodes = np.flatnonzero(mask)
            calm = nodes[conflict[nodes] == conflict[nodes].min()] if nodes.size else nodes
            shares = fewest_nodes(pool, calm, job.gpus) or fewest_nodes(pool, nodes, job.gpus)
            if shares is None:
                return None
        return build(pool, shares, job)

    def confirm(self, job: JobView, placement: Placement, view: ClusterView) -> None:
        """``job`` starts on ``placement``: later jobs of the same pass see it as a neighbour."""
        neigh = self._neighbours_of(view)
        mine = self.sensitivity(job.model)
        for node in placement.nodes:
            neigh[node] = max(neigh[node], mine)
        self._confirmed.append((mine, placement))
        self._hot = self._hot or mine > 0
        for a in placement.allocs:
            self._held[a.node, list(a.gpus)] = True
        if self._on_node is not None:
            for a in placement.allocs:
                self._on_node[a.node].append((mine, list(a.gpus)))
