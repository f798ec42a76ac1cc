"""What Slurm reports of one node and one job, as plain frozen records.

The readers (JSON, text, pyslurm) fill these; :mod:`slurmrl.slurm.constraints`
reduces them to usable nodes and :mod:`slurmrl.slurm.snapshot` gathers them
into one reading of the cluster. Both build on this module, so neither has to
import the other's records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurmrl.slurm.elastic import ElasticTag, GpuAsk, current_ask, elastic_tag
from slurmrl.slurm.parse_gres import NO_GPUS, GpuRequest, GresItem

# Node states in which no new job may start: their GPUs are never offered to
# a policy as free, whatever Slurm reports as in use there.
UNAVAILABLE_STATES = frozenset(
    {
        "DOWN",
        "DRAIN",
        "DRAINED",
        "DRAINING",
        "INVAL",
        "INVALID",
        "INVALID_REG",
        "FUTURE",
        "NOT_RESPONDING",
        "MAINT",
        "MAINTENANCE",
        "RESERVED",
        "FAIL",
        "FAILING",
        "ERROR",
        "UNKNOWN",
        "POWERED_DOWN",
        "POWERING_DOWN",
        "POWER_DOWN",
        "POWERING_UP",
        "REBOOT_ISSUED",
        "REBOOT_REQUESTED",
        "PLANNED",
    }
)

# Pending reasons that mean the job cannot start whatever a policy decides.
INELIGIBLE_REASONS = frozenset(
    {
        "Dependency",
        "DependencyNeverSatisfied",
        "JobHeldUser",
        "JobHeldAdmin",
        "BeginTime",
        "JobArrayTaskLimit",
    }
)

_MODEL = re.compile(r"(?:^|[\s,;])model=([A-Za-z0-9_.\-/]+)")


@dataclass(frozen=True, slots=True)
class SlurmNode:
    name: str
    states: frozenset[str]  # upper case, base state and flags: {"MIXED", "DRAIN"}
    partitions: tuple[str, ...] = ()
    gpus: tuple[GresItem, ...] = ()  # configured
    gpus_used: tuple[GresItem, ...] = ()
    cpus: int = 0
    memory_mb: int = 0
    reason: str = ""
    features: frozenset[str] = frozenset()  # active features (available ones where none are active)
    cpus_alloc: int = 0
    memory_alloc_mb: int = 0

    @property
    def gpu_count(self) -> int:
        return sum(g.count for g in self.gpus)

    @property
    def gpu_type(self) -> str:
        types = [g.type for g in self.gpus if g.type]
        return types[0] if types else ""

    @property
    def used_count(self) -> int:
        return sum(g.count for g in self.gpus_used)

    @property
    def used_indices(self) -> tuple[int, ...] | None:
        """GPU indices in use, or None when Slurm gave only a count."""
        if any(g.indices is None for g in self.gpus_used if g.count):
            return None
        return tuple(sorted({i for g in self.gpus_used for i in (g.indices or ())}))

    @property
    def unavailable(self) -> bool:
        return bool(self.states & UNAVAILABLE_STATES)


@dataclass(frozen=True, slots=True)
class SlurmJob:
    job_id: str  # what scontrol accepts: "123", "7_2"; a pending array record is "7_[3-5]"
    name: str = ""
    user: str = ""
    account: str = ""
    partition: str = ""
    qos: str = ""
    state: str = ""  # base state, upper case: PENDING, RUNNING, ...
    reason: str = ""
    submit_time: float = 0.0
    start_time: float | None = None
    end_time: float | None = None  # ended jobs (and a running job's limit-based end, as Slurm shows it)
    restarts: int = 0  # times Slurm requeued the job
    time_limit: float | None = None  # seconds; None = unlimited or not set
    priority: int | None = None
    site_factor: int | None = None
    num_nodes: int | None = None  # nodes requested (pending) or held (running)
    required_nodes: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()  # allocated nodes, in Slurm's order
    gpus: GpuRequest = NO_GPUS
    # Per allocated node: the GPUs the job holds there (indices may be unknown).
    gpu_alloc: tuple[tuple[str, GresItem], ...] = ()
    comment: str = ""
    admin_comment: str = ""
    dependency: str = ""
    held: bool = False
    array_job_id: int | None = None
    array_task: str | None = None  # task id ("3"), or pending task range ("3-5%2")
    # The numeric JobId (what sprio and the job's own record print; an array task split
    # off its array has one of its own); None where the reader does not give it.
    slurm_id: int | None = None
    state_flags: frozenset[str] = frozenset()
    # What limits where the job may run (pending jobs): --exclude, --constraint,
    # --prefer, per-node CPUs and memory (MB), --exclusive, the --nodes maximum
    # (``num_nodes`` is the minimum; None = no maximum given).
    excluded_nodes: tuple[str, ...] = ()
    constraint: str = ""
    prefer: str = ""
    cpus_per_node: int | None = None
    memory_per_node_mb: int | None = None
    exclusive: bool = False
    max_nodes: int | None = None
    min_cpus: int | None = None  # CPUs asked for in all (NumCPUs); None where the reader does not say
    # The task layout (NumTasks, --ntasks-per-node): an elastic rewrite must carry it over
    # and give it back. None where unset or where the reader does not say.
    num_tasks: int | None = None
    tasks_per_node: int | None = None

    @property
    def partitions(self) -> tuple[str, ...]:
        """Partitions the job may run in (a pending job may list several)."""
        return tuple(p for p in self.partition.split(",") if p)

    @property
    def is_pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def is_running(self) -> bool:
        return self.state in ("RUNNING", "SUSPENDED", "COMPLETING") and bool(self.nodes)

    @property
    def eligible(self) -> bool:
        return self.is_pending and not self.held and self.reason not in INELIGIBLE_REASONS

    @property
    def held_gpus(self) -> int:
        return sum(item.count for _, item in self.gpu_alloc)

    @property
    def model(self) -> str:
        for text in (self.comment, self.admin_comment, self.name):
            m = _MODEL.search(text or "")
            if m:
                return m.group(1)
        return ""

    @property
    def elastic(self) -> ElasticTag | None:
        """The user's ``gpus=MIN-MAX`` tag in the comment (see :mod:`slurmrl.slurm.elastic`)."""
        return elastic_tag(self.comment, self.gpus) if "gpus=" in (self.comment or "") else None

    @property
    def gpu_range(self) -> tuple[int, int] | None:
        """The GPU counts the job may start with, where its tag is honoured; None: rigid."""
        tag = self.elastic
        return tag.gpu_range if tag is not None else None

    @property
    def gpu_ask(self) -> GpuAsk | None:
        """The request as ``scontrol update`` would set it again (None unless GPUs are asked per node)."""
        return current_ask(
            self.gpus, self.num_nodes, self.max_nodes, self.min_cpus, self.num_tasks, self.tasks_per_node
        )

    def gpu_indices(self) -> dict[str, tuple[int, ...] | None]:
        return {node: item.indices for node, item in self.gpu_alloc}

    def task_ids(self) -> list[str]:
        """Job ids a pending array record stands for (``7_3``, ``7_4``...), else ``[job_id]``."""
        if self.array_job_id is None or self.array_task is None or "[" not in self.job_id:
            return [self.job_id]
        spec = self.array_task.split("%", 1)[0]
        ids: list[str] = []
        for part in spec.split(","):
            lo, sep, rest = part.partition("-")
            step = 1
            if ":" in rest:
                rest, _, s = rest.partition(":")
                step = int(s) if s.isdigit() and int(s) > 0 else 1
            if not lo.isdigit() or (sep and not rest.isdigit()):
                return [self.job_id]
            hi = int(rest) if sep else int(lo)
            ids.extend(f"{self.array_job_id}_{t}" for t in range(int(lo), hi + 1, step))
        return ids or [self.job_id]
