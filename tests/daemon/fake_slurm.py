"""A fake Slurm backend for daemon tests: an in-memory queue that records every call.

Errors are injected per call with :meth:`FakeSlurm.fail_next`, matched by
method name (and optionally job id), so a test can make the controller
vanish in the middle of a cycle.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from slurmrl.cluster.builders import NodeSpec, assemble
from slurmrl.cluster.model import islands_for
from slurmrl.slurm.parse_gres import GpuRequest, GresItem
from slurmrl.slurm.snapshot import SlurmJob, SlurmNode, Snapshot


def small_cluster():
    """2 racks x 2 nodes x 8 GPUs in NVLink quads (half the local test cluster: small enough to fill by hand)."""

    def spec(name: str) -> NodeSpec:
        return NodeSpec(name, 8, "v100", islands_for("nvlink:4", 8), 64, 256000)

    return assemble(
        "fake", [("rack1", [spec("node01"), spec("node02")]), ("rack2", [spec("node03"), spec("node04")])]
    )


def pending(job_id: str, gpus: int, submit: float, *, nodes: int = 1, **kw) -> SlurmJob:
    per_node = gpus // nodes
    return SlurmJob(
        job_id=job_id,
        name=f"j{job_id}",
        user=kw.pop("user", "alice"),
        account=kw.pop("account", "ml"),
        partition=kw.pop("partition", "gpu"),
        state="PENDING",
        reason=kw.pop("reason", "Priority"),
        submit_time=submit,
        time_limit=kw.pop("time_limit", 3600.0),
        priority=kw.pop("priority", 1000),
        num_nodes=nodes,
        gpus=GpuRequest(gpus, per_node, "v100", "tres_per_node"),
        **kw,
    )


def running(job_id: str, node: str, gpus: Sequence[int], submit: float = 0.0) -> SlurmJob:
    return SlurmJob(
        job_id=job_id,
        name=f"r{job_id}",
        user="bob",
        account="ml",
        partition="gpu",
        state="RUNNING",
        submit_time=submit,
        start_time=submit + 1,
        num_nodes=1,
        nodes=(node,),
        gpus=GpuRequest(len(gpus), len(gpus), "v100", "tres_per_node"),
        gpu_alloc=((node, GresItem("v100", len(gpus), tuple(gpus))),),
    )


# update_many field -> (SlurmJob attribute, value as the job shows it)
_BATCH_FIELDS = {
    "site_factor": ("site_factor", lambda v: v),
    "priority": ("priority", lambda v: v),
    "nodes": ("required_nodes", lambda v: tuple(v or ())),
    "prefer": ("prefer", lambda v: v or ""),
    "admin_comment": ("admin_comment", lambda v: v or ""),
}


READS = ("snapshot", "finished_jobs")  # calls that change nothing


class FakeSlurm:
    def __init__(self, jobs: Sequence[SlurmJob] = (), now: float | None = None) -> None:
        self.cluster = small_cluster()
        self.jobs: dict[str, SlurmJob] = {j.job_id: j for j in jobs}
        self.calls: list[tuple[str, str, object]] = []
        self.failures: list[tuple[str, str | None, Exception]] = []
        self.now = now if now is not None else time.time()
        self.nice: dict[str, int] = {}  # job id -> nice, as sprio shows it
        self.explicit: set[str] = set()  # jobs whose priority an admin set by hand
        self.name_features = False  # True: every node carries its own name as a feature
        self.ended: list[SlurmJob] = []  # what accounting holds of jobs that ended (finished_jobs)
        self.gpus_tracked = True  # whether accounting keeps GPU counts (AccountingStorageTRES)

    # error injection
    def fail_next(self, method: str, exc: Exception, job_id: str | None = None) -> None:
        self.failures.append((method, job_id, exc))

    def _maybe_fail(self, method: str, job_id: str | None = None) -> None:
        for i, (m, jid, exc) in enumerate(self.failures):
            if m == method and (jid is None or jid == job_id):
                del self.failures[i]
                raise exc

    def writes(self, name: str | None = None) -> list[tuple[str, str, object]]:
        return [c for c in self.calls if c[0] not in READS and (name is None or c[0] == name)]

    def accounting_limits(self):
        """As sacctmgr shows QOS and association limits (none unless a test sets ``limits``)."""
        from slurmrl.daemon.limits import AccountLimits

        self._maybe_fail("accounting_limits")
        return getattr(self, "limits", None) or AccountLimits()

    def finished_jobs(self, since: float, until: float):
        """As sacct reads them back: ``ended`` jobs whose end lies in the window, oldest end first."""
        from slurmrl.slurm.accounting import Accounted

        self._maybe_fail("finished_jobs")
        self.calls.append(("finished_jobs", "", (since, until)))
        inside = [j for j in self.ended if j.end_time is not None and since <= j.end_time <= until]
        return Accounted(tuple(sorted(inside, key=lambda j: j.end_time)), gpus_tracked=self.gpus_tracked)

    # SlurmBackend
    def version(self) -> str:
        return "22.05.8"

    def snapshot(self) -> Snapshot:
        self._maybe_fail("snapshot")
        self.calls.append(("snapshot", "", None))
        nodes = []
        for node in self.cluster.nodes:
            used = sorted(
                g
                for j in self.jobs.values()
                if j.is_running
                for n, item in j.gpu_alloc
                if n == node.name
                for g in (item.indices or ())
            )
            nodes.append(
                SlurmNode(
                    name=node.name,
                    states=frozenset({"MIXED" if used else "IDLE"}),
                    partitions=("gpu", "debug"),
                    gpus=(GresItem("v100", 8, tuple(range(8))),),
                    gpus_used=(GresItem("v100", len(used), tuple(used)),) if used else (),
                    cpus=64,
                    memory_mb=256000,
                    features=frozenset({node.name}) if self.name_features else frozenset(),
                )
            )
        return Snapshot(self.now, "22.05.8", tuple(nodes), tuple(self.jobs.values()), self.cluster, "fake")

    def _set(self, method: str, job_id: str, value: object, **fields: object) -> None:
        self._maybe_fail(method, job_id)
        if job_id not in self.jobs:
            from slurmrl.slurm.run import JobNotFound

            raise JobNotFound(f"'scontrol update JobId={job_id}' failed: Invalid job id specified")
        self.calls.append((method, job_id, value))
        self.jobs[job_id] = replace(self.jobs[job_id], **fields)

    def set_site_factor(self, job_id: str, value: int) -> None:
        self._set("set_site_factor", job_id, value, site_factor=value)

    def set_priority(self, job_id: str, value: int) -> None:
        self._set("set_priority", job_id, value, priority=value)
        self.nice.pop(job_id, None)  # as Slurm: an explicit priority clears nice

    def reset_priority(self, job_id: str) -> None:
        self._set("reset_priority", job_id, None, priority=1000)
        self.explicit.discard(job_id)

    def set_required_nodes(self, job_id: str, nodelist: Sequence[str] | None) -> None:
        self._set(
            "set_required_nodes",
            job_id,
            tuple(nodelist) if nodelist else None,
            required_nodes=tuple(nodelist or ()),
        )

    def set_admin_comment(self, job_id: str, text: str) -> None:
        self._set("set_admin_comment", job_id, text, admin_comment=text)

    def set_prefer(self, job_id: str, text: str) -> None:
        self._set("set_prefer", job_id, text, prefer=text)

    def set_gpus(self, job_id: str, ask, pin: tuple[str, object] | None = None) -> None:
        """As ``scontrol update Gres=gpu:P NumNodes=N[-M] [NumTasks=T] [TasksPerNode=K] [NumCPUs=C]``
        on a pending job, with the pin (``ReqNodeList=``/``Prefer=``) in the same update.
        Logged as the request's text, followed by the pin where one came with it."""
        job = self.jobs.get(job_id)
        fields: dict[str, object] = {"num_nodes": ask.nodes}
        if job is not None:
            fields["gpus"] = GpuRequest(
                ask.total, ask.per_node, ask.gpu_type or job.gpus.gpu_type, "tres_per_node"
            )
        if ask.max_nodes is not None:
            fields["max_nodes"] = ask.max_nodes
        tasks = ask.tasks
        if tasks is None and job is not None and job.num_tasks is not None:  # raised to one per node
            tasks = max(job.num_tasks, ask.nodes)
        if tasks is not None:
            fields["num_tasks"] = tasks
        if ask.tasks_per_node is not None:
            fields["tasks_per_node"] = ask.tasks_per_node
        if ask.cpus is not None:
            fields["min_cpus"] = ask.cpus
        elif job is not None and job.min_cpus is not None:  # Slurm raises NumCPUs to one per node
            fields["min_cpus"] = max(job.min_cpus, ask.nodes)
        logged: object = ask.text
        if pin is not None:
            name, value = pin
            if name == "nodes":
                fields["required_nodes"] = tuple(value or ())  # type: ignore[arg-type]
            else:
                fields["prefer"] = str(value or "")
            logged = f"{ask.text} {name}={','.join(value) if isinstance(value, list) else value or ''}"
        self._set("set_gpus", job_id, logged, **fields)

    def update_many(self, job_ids: Sequence[str], name: str, value: object) -> None:
        """As ``scontrol update JobId=a,b,c``: every known id is updated, then the call fails
        naming the unknown ones (src/scontrol/update_job.c goes on after a refused id)."""
        from slurmrl.slurm.run import JobNotFound

        self._maybe_fail("update_many")
        self.calls.append(("update_many", ",".join(job_ids), (name, value)))
        if name == "nodes" and len(job_ids) > 1:  # a size change: scontrol takes one job only
            raise JobNotFound(f"'scontrol update JobId={','.join(job_ids)}' failed (exit 1): Invalid job ID")
        attr, conv = _BATCH_FIELDS[name]
        bad = [j for j in job_ids if j not in self.jobs]
        for jid in job_ids:
            if jid in self.jobs:
                self.jobs[jid] = replace(self.jobs[jid], **{attr: conv(value)})
                if name == "priority":
                    self.nice.pop(jid, None)  # as Slurm: an explicit priority clears nice
        if bad:
            from slurmrl.slurm.run import PartlyRefused

            raise PartlyRefused(
                f"'scontrol update JobId={','.join(job_ids)}' failed (exit 1): "
                f"Invalid job id specified for job {bad[-1]}",
                tuple(bad),
            )

    def set_nice(self, job_id: str, value: int) -> None:
        self._set("set_nice", job_id, value)
        self.nice[job_id] = value

    def priority_factors(self) -> dict:
        """What sprio would show: pending jobs only, SiteFactor 0 unless set."""
        from slurmrl.daemon.factors import PriorityFactors

        return {
            jid: PriorityFactors(j.site_factor or 0, self.nice.get(jid, 0), jid in self.explicit)
            for jid, j in self.jobs.items()
            if j.is_pending
        }

    def requeue(self, job_id: str) -> None:
        """As Slurm 22.05 requeues a running batch job: pending again, its submit time reset
        to now, its restart count up by one, no start, node or GPUs."""
        self._maybe_fail("requeue", job_id)
        job = self.jobs.get(job_id)
        if job is None:
            from slurmrl.slurm.run import JobNotFound

            raise JobNotFound(f"'scontrol requeue {job_id}' failed: Invalid job id specified")
        self.calls.append(("requeue", job_id, None))
        self.jobs[job_id] = replace(
            job,
            state="PENDING",
            reason="BeginTime",
            submit_time=self.now,
            start_time=None,
            restarts=job.restarts + 1,
            nodes=(),
            gpu_alloc=(),
        )

    # helpers for tests
    def start(self, job_id: str, node: str, gpus: Sequence[int]) -> None:
        j = self.jobs[job_id]
        self.jobs[job_id] = replace(
            j,
            state="RUNNING",
            start_time=self.now,
            nodes=(node,),
            gpu_alloc=((node, GresItem("v100", len(gpus), tuple(gpus))),),
        )
