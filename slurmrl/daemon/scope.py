"""Which jobs the daemon may touch, and the view its policy decides on.

Everything outside the scope is left exactly as stock Slurm handles it. The
policy sees only in-scope pending jobs (it cannot act on the others), but
every running job, whatever its partition, since those hold GPUs; nodes
outside the scoped partitions are shown as full so that no placement can
name a node the job may not use.
"""

from __future__ import annotations

from dataclasses import replace

from slurmrl.cluster.model import Placement
from slurmrl.daemon.config import ScopeConfig
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.slurm.elastic import ElasticTag
from slurmrl.slurm.snapshot import SlurmJob, Snapshot


def opted_out(job: SlurmJob, keyword: str) -> bool:
    return bool(keyword) and keyword in (job.comment or "")


def in_scope(job: SlurmJob, scope: ScopeConfig) -> bool:
    """A pending job the daemon may change: every one of its partitions in scope, not opted out.

    Pending array records that still stand for several tasks (``7_[3-5]``)
    are left to Slurm: an update would address all their tasks at once.
    """
    if "[" in job.job_id:
        return False
    if scope.partitions and not set(filter(None, job.partition.split(","))) <= set(scope.partitions):
        return False
    if scope.qos and job.qos not in scope.qos:
        return False
    if scope.accounts and job.account not in scope.accounts:
        return False
    return not opted_out(job, scope.opt_out_keyword)


def scoped_pending(snapshot: Snapshot, scope: ScopeConfig) -> dict[str, SlurmJob]:
    """In-scope pending jobs by id, in submit order."""
    return {j.job_id: j for j in snapshot.pending if in_scope(j, scope)}


def _job_view(job: SlurmJob, allowed: frozenset[int] | None) -> JobView:
    """The policy's view of a pending job, as :meth:`Snapshot.to_view` builds it.

    Built here for in-scope jobs only; the model is looked up only where a
    ``model=`` tag can be (its regex costs more than the rest on a 10,000-job queue).
    ``allowed``: the nodes its partitions, --exclude, --constraint, CPUs,
    memory and --exclusive let it use now (None = any).
    """
    tagged = "model=" in job.comment or "model=" in job.admin_comment or "model=" in job.name
    return JobView(
        job_id=job.job_id,
        gpus=job.gpus.total,
        submit_time=job.submit_time,
        user=job.user,
        group=job.account or job.partition,
        time_limit=job.time_limit,
        name=job.name,
        model=job.model if tagged else "",
        num_nodes=job.num_nodes,
        gpu_type=job.gpus.gpu_type,
        allowed_nodes=allowed,
        required_nodes=job.required_nodes,
        exclusive=job.exclusive,
        max_node_count=job.max_nodes,
        gpu_range=job.gpu_range if "gpus=" in job.comment else None,
    )


def elastic_problems(scoped: dict[str, SlurmJob]) -> list[tuple[str, ElasticTag]]:
    """In-scope jobs whose ``gpus=`` tag is not honoured (malformed, or not matching the
    request): they stay rigid, and the daemon says why once per job and tag."""
    out: list[tuple[str, ElasticTag]] = []
    for jid, job in scoped.items():
        tag = job.elastic
        if tag is not None and tag.problem:
            out.append((jid, tag))
    return out


def build_view(snapshot: Snapshot, scoped: dict[str, SlurmJob], scope: ScopeConfig) -> ClusterView:
    """Running jobs and node states from the whole snapshot; pending jobs from the scope only."""
    others = replace(snapshot, jobs=tuple(j for j in snapshot.jobs if not j.is_pending))
    view = others.to_view()
    usable = snapshot.allowed_nodes(view.cluster)  # once per snapshot, memoised per distinct request
    pending = [_job_view(j, usable.of(j)) for j in scoped.values() if j.eligible]
    pool = view.pool
    if scope.partitions:
        allowed = {n.name for n in snapshot.nodes if set(n.partitions) & set(scope.partitions)}
        outside = [
            node.index
            for node in view.cluster.nodes
            if node.name not in allowed and pool.free_count[node.index] > 0
        ]
        if outside:
            pool = pool.copy()
            pool.allocate(Placement.of([(n, pool.free_gpus(n)) for n in outside]))
            pool = pool.readonly()
    return replace(view, pending=pending, pool=pool)
