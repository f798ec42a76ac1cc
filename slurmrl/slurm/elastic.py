"""Elastic jobs on Slurm: the user's opt-in tag, and the GPU request the daemon may rewrite.

A user lets the daemon choose the GPU count of a pending job by writing
``gpus=MIN-MAX`` in the job's comment (``sbatch --comment "gpus=2-8"``),
beside a ``model=`` tag if there is one. Only the comment counts: it is the
user's own field, and resizing a job is the user's decision to allow. The
tag is honoured only where the daemon can rewrite the request faithfully:
GPUs asked per node (``--gres=gpu:N`` or ``--gpus-per-node=N``, which Slurm
keeps in ``tres_per_node``), and a range holding what the job asks for now.

The rewrite is one ``scontrol update JobId=.. Gres=gpu[:type]:P NumNodes=N
NumTasks=T [TasksPerNode=K] [NumCPUs=C]``, with the daemon's pin in the same
update (one update wakes the scheduler once). On Slurm 22.05 scontrol turns
``Gres=`` into ``tres_per_node`` with the release's own prefix (``gres:``;
``gres/`` in later releases: ``gres_prepend_tres_type``), and slurmctld
accepts a new ``tres_per_node`` and ``min_nodes`` only for a pending job, from
its owner or an operator, re-validating the GRES against the node count
(``_update_job`` in src/slurmctld/job_mgr.c, 22.05).

The task layout moves with the node count: growing ``min_nodes`` raises the
job's ``num_tasks`` to at least the node count and ``min_cpus`` to tasks times
CPUs per task, and shrinking lowers neither (same function). So every rewrite
sets the tasks and CPUs it means, and the give-back sets the job's own
``NumTasks``, ``TasksPerNode`` and ``NumCPUs`` again. A layout the rewrite
cannot carry over is refused (:func:`resized_layout`).

``NumNodes=K`` leaves the job's maximum as it is on 22.05 (``get_resource_arg_range``)
but sets it to K from 23.02 on (``verify_node_count`` in src/common/proc_args.c);
so the maximum is always written out: ``K-M``, or ``K-0`` (no maximum) from 23.02.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurmrl.errors import SlurmError
from slurmrl.slurm.parse_gres import GpuRequest

TAG = "gpus"
_TAG = re.compile(r"(?:^|[\s,;])gpus=(\S*)")
_RANGE = re.compile(r"^(\d+)-(\d+)$")
_ASK = re.compile(r"^(\d+)x(\d+)(?:-(\d+))?((?:,(?:cpus|tasks|tpn|type)=[^,]+)*)$")
_INT_KEYS = ("cpus", "tasks", "tpn")
# From this release on ``NumNodes=K`` sets the maximum too (verify_node_count).
NODE_COUNT_SETS_MAX = (23, 2)
_GPU_TYPE = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True, slots=True)
class ElasticTag:
    """A job's ``gpus=`` tag: the range it grants, or why it is not honoured."""

    text: str  # the tag as written, e.g. "gpus=2-8"
    gpu_range: tuple[int, int] | None
    problem: str = ""  # "" when honoured


def elastic_tag(comment: str, request: GpuRequest) -> ElasticTag | None:
    """The tag in ``comment`` checked against the job's ``request``; None without a tag."""
    m = _TAG.search(comment or "")
    if m is None:
        return None
    text = f"{TAG}={m.group(1)}"
    r = _RANGE.match(m.group(1))
    if r is None or not 1 <= int(r.group(1)) <= int(r.group(2)):
        return ElasticTag(text, None, f"malformed: expected {TAG}=MIN-MAX with 1 <= MIN <= MAX")
    low, high = int(r.group(1)), int(r.group(2))
    if request.source != "tres_per_node" or not request.per_node:
        return ElasticTag(
            text, None, "elastic jobs must ask for GPUs per node (--gres=gpu:N or --gpus-per-node=N)"
        )
    if request.other_gres:
        return ElasticTag(
            text, None, "the job asks for other GRES beside GPUs, which a GPU rewrite would drop"
        )
    if not low <= request.total <= high:
        return ElasticTag(
            text, None, f"the job asks for {request.total} GPUs, outside its range {low}-{high}"
        )
    return ElasticTag(text, (low, high))


@dataclass(frozen=True, slots=True)
class GpuAsk:
    """A per-node GPU request, with the task layout that goes with it, as ``scontrol update`` sets it.

    ``max_nodes`` None means no maximum; ``cpus``, ``tasks`` and ``tasks_per_node``
    None leave ``NumCPUs``, ``NumTasks`` and ``TasksPerNode`` as they are (a record
    written before they were kept). Kept in the daemon's record and audit note as
    :attr:`text` (no spaces: ``4x2``, ``8x1-1,cpus=32,tasks=1,tpn=1,type=v100``).
    """

    per_node: int
    nodes: int
    gpu_type: str = ""
    max_nodes: int | None = None
    cpus: int | None = None
    tasks: int | None = None
    tasks_per_node: int | None = None

    @property
    def total(self) -> int:
        return self.per_node * self.nodes

    @property
    def text(self) -> str:
        out = f"{self.per_node}x{self.nodes}" + (f"-{self.max_nodes}" if self.max_nodes else "")
        for key, value in (("cpus", self.cpus), ("tasks", self.tasks), ("tpn", self.tasks_per_node)):
            if value:
                out += f",{key}={value}"
        if self.gpu_type:
            out += f",type={self.gpu_type}"
        return out

    @staticmethod
    def parse(text: str) -> GpuAsk:
        m = _ASK.match(text or "")
        extra = dict(part.split("=", 1) for part in m.group(4).split(",") if part) if m else {}
        if m is None or not all(extra[k].isdigit() for k in _INT_KEYS if k in extra):
            raise SlurmError(
                f"'{text}' is not a GPU request "
                "(expected PERNODExNODES[-MAX][,cpus=C][,tasks=T][,tpn=K][,type=T])"
            )
        number = {k: int(extra[k]) if k in extra else None for k in _INT_KEYS}
        return GpuAsk(
            per_node=int(m.group(1)),
            nodes=int(m.group(2)),
            gpu_type=extra.get("type", ""),
            max_nodes=int(m.group(3)) if m.group(3) else None,
            cpus=number["cpus"],
            tasks=number["tasks"],
            tasks_per_node=number["tpn"],
        )

    def settings(self, version: tuple[int, ...]) -> tuple[str, ...]:
        """The checked ``scontrol update`` arguments for a Slurm of ``version`` (major, minor, ...)."""
        check_ask(self)
        gres = f"gpu:{self.gpu_type}:{self.per_node}" if self.gpu_type else f"gpu:{self.per_node}"
        if self.max_nodes:
            nodes = f"{self.nodes}-{self.max_nodes}"
        elif tuple(version[:2]) >= NODE_COUNT_SETS_MAX:
            nodes = f"{self.nodes}-0"  # a plain count would set the maximum to it
        else:
            nodes = str(self.nodes)  # 22.05: the maximum is left as it is (none)
        out = [f"Gres={gres}", f"NumNodes={nodes}"]
        for name, value in (
            ("NumTasks", self.tasks),
            ("TasksPerNode", self.tasks_per_node),
            ("NumCPUs", self.cpus),
        ):
            if value:
                out.append(f"{name}={value}")
        return tuple(out)


def check_ask(ask: GpuAsk) -> GpuAsk:
    if ask.per_node < 1 or ask.nodes < 1:
        raise SlurmError(f"GPU request {ask.text}: GPUs per node and nodes must be at least 1")
    if ask.max_nodes is not None and ask.max_nodes < ask.nodes:
        raise SlurmError(f"GPU request {ask.text}: the node maximum is below the minimum")
    if ask.gpu_type and not _GPU_TYPE.match(ask.gpu_type):
        raise SlurmError(f"GPU request {ask.text}: GPU type {ask.gpu_type!r} holds unexpected characters")
    return ask


def current_ask(
    request: GpuRequest,
    nodes: int | None,
    max_nodes: int | None,
    cpus: int | None,
    tasks: int | None = None,
    tasks_per_node: int | None = None,
) -> GpuAsk | None:
    """A pending job's request as a :class:`GpuAsk` (None unless asked per node): what revert restores."""
    if request.source != "tres_per_node" or not request.per_node:
        return None
    return GpuAsk(request.per_node, nodes or 1, request.gpu_type, max_nodes, cpus, tasks, tasks_per_node)


def resized_layout(
    current: GpuAsk, per_node: int, nodes: int
) -> tuple[tuple[int | None, int | None, int | None], str]:
    """``((tasks, tasks per node, cpus), "")`` for ``current`` rewritten to ``per_node`` GPUs on
    ``nodes`` nodes, or ``((None, None, None), why not)``.

    ``--ntasks-per-node`` is carried over where it means one task per node (1) or one
    task per GPU (equal to the GPUs per node, then scaled with them); a job without it
    must run one task per node. Each task keeps its CPUs. Anything else (8 tasks per
    node on 4 GPUs, 16 tasks spread by Slurm) has no faithful rewrite.
    """
    none: tuple[int | None, int | None, int | None] = (None, None, None)
    tasks, per = current.tasks, current.tasks_per_node
    if per:
        if per_node != current.per_node and per not in (1, current.per_node):
            return none, (
                f"its --ntasks-per-node={per} is neither one task per node nor one per GPU, "
                f"which a rewrite to {per_node} GPUs per node cannot keep"
            )
        new_per = per_node if per == current.per_node and per != 1 else per
        new_tasks = new_per * nodes
    else:
        new_per = None
        if tasks not in (None, current.nodes) and nodes != current.nodes:
            return none, (
                f"it asks for {tasks} tasks on {current.nodes} node(s) without --ntasks-per-node, "
                f"a layout a rewrite to {nodes} node(s) cannot keep"
            )
        new_tasks = nodes if tasks in (None, current.nodes) else tasks
    cpus = current.cpus
    if cpus and tasks and cpus % tasks == 0:
        cpus = cpus // tasks * new_tasks
    else:
        cpus = None  # Slurm's own arithmetic (at least tasks x CPUs per task)
    return (new_tasks, new_per, cpus), ""
