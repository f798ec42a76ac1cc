"""One consistent reading of a live Slurm cluster, and the policy view built from it.

The daemon decides on a :class:`Snapshot` exactly as the simulator decides on
its event state: :meth:`Snapshot.to_view` fills the same read-only
:class:`~slurmrl.policy.view.ClusterView`, so a policy cannot tell (and need
not care) whether it runs offline or beside slurmctld. Everything here is
plain data, independent of how it was read (JSON, text or pyslurm).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from slurmrl.cluster.model import Cluster, Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.slurm.constraints import AllowedNodes, allowed_nodes_for
from slurmrl.slurm.parse_gres import GresItem
from slurmrl.slurm.records import SlurmJob, SlurmNode  # the readers and the daemon import them from here too


@dataclass(frozen=True, slots=True)
class PinSupport:
    """How this controller can be told where a job should start (for the daemon's plan).

    * ``prefer``: ``scontrol update JobId=.. Prefer=<features>`` works (a soft
      constraint, 22.05 and later: src/scontrol/update_job.c). It names node
      *features*, so it can steer to given nodes only where every node carries
      a feature equal to its own name (``node_name_features``).
    * ``exact_count``: from 23.02 a ``ReqNodeList`` with more nodes than the
      job's minimum acts as an exclusion list of every other node; a pin must
      then name exactly the job's node count (it always should).
    """

    prefer: bool
    node_name_features: bool
    exact_count: bool

    @property
    def soft(self) -> bool:
        """Whether ``Prefer=`` can express "start on these nodes"."""
        return self.prefer and self.node_name_features

    def prefer_value(self, job: SlurmJob, nodes: Iterable[str]) -> str | None:
        """The ``Prefer=`` text that steers ``job`` to ``nodes``; None where only a hard pin can.

        None also when the user gave a ``--prefer`` of their own: it is theirs
        to keep. The nodes were chosen within the job's ``--constraint``, so
        Prefer (which Slurm tries before the constraint) cannot lead outside it.
        """
        names = sorted(set(nodes))
        if not self.soft or not names or job.prefer:
            return None
        return "|".join(names)


def version_tuple(text: str) -> tuple[int, int]:
    """``"23.02.7"`` -> (23, 2); (0, 0) when unreadable."""
    m = re.match(r"\s*(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@dataclass(frozen=True)
class Snapshot:
    time: float
    version: str
    nodes: tuple[SlurmNode, ...]
    jobs: tuple[SlurmJob, ...]
    cluster: Cluster
    source: str = ""  # "cli-json", "cli-text", "pyslurm"
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def pin_support(self) -> PinSupport:
        version = version_tuple(self.version)
        named = bool(self.nodes) and all(n.name in n.features for n in self.nodes)
        return PinSupport(prefer=version >= (22, 5), node_name_features=named, exact_count=version >= (23, 2))

    def allowed_nodes(self, cluster: Cluster | None = None) -> AllowedNodes:
        """Usable nodes per pending job (partition, --exclude, features, CPUs, memory, --exclusive)."""
        return allowed_nodes_for(self.nodes, self.running, cluster or self.cluster)

    @property
    def unavailable_nodes(self) -> tuple[SlurmNode, ...]:
        return tuple(n for n in self.nodes if n.unavailable)

    @property
    def pending(self) -> tuple[SlurmJob, ...]:
        return tuple(sorted((j for j in self.jobs if j.is_pending), key=_submit_order))

    @property
    def running(self) -> tuple[SlurmJob, ...]:
        return tuple(j for j in self.jobs if j.is_running)

    def filter(
        self,
        *,
        partitions: Iterable[str] | None = None,
        users: Iterable[str] | None = None,
        states: Iterable[str] | None = None,
    ) -> Snapshot:
        """Client-side filtering: ``squeue --json`` ignores -p/-u/-t before 24.05.1."""
        parts = set(partitions) if partitions else None
        who = set(users) if users else None
        sts = {s.upper() for s in states} if states else None
        jobs = tuple(
            j
            for j in self.jobs
            if (parts is None or set(j.partition.split(",")) & parts)
            and (who is None or j.user in who)
            and (sts is None or j.state in sts)
        )
        nodes = tuple(n for n in self.nodes if parts is None or set(n.partitions) & parts)
        return Snapshot(self.time, self.version, nodes, jobs, self.cluster, self.source, self.warnings)

    def to_view(self, cluster: Cluster | None = None, *, include_ineligible: bool = False) -> ClusterView:
        """The policy's view: GPUs held by running jobs or on unusable nodes are not free.

        Held indices come from Slurm where it reports them; where it gives only
        a count, the lowest free GPUs of that node are marked busy. Pending jobs
        come in submit order; held and dependency-blocked ones are left out
        unless ``include_ineligible``.
        """
        cluster = cluster or self.cluster
        pool = GpuPool(cluster)
        running = [self._running_view(job, cluster, pool) for job in sorted(self.running, key=_submit_order)]
        self._mark_node_usage(cluster, pool)
        pending = self._pending_views(cluster, include_ineligible)
        return ClusterView(
            now=self.time, cluster=cluster, pool=pool.readonly(), pending=pending, running=running
        )

    def _running_view(self, job: SlurmJob, cluster: Cluster, pool: GpuPool) -> JobView:
        """A running job with its GPUs, which it takes from ``pool``."""
        placement = _placement_of(job, cluster, pool)
        for a in placement.allocs:
            _take(pool, a.node, a.gpus)
        return job_view(
            job,
            job.job_id,
            gpus=placement.num_gpus or job.gpus.total,
            num_nodes=len(job.nodes) or job.num_nodes,
            start_time=job.start_time,
            placement=placement,
        )

    def _mark_node_usage(self, cluster: Cluster, pool: GpuPool) -> None:
        """Take from ``pool`` the GPUs of unusable nodes, and GPUs in use that no running job accounted for."""
        index = cluster.node_index
        for node in self.nodes:
            n = index.get(node.name)
            if n is None:
                continue
            if node.unavailable:
                _take(pool, n, tuple(range(cluster.nodes[n].gpus)))
                continue
            used = node.used_indices
            if used is not None:
                _take(pool, n, tuple(g for g in used if g < cluster.nodes[n].gpus))
            else:
                extra = node.used_count - (cluster.nodes[n].gpus - int(pool.free_count[n]))
                if extra > 0:
                    _take(pool, n, tuple(pool.free_gpus(n)[:extra]))

    def _pending_views(self, cluster: Cluster, include_ineligible: bool) -> list[JobView]:
        """Pending jobs in submit order, one view per array task, on the nodes each may use."""
        pending: list[JobView] = []
        usable = self.allowed_nodes(cluster)
        for job in self.pending:
            if not include_ineligible and not job.eligible:
                continue
            allowed = usable.of(job)
            for task_id in job.task_ids():
                pending.append(
                    job_view(
                        job,
                        task_id,
                        allowed_nodes=allowed,
                        required_nodes=job.required_nodes,
                        exclusive=job.exclusive,
                        max_node_count=job.max_nodes,
                        gpu_range=job.gpu_range,
                    )
                )
        return pending

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``slurmrl slurm snapshot --json``)."""
        pins = self.pin_support
        return {
            "time": self.time,
            "version": self.version,
            "source": self.source,
            "warnings": list(self.warnings),
            "cluster": {
                "name": self.cluster.name,
                "racks": [
                    {"name": r.name, "nodes": [self.cluster.nodes[i].name for i in r.nodes]}
                    for r in self.cluster.racks
                ],
                "nodes": [
                    {
                        "name": n.name,
                        "gpus": n.gpus,
                        "gpu_type": n.gpu_type,
                        "islands": list(n.islands),
                        "cpus": n.cpus,
                        "memory_mb": n.memory_mb,
                    }
                    for n in self.cluster.nodes
                ],
            },
            "pin_support": {
                "prefer": pins.prefer,
                "node_name_features": pins.node_name_features,
                "exact_count": pins.exact_count,
                "soft": pins.soft,
            },
            "nodes": [_node_dict(n) for n in self.nodes],
            "jobs": [_job_dict(j) for j in self.jobs],
        }


def _submit_order(job: SlurmJob) -> tuple[float, int, str]:
    head = job.job_id.split("_", 1)[0]
    return (job.submit_time, int(head) if head.isdigit() else 0, job.job_id)


def job_view(job: SlurmJob, job_id: str, **state: Any) -> JobView:
    """What Slurm says of the job as the policy reads it, with ``state`` (running or pending) on top."""
    fields: dict[str, Any] = {
        "job_id": job_id,
        "gpus": job.gpus.total,
        "submit_time": job.submit_time,
        "user": job.user,
        "group": job.account or job.partition,
        "time_limit": job.time_limit,
        "name": job.name,
        "model": job.model,
        "num_nodes": job.num_nodes,
        "gpu_type": job.gpus.gpu_type,
    }
    return JobView(**(fields | state))


def _placement_of(job: SlurmJob, cluster: Cluster, pool: GpuPool) -> Placement:
    """A running job's GPUs: Slurm's indices where it reports them, else the lowest free ones of each node."""
    index = cluster.node_index
    allocs: list[tuple[int, tuple[int, ...]]] = []
    for node_name, item in job.gpu_alloc:
        n = index.get(node_name)
        if n is None or item.count <= 0:
            continue
        width = cluster.nodes[n].gpus
        if item.indices is not None:
            gpus = tuple(g for g in item.indices if g < width)
        else:
            gpus = tuple(pool.free_gpus(n)[: item.count])
            if len(gpus) < item.count:  # all taken: record the lowest ones anyway
                gpus = tuple(range(min(item.count, width)))
        if gpus:
            allocs.append((n, gpus))
    return Placement.of(allocs)


def _take(pool: GpuPool, node: int, gpus: tuple[int, ...]) -> None:
    free = [g for g in gpus if pool.free[node, g]]
    if free:
        pool.allocate(Placement.of([(node, free)]))


def _gres_dict(item: GresItem) -> dict[str, Any]:
    return {
        "type": item.type,
        "count": item.count,
        "indices": list(item.indices) if item.indices is not None else None,
    }


def _node_dict(n: SlurmNode) -> dict[str, Any]:
    return {
        "name": n.name,
        "states": sorted(n.states),
        "unavailable": n.unavailable,
        "partitions": list(n.partitions),
        "gpus": [_gres_dict(g) for g in n.gpus],
        "gpus_used": [_gres_dict(g) for g in n.gpus_used],
        "gpu_count": n.gpu_count,
        "used_count": n.used_count,
        "used_indices": list(n.used_indices) if n.used_indices is not None else None,
        "cpus": n.cpus,
        "memory_mb": n.memory_mb,
        "reason": n.reason,
        "features": sorted(n.features),
        "cpus_alloc": n.cpus_alloc,
        "memory_alloc_mb": n.memory_alloc_mb,
    }


def _job_dict(j: SlurmJob) -> dict[str, Any]:
    return {
        "job_id": j.job_id,
        "array_job_id": j.array_job_id,
        "array_task": j.array_task,
        "name": j.name,
        "user": j.user,
        "account": j.account,
        "partition": j.partition,
        "qos": j.qos,
        "state": j.state,
        "state_flags": sorted(j.state_flags),
        "reason": j.reason,
        "submit_time": j.submit_time,
        "start_time": j.start_time,
        "time_limit": j.time_limit,
        "priority": j.priority,
        "site_factor": j.site_factor,
        "num_nodes": j.num_nodes,
        "required_nodes": list(j.required_nodes),
        "nodes": list(j.nodes),
        "gpus": {
            "total": j.gpus.total,
            "per_node": j.gpus.per_node,
            "type": j.gpus.gpu_type,
            "source": j.gpus.source,
        },
        "gpu_alloc": {node: _gres_dict(item) for node, item in j.gpu_alloc},
        "comment": j.comment,
        "admin_comment": j.admin_comment,
        "dependency": j.dependency,
        "held": j.held,
        "slurm_id": j.slurm_id,
        "eligible": j.eligible,
        "model": j.model,
        "partitions": list(j.partitions),
        "excluded_nodes": list(j.excluded_nodes),
        "constraint": j.constraint,
        "prefer": j.prefer,
        "cpus_per_node": j.cpus_per_node,
        "memory_per_node_mb": j.memory_per_node_mb,
        "exclusive": j.exclusive,
        "max_nodes": j.max_nodes,
        "min_cpus": j.min_cpus,
        "num_tasks": j.num_tasks,
        "tasks_per_node": j.tasks_per_node,
        "gpu_range": list(j.gpu_range) if j.gpu_range else None,
    }
