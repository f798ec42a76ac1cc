"""Which nodes a pending job may use, reduced once per snapshot for placement.

Slurm accepts an admin's ``ReqNodeList`` for a pending job without checking
it against the job's partitions, ``--exclude`` list, ``--constraint``
features, CPUs or memory; an impossible pin leaves the job with reason
BadConstraints. So placements must only name nodes the job could run on
now: a node of one of its partitions, not excluded, carrying the features
it asks for, with at least its per-node CPUs and memory free and, for
``--exclusive``, wholly idle.

Feature expressions: plain names, ``a&b`` (all) and ``a|b`` (any), as in the
``--constraint`` section of sbatch(1). Anything richer (counts ``a*2``,
brackets, parentheses, mixed ``&``/``|``, commas) is not interpreted: such a
job gets no usable node here, so the daemon never pins it and Slurm places
it itself.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from slurmrl.cluster.model import Cluster
from slurmrl.slurm.records import SlurmJob, SlurmNode

log = logging.getLogger(__name__)

# Node states in which a node holds (or is about to hold) a job: never "wholly idle".
BUSY_STATES = frozenset({"ALLOCATED", "MIXED", "COMPLETING"})
# Constraint texts already warned about: a daemon rebuilds the table every
# cycle, and one log line per text is enough (bounded, so a stream of
# distinct texts cannot grow it without end).
_WARNED: set[str] = set()
_MAX_WARNED = 1000
_NAME = re.compile(r"^[A-Za-z0-9_.:\-/=+]+$")


@dataclass(frozen=True, slots=True)
class FeatureRule:
    """A constraint in disjunctive form: the node must hold every feature of some alternative."""

    alternatives: tuple[frozenset[str], ...]

    def allows(self, features: frozenset[str]) -> bool:
        return any(alt <= features for alt in self.alternatives)


class UnsupportedConstraint(ValueError):
    """A ``--constraint`` expression outside the subset interpreted here."""


def parse_constraint(text: str) -> FeatureRule | None:
    """``a``, ``a&b``, ``a|b`` -> a rule; empty -> None; anything else raises UnsupportedConstraint."""
    text = (text or "").strip()
    if not text or text in ("(null)", "None"):
        return None
    has_and, has_or = "&" in text, "|" in text
    if has_and and has_or:
        raise UnsupportedConstraint(f"mixed '&' and '|' in '{text}'")
    parts = [p.strip() for p in re.split(r"[&|]", text)]
    if any(not _NAME.match(p) for p in parts):
        raise UnsupportedConstraint(f"'{text}' uses syntax other than names joined by '&' or '|'")
    if has_or:
        return FeatureRule(tuple(frozenset({p}) for p in parts))
    return FeatureRule((frozenset(parts),))


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What the constraint check needs of one node of the policy's cluster."""

    index: int
    name: str
    partitions: frozenset[str]
    features: frozenset[str]
    free_cpus: int | None  # None: Slurm did not report CPUs
    free_memory_mb: int | None
    idle: bool  # no job, no allocated CPU or GPU: usable by an --exclusive job


def node_facts(nodes: tuple[SlurmNode, ...], cluster: Cluster, busy: frozenset[str]) -> tuple[NodeFacts, ...]:
    """Facts of the snapshot's nodes that are in ``cluster``; ``busy``: node names running a job."""
    index = cluster.node_index
    out = []
    for n in nodes:
        i = index.get(n.name)
        if i is None:
            continue
        out.append(
            NodeFacts(
                index=i,
                name=n.name,
                partitions=frozenset(n.partitions),
                features=n.features,
                free_cpus=n.cpus - n.cpus_alloc if n.cpus else None,
                free_memory_mb=n.memory_mb - n.memory_alloc_mb if n.memory_mb else None,
                idle=not (n.name in busy or n.cpus_alloc or n.used_count or n.states & BUSY_STATES),
            )
        )
    return tuple(out)


class AllowedNodes:
    """Per-job usable node indices for one snapshot, memoised on the parts of a request that matter.

    A 10,000-job queue usually holds a handful of distinct requests, so the
    node scan runs once per distinct request, not once per job.
    """

    def __init__(self, facts: tuple[NodeFacts, ...], cluster_size: int) -> None:
        self.facts = facts
        self.size = cluster_size
        self._memo: dict[tuple, frozenset[int] | None] = {}
        self._partitions_known = any(f.partitions for f in facts)
        self.unsupported: dict[str, str] = {}  # constraint text -> why it is not interpreted

    def of(self, job: SlurmJob) -> frozenset[int] | None:
        """Node indices ``job`` may use now; None = any node of the cluster."""
        key = (
            job.partitions,
            job.excluded_nodes,
            job.constraint,
            job.cpus_per_node,
            job.memory_per_node_mb,
            job.exclusive,
        )
        if key in self._memo:
            return self._memo[key]
        allowed = self._compute(job)
        self._memo[key] = allowed
        return allowed

    def _compute(self, job: SlurmJob) -> frozenset[int] | None:
        try:
            rule = parse_constraint(job.constraint)
        except UnsupportedConstraint as exc:
            self.unsupported[job.constraint] = str(exc)
            if job.constraint not in _WARNED and len(_WARNED) < _MAX_WARNED:
                _WARNED.add(job.constraint)
                log.warning("constraint not interpreted, jobs asking for it are never pinned: %s", exc)
            return frozenset()
        parts = set(job.partitions) if self._partitions_known else set()
        excluded = set(job.excluded_nodes)
        ok = []
        for f in self.facts:
            if parts and not parts & f.partitions:
                continue
            if f.name in excluded:
                continue
            if rule is not None and not rule.allows(f.features):
                continue
            if job.cpus_per_node and f.free_cpus is not None and f.free_cpus < job.cpus_per_node:
                continue
            if (
                job.memory_per_node_mb
                and f.free_memory_mb is not None
                and f.free_memory_mb < job.memory_per_node_mb
            ):
                continue
            if job.exclusive and not f.idle:
                continue
            ok.append(f.index)
        if len(ok) == self.size:
            return None
        return frozenset(ok)


def allowed_nodes_for(
    snapshot_nodes: tuple[SlurmNode, ...], running: tuple[SlurmJob, ...], cluster: Cluster
) -> AllowedNodes:
    """The per-snapshot table: built once, then asked per pending job."""
    busy = frozenset(name for job in running for name in job.nodes)
    return AllowedNodes(node_facts(snapshot_nodes, cluster, busy), len(cluster.nodes))
