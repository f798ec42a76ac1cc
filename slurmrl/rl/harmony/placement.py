"""The learned placement: a pointer over nodes for every job that fits in one node.

Called by the ordering's scheduler for one job at a time, like any placement.

Led (``lead=True``): the fallback heuristic is asked first, and the node it
would take gets ``bonus`` (:data:`LEAD_BONUS` unless the checkpoint records
another) added to the network's logit (and, when the
pointer takes that node, the heuristic's GPUs there), so a network that
outputs zero places every job exactly where the heuristic would (a job
no single node can hold goes to the heuristic as well): the untrained policy
is the heuristic, and learning moves it from there.
A job that fits in one node (the great majority in the Philly-derived traces)
goes to the node the network points at among the nodes with room of the
fastest GPU type that has any (``type-aware``'s rule; every node with room on
a cluster of one type), on that node's closest free GPUs
(:func:`~slurmrl.policy.placement.common.pick_in_node`); a job that must span
nodes, or asks for a node count or GPU type the pointer does not model, goes
to the ``fallback`` heuristic placement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from slurmrl.cluster.model import NodeAlloc, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.base import PlacementPolicy, confirm_start
from slurmrl.policy.placement.common import eligible, node_request, pick_in_node
from slurmrl.policy.placement.type_aware import fastest_of
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.rl.harmony.features import HarmonyObs, NodeLoads, PlacementObs, observe

# Picks a node index from an observation: (node, log-probability of the pick).
Chooser = Callable[[PlacementObs], tuple[int, float]]
# Logit bonus of the heuristic's node in a led placement (see the module docstring).
LEAD_BONUS = 1.0


@dataclass(frozen=True)
class Step:
    """One pointer decision as it was taken: what the agent saw and did."""

    job_id: str
    gpus: int
    obs: PlacementObs
    action: int
    logp: float
    placement: Placement
    time: float


class HarmonyPlacement:
    """A :class:`PlacementPolicy` whose node choice comes from ``chooser``."""

    name = "harmony"

    def __init__(
        self,
        obs: HarmonyObs,
        chooser: Chooser,
        fallback: PlacementPolicy,
        *,
        lead: bool = False,
        bonus: float = LEAD_BONUS,
    ) -> None:
        self.obs = obs
        self.chooser = chooser
        self.fallback = fallback
        self.lead = lead
        self.bonus = bonus
        self.queue: Sequence[JobView] = ()
        self.tried: dict[str, Step] = {}  # the latest pointer decision per job in this pass
        self._view: ClusterView | None = None
        self._loads: NodeLoads | None = None

    def begin(self, view: ClusterView, queue: Sequence[JobView]) -> None:
        """A new pass: ``queue`` is the head of the ordering's rank (the encoder's window)."""
        self.queue = queue
        self.tried = {}

    def _loads_for(self, view: ClusterView) -> NodeLoads:
        if view is not self._view or self._loads is None:
            held = ~view.pool.free
            self._view, self._loads = view, NodeLoads(view.cluster, self.obs, view.running, held)
        return self._loads

    def place(self, job: JobView, pool: GpuPool, view: ClusterView | None) -> Placement | None:
        job = node_request(job, view)
        cluster = pool.cluster
        if job.gpus <= 0 or job.gpus > pool.total_free:
            return None
        single = job.gpus <= cluster.max_gpus_per_node and job.num_nodes in (None, 1)
        if view is None or not single:
            return self.fallback.place(job, pool, view)
        room = eligible(job, pool) & (pool.free_count >= job.gpus)
        if not room.any():
            return self.fallback.place(job, pool, view) if self.lead else None
        mask = fastest_of(job, pool, room)  # the pointer picks a node of the fastest type with room
        loads = self._loads_for(view).in_pool(pool)
        o = observe(
            job,
            self.queue,
            pool,
            loads,
            self.obs,
            now=view.now,
            pending=len(view.pending),
            running=len(view.running),
            eligible=mask,
        )
        heuristic = self.fallback.place(job, pool, view) if self.lead else None
        prior = _led_prior(o, heuristic, self.bonus)
        if prior is not None:  # unchanged without a heuristic placement
            o = replace(o, prior=prior)
        node, logp = self.chooser(o)
        if not o.mask[node]:  # cannot happen with masked logits; refuse rather than overbook
            return None
        if heuristic is not None and heuristic.nodes == (node,):
            placement = heuristic  # the heuristic's node: its GPUs too, so a zero output is the heuristic
        else:
            placement = Placement((NodeAlloc(node, pick_in_node(pool, node, job.gpus)),))
        self.tried[job.job_id] = Step(job.job_id, job.gpus, o, node, logp, placement, view.now)
        return placement

    def confirm(self, job: JobView, placement: Placement, view: ClusterView) -> None:
        """``job`` starts on ``placement``: only now does it load its nodes for the pass's later decisions.

        A reservation probe (EasyBackfill asks where the blocked head job
        would go once GPUs free up) or a what-if call is never confirmed, so
        it leaves no phantom neighbour behind.
        """
        self._loads_for(view).add(job, placement)
        confirm_start(self.fallback, job, placement, view)


def _led_prior(o: PlacementObs, heuristic: Placement | None, bonus: float) -> np.ndarray | None:
    """``bonus`` on the heuristic's node when it is one node the pointer may choose."""
    if heuristic is None or len(heuristic.allocs) != 1 or not o.mask[heuristic.allocs[0].node]:
        return None
    prior = np.zeros(len(o.mask), dtype=np.float32)
    prior[heuristic.allocs[0].node] = bonus
    return prior


def with_prior(logits: np.ndarray, o: PlacementObs) -> np.ndarray:
    """The logits a chooser decides on: the network's plus the observation's prior, if any."""
    return logits if o.prior is None else logits + o.prior


def greedy_chooser(logits_of: Callable[[PlacementObs], np.ndarray]) -> Chooser:
    """The deployed rule: the best node, near-ties to the lowest index (CPU-independent)."""
    from slurmrl.rl.inference import pick

    def choose(o: PlacementObs) -> tuple[int, float]:
        return pick(with_prior(logits_of(o), o)), 0.0

    return choose


def sampling_chooser(logits_of: Callable[[PlacementObs], np.ndarray], rng: np.random.Generator) -> Chooser:
    """Training's behaviour policy: a node drawn from the softmax, with its log-probability."""

    def choose(o: PlacementObs) -> tuple[int, float]:
        z = with_prior(logits_of(o), o).astype(np.float64)
        z -= z.max()
        p = np.exp(z)
        p /= p.sum()
        node = int(rng.choice(len(p), p=p))
        return node, float(np.log(max(p[node], 1e-12)))

    return choose
