"""Reading Slurm through pyslurm (libslurm bindings), for hosts that have it.

pyslurm talks to slurmctld directly, so a snapshot costs two RPCs and no
process start-up. It is an optional extra and must match the installed
Slurm exactly (pyslurm 25.11 for Slurm 25.11); both problems are reported as
a :class:`SlurmError` with the fix. Only pyslurm's documented API is used:
``Jobs.load()``, ``Nodes.load()``, ``Job`` attributes including
``gres_per_node`` and ``get_resource_layout_per_node()``, ``Node.configured_gres``
and ``Node.allocated_gres``. Writes go through ``scontrol update`` (the CLI
backend), which accepts every setting the daemon needs on every version.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from slurmrl.errors import SlurmError
from slurmrl.slurm.backend import live_cluster
from slurmrl.slurm.cli_backend import CliBackend
from slurmrl.slurm.parse_gres import GpuRequest, GresItem, gpu_request, parse_index_list
from slurmrl.slurm.parse_json import JOB_BASE_STATES, allocation
from slurmrl.slurm.parse_text import parse_hosts
from slurmrl.slurm.snapshot import SlurmJob, SlurmNode, Snapshot

SUPPORTED = "25.11"
INSTALL_HINT = "pip install 'slurmrl[pyslurm]' on a Slurm 25.11 host, or use --backend cli"


def import_pyslurm() -> ModuleType:
    try:
        module = importlib.import_module("pyslurm")
    except ImportError as exc:
        text = str(exc)
        if "libslurm" in text or "undefined symbol" in text or "version" in text.lower():
            raise SlurmError(
                f"pyslurm is installed but does not match this host's Slurm: {text}",
                hint=f"install the pyslurm release built for the installed Slurm ({INSTALL_HINT})",
            ) from None
        raise SlurmError("pyslurm is not installed", hint=INSTALL_HINT) from None
    version = str(getattr(module, "__version__", ""))
    if not version.startswith(SUPPORTED):
        raise SlurmError(
            f"pyslurm {version or '(unknown version)'} is installed; slurmrl supports pyslurm {SUPPORTED}",
            hint=INSTALL_HINT,
        )
    return module


def _gres_items(value: Any) -> tuple[GresItem, ...]:
    """pyslurm GRES dicts: ``{"gpu:v100": 8}`` or ``{"gpu:v100": {"count": "2", "indexes": "0-1"}}``."""
    out: list[GresItem] = []
    for key, val in (value or {}).items():
        name = str(key)
        if name.startswith(("gres/", "gres:")):
            name = name[5:]
        base, _, typ = name.partition(":")
        if base != "gpu":
            continue
        if isinstance(val, dict):
            indexes = val.get("indexes")
            out.append(
                GresItem(typ, int(val.get("count", 0)), parse_index_list(str(indexes)) if indexes else None)
            )
        else:
            out.append(GresItem(typ, int(val), None))
    return tuple(out)


def _per_node_text(gres: Any) -> str:
    items = _gres_items(gres)
    return ",".join(f"gpu:{i.type + ':' if i.type else ''}{i.count}" for i in items)


class PyslurmBackend:
    def __init__(self, *, conf: str | Path | None = None, module: ModuleType | None = None) -> None:
        self.pyslurm = module or import_pyslurm()
        self.conf = conf
        self._writer = CliBackend(conf=conf)

    def version(self) -> str:
        return str(getattr(self.pyslurm, "__version__", SUPPORTED))

    def snapshot(self) -> Snapshot:
        try:
            jobs = self.pyslurm.Jobs.load()
            nodes = self.pyslurm.Nodes.load()
        except Exception as exc:  # pyslurm.RPCError and friends: report, never a traceback
            raise SlurmError(f"pyslurm could not load jobs/nodes: {exc}", hint="is slurmctld up?") from None
        now = time.time()
        node_recs = tuple(self._node(n) for n in nodes.values())
        job_recs = tuple(self._job(j) for j in jobs.values())
        cluster, warnings = live_cluster(node_recs, self.conf)
        return Snapshot(now, self.version(), node_recs, job_recs, cluster, "pyslurm", warnings)

    @staticmethod
    def _node(n: Any) -> SlurmNode:
        state = str(n.state or "").upper()
        states = {s for s in state.replace("*", "").split("+") if s}
        if "*" in state:
            states.add("NOT_RESPONDING")
        return SlurmNode(
            name=n.name, states=frozenset(states), partitions=tuple(n.partitions or ()),
            gpus=_gres_items(n.configured_gres), gpus_used=_gres_items(n.allocated_gres),
            cpus=int(n.total_cpus or 0), memory_mb=int(n.real_memory or 0), reason=n.reason or "",
        )

    @staticmethod
    def _job(j: Any) -> SlurmJob:
        words = str(j.state or "").upper().split("+")
        state = next((w for w in words if w in JOB_BASE_STATES), words[0])
        array = j.array_id or None
        task = j.array_task_id
        waiting = j.array_tasks_waiting
        if array and task is not None:
            job_id, array_task = f"{array}_{task}", str(task)
        elif array and waiting:
            job_id, array_task = f"{array}_[{waiting}]", str(waiting)
        else:
            job_id, array_task = str(j.id), None
        nodes = parse_hosts(j.allocated_nodes or "") if state != "PENDING" else ()
        request: GpuRequest = gpu_request(per_node=_per_node_text(j.gres_per_node), num_nodes=j.num_nodes)
        detail: list[GresItem | None] = []
        if nodes:
            layout = j.get_resource_layout_per_node() or {}
            for name in nodes:
                items = _gres_items((layout.get(name) or {}).get("gres"))
                detail.append(
                    GresItem(items[0].type, sum(i.count for i in items), items[0].indices) if items else None
                )
        limit = j.time_limit
        reason = j.state_reason or ""
        return SlurmJob(
            job_id=job_id, name=j.name or "", user=j.user_name or "", account=j.account or "",
            partition=j.partition or "", qos=j.qos or "", state=state,
            state_flags=frozenset(w for w in words if w != state), reason="" if reason == "None" else reason,
            submit_time=float(j.submit_time or 0),
            start_time=float(j.start_time) if j.start_time and nodes else None,
            time_limit=None if limit is None or limit == math.inf else float(limit) * 60.0,
            priority=j.priority, num_nodes=j.num_nodes, required_nodes=parse_hosts(j.required_nodes or ""),
            nodes=nodes, gpus=request, gpu_alloc=allocation(nodes, detail if any(detail) else [], request),
            comment=j.comment or "", admin_comment=j.admin_comment or "",
            dependency=_dependency_text(j.dependencies),
            held=reason in ("JobHeldUser", "JobHeldAdmin") or (state == "PENDING" and j.priority == 0),
            array_job_id=array if array_task else None, array_task=array_task,
        )

    def set_site_factor(self, job_id: str, value: int) -> None:
        self._writer.set_site_factor(job_id, value)

    def set_priority(self, job_id: str, value: int) -> None:
        self._writer.set_priority(job_id, value)

    def reset_priority(self, job_id: str) -> None:
        self._writer.reset_priority(job_id)

    def set_required_nodes(self, job_id: str, nodelist: Sequence[str] | None) -> None:
        self._writer.set_required_nodes(job_id, nodelist)

    def set_admin_comment(self, job_id: str, text: str) -> None:
        self._writer.set_admin_comment(job_id, text)


def _dependency_text(deps: Any) -> str:
    """pyslurm gives ``{"afterok": [4], ...}``; Slurm's own spelling is ``afterok:4``."""
    if not deps:
        return ""
    if isinstance(deps, str):
        return deps
    parts = []
    for kind, ids in deps.items():
        if isinstance(ids, (list, tuple)):
            if ids:
                parts.append(f"{kind}:" + ":".join(str(i) for i in ids))
        elif ids:
            parts.append(str(kind))
    return ",".join(parts)
