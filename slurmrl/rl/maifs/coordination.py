"""One multi-agent step: the window's agents choose count and target, conflicts resolved in rank order.

The coordination graph has an edge between two agents when they compete for
free GPUs: both have an open option on the same rack, or one may go
"anywhere". Deep Coordination Graphs (Böhmer et al., ICML 2020) put pairwise
payoff terms on such edges and maximise their sum by message passing; here
the edges are resolved in a fixed order instead, each agent choosing with
its options masked by what its predecessors along the graph took (the
sequential scheme of Multi-Agent Transformer, Wen et al., NeurIPS 2022,
whose multi-agent advantage decomposition, Kuba et al., ICLR 2022, makes the
joint policy the product of the conditional ones). Two reasons: the masks
make double-booking a GPU impossible by construction, where payoff terms
only make it unlikely; and a step costs K small forward passes, not
iterations of max-sum over K x O options. The order is the window's (old
jobs, then the ranking), the priority a scheduler would give them anyway.

Every agent reads the same attention context (the window's demands, encoded
once per step), and its own option rows, built at its turn against the GPUs
left: decentralised execution, each actor with its own observation plus the
attention messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.elastic.curves import Curves, bounds, sized
from slurmrl.policy.placement.topology import Topology
from slurmrl.policy.placement.type_aware import TypeAware, fastest_part
from slurmrl.policy.view import ClusterView, JobView, Start
from slurmrl.rl.maifs.obs import (
    MaifsObs,
    RackState,
    count_choices,
    global_row,
    job_row,
    option_rows,
    option_table,
)
from slurmrl.rl.maifs.reservation import Gate

# Picks an option from masked logits: (index, log-probability of the pick).
Chooser = Callable[[np.ndarray], tuple[int, float]]


class AgentNet(Protocol):
    def encode(self, jobs: np.ndarray, glob: np.ndarray) -> np.ndarray:
        """Per-agent context ``[K, h]`` after attention over the window."""
        ...

    def logits(self, context: np.ndarray, agent: int, options: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Masked option logits ``[O]`` of one agent."""
        ...


@dataclass(frozen=True)
class MaifsStep:
    """One step as it was taken: every agent's inputs, its choice and the choice's log-probability."""

    jobs: np.ndarray  # [K, F_j]
    glob: np.ndarray  # [S]
    options: np.ndarray  # [K, O, F_o]
    masks: np.ndarray  # [K, O] bool, as each agent chose (after its predecessors)
    actions: np.ndarray  # [K] int64 (0 for padding rows)
    logps: np.ndarray  # [K] float32
    time: float
    priors: np.ndarray  # [K, O] float32: what a lead added to each agent's logits (zeros when unled)


# Logit bonus of the option a lead heuristic proposes for an agent (its count
# and rack, on its GPUs), or of "not now" for an agent it starts nothing for.
# An agent has up to max_counts x (racks + 1) + 1 options (28 on 8 racks):
# at 3.0, near-zero logits draw the lead's option about half the time or
# more, so training explores around the lead instead of almost uniformly.
LEAD_BONUS = 3.0


@dataclass(frozen=True)
class Lead:
    """What a lead heuristic proposes for one agent: its placement, or None (it waits)."""

    placement: Placement | None = None


def lead_option(agent: Agent, placement: Placement, cluster: Cluster, obs: MaifsObs) -> int | None:
    """The option index of ``placement``: its count on its one rack, or on "anywhere" when it spans racks."""
    count = placement.num_gpus
    counts = agent.counts[: obs.max_counts]
    if count not in counts:
        return None
    racks = {cluster.nodes[n].rack for n in placement.nodes}
    width = len(cluster.racks) + 1
    target = next(iter(racks)) if len(racks) == 1 else width - 1
    return counts.index(count) * width + target


@dataclass(frozen=True)
class Agent:
    job: JobView
    counts: tuple[int, ...]
    estimate: float  # seconds, from finished jobs' history


@dataclass(frozen=True)
class _Turn:
    """One agent's turn in a step: what it sees and what its lead proposes."""

    index: int  # its row in the window
    agent: Agent
    rows: np.ndarray  # [O, F_o] option rows
    mask: np.ndarray  # [O] bool; options that fail to place are closed in it during the turn
    prior: np.ndarray | None  # the lead's bonus per option (None: unled)
    proposed: tuple[int, Placement] | None  # the lead's option and its GPUs
    pool: GpuPool  # the GPUs the agent may use


def _usable(job: JobView, pool: GpuPool, gate: Gate | None, now: float) -> GpuPool:
    """The GPUs ``job`` may use: the pool, or what its reservation gate leaves it."""
    return pool if gate is None else gate.pool_for(job, pool, now)


class Resolver:
    """Runs steps on one cluster; caches the rack node sets and the scaling curves."""

    def __init__(self, cluster: Cluster, obs: MaifsObs) -> None:
        self.cluster = cluster
        self.obs = obs
        self.curves = Curves(cluster)
        self.topology = Topology()
        self.anywhere = TypeAware()  # topology on a cluster of one GPU type
        self.racks = len(cluster.racks)
        self.rack_sets = tuple(frozenset(r.nodes) for r in cluster.racks)
        # Racks of one GPU type, per type, and racks that mix types: type-aware's rule on the options.
        kinds = [{cluster.nodes[n].gpu_type for n in r.nodes} for r in cluster.racks]
        self.rack_masks = {t: np.array([k == {t} for k in kinds]) for t in cluster.gpu_types}
        self.mixed_racks = np.array([len(k) > 1 for k in kinds])

    def place(
        self, job: JobView, count: int, rack: int | None, pool: GpuPool, view: ClusterView
    ) -> Placement | None:
        """``count`` GPUs for ``job`` closest-first (``topology``) within ``rack``; anywhere (None)
        on the fastest GPU type that holds them (``type-aware``)."""
        target = sized(job, count, self.cluster)
        if rack is None:
            return self.anywhere.place(target, pool, view)
        nodes = self.rack_sets[rack]
        target = replace(
            target, allowed_nodes=nodes if job.allowed_nodes is None else nodes & job.allowed_nodes
        )
        return self.topology.place(target, pool, view)

    def fastest_racks(self, job: JobView, mask: np.ndarray) -> np.ndarray:
        """``mask`` with each count's rack options kept to the fastest GPU type that has one open.

        Type-aware's rule on the agents' options: a job goes to the fastest
        type with room for it, at each GPU count it may take. Racks that mix
        types and the "anywhere" options (placed type-aware) stay as they are;
        nothing changes on a cluster of one type or for a job that names its type.
        """
        if job.gpu_type or len(self.cluster.gpu_types) < 2:
            return mask
        width = self.racks + 1
        out = mask.copy()
        for start in range(0, mask.size - 1, width):
            racks = out[start : start + self.racks]
            kept = fastest_part(job, self.cluster, racks, self.rack_masks)
            if kept is not racks:
                racks[:] = kept | (racks & self.mixed_racks)
        return out

    def step(
        self,
        agents: list[Agent],
        view: ClusterView,
        pool: GpuPool,
        net: AgentNet,
        choose: Chooser,
        gate: Gate | None = None,
        leads: list[Lead] | None = None,
    ) -> tuple[MaifsStep, list[Start]]:
        """Let ``agents`` choose in order, allocating in ``pool``; the step and the starts it made.

        With a ``gate`` each agent's options and placement are limited to the
        GPUs its reservation leaves it (:mod:`.reservation`). With ``leads``
        (one per agent) "not now" is always open and the proposed option, or
        "not now", gets :data:`LEAD_BONUS`; a proposed option taken starts on
        the proposal's own GPUs, so zero logits reproduce the proposals.
        """
        obs, k = self.obs, self.obs.window
        n_opt = obs.options(self.racks)
        jobs = np.zeros((k, obs.job_features), dtype=np.float32)
        options = np.zeros((k, n_opt, obs.option_features), dtype=np.float32)
        masks = np.zeros((k, n_opt), dtype=bool)
        masks[:, -1] = True  # padding rows: only "not now"
        actions = np.full(k, n_opt - 1, dtype=np.int64)
        logps = np.zeros(k, dtype=np.float32)
        priors = np.zeros((k, n_opt), dtype=np.float32)
        first = [self._rows_for(agent, pool, gate, view) for agent in agents]
        for i, (agent, (_, mask)) in enumerate(zip(agents, first, strict=True)):
            jobs[i] = self._job_row(agent, i, mask, view.now)
        glob = global_row(view, pool, sum(bounds(a.job)[0] for a in agents))
        context = net.encode(jobs, glob)
        starts: list[Start] = []
        for i, agent in enumerate(agents):
            mine = _usable(agent.job, pool, gate, view.now)
            rows, mask = first[0] if i == 0 else self._rows_for(agent, pool, gate, view)
            mask = mask.copy()
            prior: np.ndarray | None = None
            proposed: tuple[int, Placement] | None = None
            if leads is not None:
                prior, proposed = self._lead(agent, leads[i], mask, mine)
            turn = _Turn(i, agent, rows, mask, prior, proposed, mine)
            a, logp, placement = self._choose(turn, context, net, choose, view)
            if placement is not None:
                pool.allocate(placement)
                if gate is not None:
                    gate.taken(placement)
                starts.append(Start(agent.job.job_id, placement))
            options[i], masks[i], actions[i], logps[i] = rows, mask, a, logp
            if prior is not None:
                priors[i] = prior
        return MaifsStep(jobs, glob, options, masks, actions, logps, view.now, priors), starts

    def _rows_for(
        self, agent: Agent, pool: GpuPool, gate: Gate | None, view: ClusterView
    ) -> tuple[np.ndarray, np.ndarray]:
        """The agent's option rows and mask on the GPUs it may use now (after earlier agents' starts)."""
        mine = _usable(agent.job, pool, gate, view.now)
        rows, mask = option_rows(
            agent.job,
            agent.counts,
            RackState(agent.job, mine),
            self.obs,
            self.curves,
            now=view.now,
            total_free=mine.total_free,
        )
        return rows, self.fastest_racks(agent.job, mask)

    def _job_row(self, agent: Agent, rank: int, mask: np.ndarray, now: float) -> np.ndarray:
        """The agent's row of the attention input, with how many of its options were open before any start."""
        n_opt = mask.size
        return job_row(
            agent.job,
            self.obs,
            self.curves,
            now=now,
            estimate=agent.estimate,
            rank=rank,
            open_options=float(mask[:-1].sum()) / max(n_opt - 1, 1),
            fits_low=bool(mask[:-1].any()),
        )

    def _choose(
        self, turn: _Turn, context: np.ndarray, net: AgentNet, choose: Chooser, view: ClusterView
    ) -> tuple[int, float, Placement | None]:
        """One agent's turn: choose until an option places, or "not now" (placement None).

        An option the quick feasibility test let through but ``place`` could
        not place is closed in ``turn.mask`` and the agent chooses again.
        """
        agent, mask = turn.agent, turn.mask
        table = option_table(agent.counts, self.racks, self.obs.max_counts)
        while True:
            logits = net.logits(context, turn.index, turn.rows, mask)
            a, logp = choose(logits if turn.prior is None else logits + turn.prior)
            choice = table[a]
            if choice is None:  # "not now"
                return a, logp, None
            if turn.proposed is not None and a == turn.proposed[0]:
                placement: Placement | None = turn.proposed[1]
            else:
                placement = self.place(agent.job, choice.count, choice.rack, turn.pool, view)
            if placement is not None:
                return a, logp, placement
            mask[a] = False
            if not mask[:-1].any():
                mask[-1] = True

    def _lead(
        self, agent: Agent, lead: Lead, mask: np.ndarray, pool: GpuPool
    ) -> tuple[np.ndarray, tuple[int, Placement] | None]:
        """The agent's prior and its proposed (option, placement); opens "not now" and the proposal in ``mask``."""
        prior = np.zeros(mask.size, dtype=np.float32)
        mask[-1] = True
        option = None
        if lead.placement is not None and pool.is_free(lead.placement):
            option = lead_option(agent, lead.placement, self.cluster, self.obs)
        if option is None:
            prior[-1] = LEAD_BONUS
            return prior, None
        mask[option] = True
        prior[option] = LEAD_BONUS
        return prior, (option, lead.placement)  # type: ignore[return-value]

    def agent(self, job: JobView, estimate: float) -> Agent:
        return Agent(job, count_choices(job, self.obs.max_counts), estimate)
