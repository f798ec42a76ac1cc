"""A job's accounting limits (QOS and association), checked before the daemon grows a job.

The daemon updates jobs as an Operator, and slurmctld skips the accounting check
for an Operator's update: the request is taken even past a QOS or association
limit, and every TRES of the job is marked as set by an admin
(``acct_policy_limit_set.tres[*] = ADMIN_SET_LIMIT`` in ``_update_job``,
src/slurmctld/job_mgr.c; checked only ``if (!operator && ...)``). The node and
CPU marks stay with the job (``job_ptr->limit_set.tres``), so from then on
``acct_policy.c`` skips its node and CPU limits, also after the give-back:
nothing the daemon can send clears them. So a rewrite that asks for more than
the job had is checked here first, against the limits an ordinary update by the
user would meet, and refused (audited) where it would exceed one.

Read with two ``sacctmgr`` queries per cycle, and only in cycles where an elastic
job is in scope. The check is conservative: every association on the way from the
job's user association up to the root counts (a child may in fact have a higher
limit of its own), and a group limit (``GrpTRES``) is compared with the job alone.
Partition QOS limits are not read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from slurmrl.daemon.config import DaemonConfig
from slurmrl.slurm.accounting import parse_tres
from slurmrl.slurm.backend import SlurmBackend
from slurmrl.slurm.elastic import GpuAsk
from slurmrl.slurm.run import call
from slurmrl.slurm.snapshot import SlurmJob

QOS_FORMAT = "Name,MaxTRES,MaxTRESPerNode,GrpTRES"
ASSOC_FORMAT = "Account,User,Partition,ParentName,MaxTRES,MaxTRESPerNode,GrpTRES"


@dataclass(frozen=True)
class TresLimits:
    """One QOS's or association's TRES limits (TRES name, e.g. ``gres/gpu``, -> count)."""

    source: str  # "QOS normal", "association ml/alice"
    per_job: Mapping[str, int] = field(default_factory=dict)  # MaxTRES (MaxTRESPerJob)
    per_node: Mapping[str, int] = field(default_factory=dict)  # MaxTRESPerNode
    group: Mapping[str, int] = field(default_factory=dict)  # GrpTRES


@dataclass(frozen=True)
class Association:
    limits: TresLimits
    parent: str = ""  # ParentName of an account's own row


@dataclass(frozen=True)
class AccountLimits:
    """Limits by QOS name and by association (account, user, partition)."""

    qos: Mapping[str, TresLimits] = field(default_factory=dict)
    assoc: Mapping[tuple[str, str, str], Association] = field(default_factory=dict)
    error: str = ""  # why they could not be read: every grow is refused then

    def for_job(self, job: SlurmJob) -> list[TresLimits]:
        """The QOS's limits and those of every association from the job's user up to the root."""
        out = [self.qos[job.qos]] if job.qos in self.qos else []
        row = self.assoc.get((job.account, job.user, job.partition)) or self.assoc.get(
            (job.account, job.user, "")
        )
        if row is not None:
            out.append(row.limits)
        account, seen = job.account, set()
        while account and account not in seen:
            seen.add(account)
            row = self.assoc.get((account, "", ""))
            if row is None:
                break
            out.append(row.limits)
            account = row.parent
        return out


def parse_qos(text: str) -> dict[str, TresLimits]:
    """``sacctmgr -n -P show qos format=QOS_FORMAT`` -> QOS name -> limits."""
    out: dict[str, TresLimits] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 4 or not parts[0]:
            continue
        name, per_job, per_node, group = parts[:4]
        out[name] = TresLimits(f"QOS {name}", parse_tres(per_job), parse_tres(per_node), parse_tres(group))
    return out


def parse_assoc(text: str) -> dict[tuple[str, str, str], Association]:
    """``sacctmgr -n -P show assoc format=ASSOC_FORMAT`` -> (account, user, partition) -> row."""
    out: dict[tuple[str, str, str], Association] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 7 or not parts[0]:
            continue
        account, user, partition, parent, per_job, per_node, group = parts[:7]
        who = f"{account}/{user}" if user else account
        limits = TresLimits(
            f"association {who}", parse_tres(per_job), parse_tres(per_node), parse_tres(group)
        )
        out[(account, user, partition)] = Association(limits, parent)
    return out


def read_limits(backend: SlurmBackend, config: DaemonConfig) -> AccountLimits:
    """Two ``sacctmgr`` queries (a backend may answer itself, e.g. a test fake); raises
    :class:`SlurmError` when accounting cannot be read."""
    own = getattr(backend, "accounting_limits", None)
    if own is not None:
        return own()
    env = {"SLURM_CONF": config.slurm.conf} if config.slurm.conf else None

    def show(*what: str) -> str:
        cmd = ["sacctmgr", "-n", "-P", "show", *what]
        return call(cmd, timeout=config.slurm.timeout, env=env).stdout

    qos = parse_qos(show("qos", f"format={QOS_FORMAT}"))
    assoc = parse_assoc(show("assoc", f"format={ASSOC_FORMAT}"))
    return AccountLimits(qos, assoc)


def request_tres(ask: GpuAsk, min_cpus: int | None) -> tuple[dict[str, int], dict[str, int]]:
    """``(per job, per node)`` TRES of a request, as the limits count them."""
    cpus = ask.cpus or max(min_cpus or 0, ask.nodes)
    job = {"node": ask.nodes, "cpu": cpus, "gres/gpu": ask.total}
    node = {"cpu": math.ceil(cpus / ask.nodes), "gres/gpu": ask.per_node}
    if ask.gpu_type:
        job[f"gres/gpu:{ask.gpu_type.lower()}"] = ask.total
        node[f"gres/gpu:{ask.gpu_type.lower()}"] = ask.per_node
    return job, node


def grows(current: GpuAsk, ask: GpuAsk) -> bool:
    """Whether ``ask`` asks for more of anything than ``current``: only then can it pass a limit."""
    return (
        ask.nodes > current.nodes
        or ask.total > current.total
        or ask.per_node > current.per_node
        or (ask.cpus or 0) > (current.cpus or 0)
    )


def limit_problem(job: SlurmJob, ask: GpuAsk, limits: Iterable[TresLimits]) -> str:
    """Why ``ask`` would exceed one of ``limits`` (the first found), or ""."""
    per_job, per_node = request_tres(ask, job.min_cpus)
    for lim in limits:
        for kind, wanted, table in (
            ("MaxTRESPerJob", per_job, lim.per_job),
            ("MaxTRESPerNode", per_node, lim.per_node),
            ("GrpTRES", per_job, lim.group),
        ):
            for name, most in sorted(table.items()):
                if wanted.get(name, 0) > most:
                    return f"{lim.source} {kind} {name}={most} (it would ask for {wanted[name]})"
    return ""
