"""Elastic jobs on Slurm: the user's opt-in tag, and the GPU request the daemon may rewrite.

A user lets the daemon choose the GPU count of a pending job by writing
``gpus=MIN-MAX`` in the job's comment (``sbatch --comment "gpus=2-8"``),
beside a ``model=`` tag if there is one. Only the comment counts: it is the
user's own field, and resizing a job is the user's decision to allow. The
tag is honoured only where the daemon can rewrite the request faithfully:
GPUs asked per node (``--gres=gpu:N`` or ``--gpus-per-node=N``, which Slurm
keeps in ``tres_per_node``), and a range holding what the job asks for now.

The rewrite is one ``scontrol update JobId=.. Gres=gpu[:type]:P NumNodes=N``.
On Slurm 22.05 scontrol turns ``Gres=`` into ``tres_per_node`` with the
release's own prefix (``gres:``; ``gres/`` in later releases:
``gres_prepend_tres_type``), and slurmctld accepts a new ``tres_per_node``
and ``min_nodes`` only for a pending job, from its owner or an operator,
re-validating the GRES against the node count (``_update_job`` in
src/slurmctld/job_mgr.c, 22.05). Growing the node count raises the job's
``min_cpus``, which shrinking does not lower: the original ``NumCPUs`` is
therefore part of what is given back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurmrl.errors import SlurmError
from slurmrl.slurm.parse_gres import GpuRequest

TAG = "gpus"
_TAG = re.compile(r"(?:^|[\s,;])gpus=(\S*)")
_RANGE = re.compile(r"^(\d+)-(\d+)$")
_ASK = re.compile(r"^(\d+)x(\d+)(?:-(\d+))?((?:,(?:cpus|type)=[^,]+)*)$")
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
    """A per-node GPU request as ``scontrol update`` sets it.

    ``max_nodes`` None leaves the job's --nodes maximum as it is; ``cpus``
    None leaves ``NumCPUs`` as it is. Kept in the daemon's record and audit
    note as :attr:`text` (no spaces: ``4x2``, ``8x1-1,cpus=1,type=v100``).
    """

    per_node: int
    nodes: int
    gpu_type: str = ""
    max_nodes: int | None = None
    cpus: int | None = None

    @property
    def total(self) -> int:
        return self.per_node * self.nodes

    @property
    def text(self) -> str:
        out = f"{self.per_node}x{self.nodes}" + (f"-{self.max_nodes}" if self.max_nodes else "")
        if self.cpus:
            out += f",cpus={self.cpus}"
        if self.gpu_type:
            out += f",type={self.gpu_type}"
        return out

    @staticmethod
    def parse(text: str) -> GpuAsk:
        m = _ASK.match(text or "")
        if m is None:
            raise SlurmError(
                f"'{text}' is not a GPU request (expected PERNODExNODES[-MAX][,cpus=C][,type=T])"
            )
        extra = dict(part.split("=", 1) for part in m.group(4).split(",") if part)
        return GpuAsk(
            per_node=int(m.group(1)),
            nodes=int(m.group(2)),
            gpu_type=extra.get("type", ""),
            max_nodes=int(m.group(3)) if m.group(3) else None,
            cpus=int(extra["cpus"]) if "cpus" in extra else None,
        )

    def settings(self) -> tuple[str, ...]:
        """The checked ``scontrol update`` arguments: ``Gres=`` and ``NumNodes=``, and ``NumCPUs=``."""
        check_ask(self)
        gres = f"gpu:{self.gpu_type}:{self.per_node}" if self.gpu_type else f"gpu:{self.per_node}"
        nodes = f"{self.nodes}-{self.max_nodes}" if self.max_nodes else str(self.nodes)
        out = (f"Gres={gres}", f"NumNodes={nodes}")
        return out + ((f"NumCPUs={self.cpus}",) if self.cpus else ())


def check_ask(ask: GpuAsk) -> GpuAsk:
    if ask.per_node < 1 or ask.nodes < 1:
        raise SlurmError(f"GPU request {ask.text}: GPUs per node and nodes must be at least 1")
    if ask.max_nodes is not None and ask.max_nodes < ask.nodes:
        raise SlurmError(f"GPU request {ask.text}: the node maximum is below the minimum")
    if ask.gpu_type and not _GPU_TYPE.match(ask.gpu_type):
        raise SlurmError(f"GPU request {ask.text}: GPU type {ask.gpu_type!r} holds unexpected characters")
    return ask


def current_ask(
    request: GpuRequest, nodes: int | None, max_nodes: int | None, cpus: int | None
) -> GpuAsk | None:
    """A pending job's request as a :class:`GpuAsk` (None unless asked per node): what revert restores."""
    if request.source != "tres_per_node" or not request.per_node:
        return None
    return GpuAsk(request.per_node, nodes or 1, request.gpu_type, max_nodes, cpus)
