"""Reading Slurm through pyslurm (libslurm bindings), for hosts that have it.

pyslurm talks to slurmctld directly, so a snapshot costs two RPCs and no
process start-up. It is an optional extra and must match the installed
Slurm exactly (pyslurm 25.11 for Slurm 25.11); both problems are reported as
a :class:`SlurmError` with the fix. Only pyslurm's documented API is used:
``Jobs.load()``, ``Nodes.load()``, ``Job`` attributes and
``get_resource_layout_per_node()``, ``Node.configured_gres``; for accounting,
``db.Jobs.load()`` with a ``db.JobFilter`` and ``slurmctld.Config.load()``.
GPUs in use on a node are summed from the running jobs' layouts (see
:meth:`PyslurmBackend._node`).
Writes go through ``scontrol update`` (the CLI backend, with ``SLURM_CONF``
set to the configured slurm.conf), which accepts every setting the daemon
needs on every version. Both kinds of request are counted in the runner's
statistics (``slurmrl_slurm_calls_total``): the RPCs under ``pyslurm ...``.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from slurmrl.errors import SlurmError
from slurmrl.slurm.accounting import ENDED_STATES, Accounted, collect, gpus_of_tres, tres_has_gpus
from slurmrl.slurm.backend import live_cluster
from slurmrl.slurm.cli_backend import CliBackend
from slurmrl.slurm.elastic import GpuAsk
from slurmrl.slurm.parse_gres import GpuRequest, GresItem, gpu_items, gpu_request, parse_index_list
from slurmrl.slurm.parse_json import JOB_BASE_STATES, allocation, per_node_cpus, per_node_memory
from slurmrl.slurm.parse_text import parse_hosts
from slurmrl.slurm.run import timed
from slurmrl.slurm.snapshot import SlurmJob, SlurmNode, Snapshot

SUPPORTED = "25.11"
UNTRACKED_GPUS = (
    "GPUs are in use but AccountingStorageTRES does not track gres/gpu: through pyslurm, "
    "jobs that ask with --gpus=N look like CPU-only jobs; track gres/gpu or use the cli backend"
)
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
    """pyslurm GRES dicts, from ``cstr.to_gres_dict``: ``{"gpu:v100": 8}``, ``{"gres/gpu:v100": 2}``
    (``gres_per_node``, which keeps Slurm's ``gres/`` prefix), or
    ``{"gpu:v100": {"count": 2, "indexes": "0-1"}}`` where Slurm gave indices."""
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


def _gres_text(items: tuple[GresItem, ...]) -> str:
    """GRES items back in Slurm's ``tres_per_*`` spelling (``gres/gpu:v100:2``)."""
    return ",".join(f"gres/gpu:{i.type + ':' if i.type else ''}{i.count}" for i in items)


def _tres_gpus(value: Any) -> tuple[GresItem, ...]:
    """GPUs of a pyslurm ``TrackableResources`` (``.gres`` maps ``gpu[:type]`` to objects with
    ``count``/``type``), of a raw TRES string, or of a GRES dict; None/empty -> ()."""
    if value is None:
        return ()
    if isinstance(value, str):
        return gpu_items(value)
    if isinstance(value, dict):
        return _gres_items(value)
    gres = getattr(value, "gres", None) or {}
    out = []
    for key, item in gres.items():
        base, _, typ = str(key).partition(":")
        if base == "gpu":
            out.append(
                GresItem(str(getattr(item, "type", None) or typ or ""), int(getattr(item, "count", 0)), None)
            )
    return tuple(out)


def gpu_total(items: tuple[GresItem, ...]) -> int:
    """GPUs counted once where Slurm tracks both ``gres/gpu`` and ``gres/gpu:<type>``
    (AccountingStorageTRES with typed GPUs lists each allocation under both)."""
    untyped = [i.count for i in items if not i.type]
    return sum(untyped) if untyped else sum(i.count for i in items)


def _job_request(j: Any) -> GpuRequest:
    """The GPU ask from every place pyslurm 25.11 exposes one.

    ``tres_per_job`` (``--gpus=N``) and the other ``tres_per_*`` are
    ``TrackableResources`` parsed with ``key=value`` rules, which drop Slurm's
    ``gres/gpu:N`` spelling (None comes back); they are read in case a
    release fixes that. ``gres_per_node`` (deprecated, ``--gres``/
    ``--gpus-per-node``) parses that spelling; ``requested_tres``
    (``tres_req_str``) holds the total wherever AccountingStorageTRES
    tracks ``gres/gpu``.
    """
    per_node = _gres_text(_gres_items(getattr(j, "gres_per_node", None))) or _gres_text(
        _tres_gpus(getattr(j, "tres_per_node", None))
    )
    requested = gpu_total(_tres_gpus(getattr(j, "requested_tres", None)))
    return gpu_request(
        per_node=per_node,
        per_job=_gres_text(_tres_gpus(getattr(j, "tres_per_job", None))),
        per_task=_gres_text(_tres_gpus(getattr(j, "tres_per_task", None))),
        per_socket=_gres_text(_tres_gpus(getattr(j, "tres_per_socket", None))),
        tres_req=f"gres/gpu={requested}" if requested else "",
        num_nodes=j.num_nodes,
        num_tasks=getattr(j, "ntasks", None),
        tasks_per_node=getattr(j, "ntasks_per_node", None) or None,
    )


def _job_id(j: Any) -> tuple[str, int | None, str | None]:
    """``(job id, array job id, task)``. pyslurm reads ``array_task_id`` 0 as unset (None),
    so a task record of an array with neither id nor pending range is task 0."""
    array = j.array_id or None
    task = j.array_task_id
    waiting = j.array_tasks_waiting
    if array and task is None and not waiting:
        task = 0
    if array and task is not None:
        return f"{array}_{task}", array, str(task)
    if array and waiting:
        return f"{array}_[{waiting}]", array, str(waiting)
    return str(j.id), None, None


def _csv(value: Any) -> str:
    """pyslurm lists (``constraints``, ``preferred_features``: Slurm's text split at commas) -> text."""
    if not value:
        return ""
    return value if isinstance(value, str) else ",".join(str(v) for v in value)


class PyslurmBackend:
    def __init__(self, *, conf: str | Path | None = None, module: ModuleType | None = None) -> None:
        self.pyslurm = module or import_pyslurm()
        self.conf = conf
        self._writer = CliBackend(conf=conf)  # sets SLURM_CONF=conf for scontrol

    def version(self) -> str:
        return str(getattr(self.pyslurm, "__version__", SUPPORTED))

    def snapshot(self) -> Snapshot:
        try:
            with timed("pyslurm Jobs.load"):
                jobs = self.pyslurm.Jobs.load()
            with timed("pyslurm Nodes.load"):
                nodes = self.pyslurm.Nodes.load()
        except Exception as exc:  # pyslurm.RPCError and friends: report, never a traceback
            raise SlurmError(f"pyslurm could not load jobs/nodes: {exc}", hint="is slurmctld up?") from None
        now = time.time()
        job_recs = tuple(self._job(j) for j in jobs.values())
        used = gpus_in_use(job_recs)
        node_recs = tuple(self._node(n, used.get(n.name, ())) for n in nodes.values())
        cluster, warnings = live_cluster(node_recs, self.conf)
        tracked = any(str(k).startswith("gres/gpu") for n in nodes.values() for k in (n.allocated_tres or {}))
        if used and not tracked:
            warnings = (*warnings, UNTRACKED_GPUS)
        return Snapshot(now, self.version(), node_recs, job_recs, cluster, "pyslurm", warnings)

    def finished_jobs(self, since: float, until: float) -> Accounted:
        """Jobs that ran and ended between ``since`` and ``until`` (epoch seconds), read as the
        cli backend's ``sacct -a -X -S since -E until`` reads them (see :mod:`slurmrl.slurm.accounting`).

        pyslurm 25.11.2 (tag v25.11.2): ``slurmctld.Config.load()`` and its
        ``accounting_storage_tres`` list (pyslurm/core/slurmctld/config.pyx);
        ``db.Jobs.load(db.JobFilter(start_time=, end_time=))``, whose times are
        whole epoch seconds (``date_to_timestamp``, pyslurm/utils/ctime.pyx); with
        no ``users``/``clusters`` it asks for every user of the local cluster, and
        it gives one record per job with its steps nested, what sacct's ``-X`` keeps
        (pyslurm/db/job.pyx). The record's attributes are read in :func:`db_record`.
        """
        config = self._accounting("slurmctld.Config.load", self.pyslurm.slurmctld.Config.load)
        tracked = tres_has_gpus(config.accounting_storage_tres)
        window = self.pyslurm.db.JobFilter(start_time=_epoch(since), end_time=_epoch(until))
        jobs = self._accounting("db.Jobs.load", lambda: self.pyslurm.db.Jobs.load(window))
        return replace(read_db_jobs(jobs.values(), until), gpus_tracked=tracked)

    @staticmethod
    def _accounting(name: str, load: Callable[[], Any]) -> Any:
        """One counted pyslurm RPC; its failure (RPCError, slurmdbd down) as a SlurmError, never a traceback."""
        try:
            with timed(f"pyslurm {name}"):
                return load()
        except Exception as exc:
            raise SlurmError(
                f"pyslurm could not read accounting ({name}): {exc}", hint="are slurmctld and slurmdbd up?"
            ) from None

    @staticmethod
    def _node(n: Any, used: tuple[GresItem, ...]) -> SlurmNode:
        """``used``: GPUs the running jobs hold there. ``Node.allocated_gres`` is not read: it
        comes from the node's allocated TRES, empty unless AccountingStorageTRES tracks
        ``gres/gpu`` and listing typed GPUs twice where it tracks ``gres/gpu:<type>`` too."""
        state = str(n.state or "").upper()
        states = {s for s in state.replace("*", "").split("+") if s}
        if "*" in state:
            states.add("NOT_RESPONDING")
        return SlurmNode(
            name=n.name,
            states=frozenset(states),
            partitions=tuple(n.partitions or ()),
            gpus=_gres_items(n.configured_gres),
            gpus_used=used,
            cpus=int(n.total_cpus or 0),
            memory_mb=int(n.real_memory or 0),
            reason=n.reason or "",
            features=frozenset(n.active_features or ()) or frozenset(n.available_features or ()),
            cpus_alloc=int(n.allocated_cpus or 0),
            memory_alloc_mb=int(n.allocated_memory or 0),
        )

    @staticmethod
    def _job(j: Any) -> SlurmJob:
        words = str(j.state or "").upper().split("+")
        state = next((w for w in words if w in JOB_BASE_STATES), words[0])
        job_id, array, array_task = _job_id(j)
        nodes = parse_hosts(j.allocated_nodes or "") if state != "PENDING" else ()
        request = _job_request(j)
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
        num_nodes = j.num_nodes
        cpus = per_node_cpus(j.min_cpus_per_node, j.cpus, num_nodes)
        return SlurmJob(
            job_id=job_id,
            name=j.name or "",
            user=j.user_name or "",
            account=j.account or "",
            partition=j.partition or "",
            qos=j.qos or "",
            state=state,
            state_flags=frozenset(w for w in words if w != state),
            reason="" if reason == "None" else reason,
            submit_time=float(j.submit_time or 0),
            start_time=float(j.start_time) if j.start_time and nodes else None,
            restarts=j.requeue_count or 0,
            time_limit=None if limit is None or limit == math.inf else float(limit) * 60.0,
            priority=j.priority,
            num_nodes=num_nodes,
            required_nodes=parse_hosts(j.required_nodes or ""),
            nodes=nodes,
            gpus=request,
            gpu_alloc=allocation(nodes, detail if any(detail) else [], request),
            comment=j.comment or "",
            admin_comment=j.admin_comment or "",
            dependency=dependency_text(j.dependencies),
            held=reason in ("JobHeldUser", "JobHeldAdmin") or (state == "PENDING" and j.priority == 0),
            array_job_id=array,
            array_task=array_task,
            slurm_id=int(j.id) if j.id else None,
            excluded_nodes=parse_hosts(j.excluded_nodes or ""),
            constraint=_csv(j.constraints),
            prefer=_csv(j.preferred_features),
            cpus_per_node=cpus,
            memory_per_node_mb=per_node_memory(j.memory_per_node, j.memory_per_cpu, cpus),
            exclusive=str(j.resource_sharing or "").upper() == "NO",
            max_nodes=j.max_nodes or None,
            min_cpus=j.cpus or None,
            num_tasks=getattr(j, "ntasks", None) or None,
            tasks_per_node=getattr(j, "ntasks_per_node", None) or None,
        )

    def requeue(self, job_id: str) -> None:
        self._writer.requeue(job_id)

    def set_site_factor(self, job_id: str, value: int) -> None:
        self._writer.set_site_factor(job_id, value)

    def set_priority(self, job_id: str, value: int) -> None:
        self._writer.set_priority(job_id, value)

    def reset_priority(self, job_id: str) -> None:
        self._writer.reset_priority(job_id)

    def set_required_nodes(self, job_id: str, nodelist: Sequence[str] | None) -> None:
        self._writer.set_required_nodes(job_id, nodelist)

    def set_prefer(self, job_id: str, text: str) -> None:
        self._writer.set_prefer(job_id, text)

    def set_nice(self, job_id: str, value: int) -> None:
        self._writer.set_nice(job_id, value)

    def set_gpus(self, job_id: str, ask: GpuAsk, pin: tuple[str, object] | None = None) -> None:
        self._writer.set_gpus(job_id, ask, pin, version=self.version())

    def update_many(self, job_ids: Sequence[str], name: str, value: object) -> None:
        self._writer.update_many(job_ids, name, value)

    def set_admin_comment(self, job_id: str, text: str) -> None:
        self._writer.set_admin_comment(job_id, text)


def gpus_in_use(jobs: tuple[SlurmJob, ...]) -> dict[str, tuple[GresItem, ...]]:
    """GPUs held per node, summed over the running jobs' per-node allocations."""
    used: dict[str, list[GresItem]] = {}
    for job in jobs:
        if job.is_running:
            for node, item in job.gpu_alloc:
                used.setdefault(node, []).append(item)
    return {node: tuple(items) for node, items in used.items()}


def dependency_text(deps: Any) -> str:
    """pyslurm's ``{"afterok": [4], ..., "singleton": bool, "satisfy": "all"|"any"}`` in Slurm's
    own spelling (``afterok:4,singleton``; ``?`` between items when any one satisfies)."""
    if not deps:
        return ""
    if isinstance(deps, str):
        return deps
    parts = []
    for kind, ids in deps.items():
        if kind in ("satisfy", "singleton"):
            continue
        if isinstance(ids, (list, tuple)) and ids:
            parts.append(f"{kind}:" + ":".join(str(i) for i in ids))
    if deps.get("singleton"):
        parts.append("singleton")
    return ("?" if deps.get("satisfy") == "any" else ",").join(parts)


def _epoch(t: float) -> int:
    """Whole seconds, as sacct's ``-S``/``-E`` give them; pyslurm's ``date_to_timestamp`` takes an
    int as is but reads 0 as unset (midnight today) and sends a float to Slurm's date parser."""
    return max(1, int(t))


def read_db_jobs(jobs: Iterable[Any], until: float) -> Accounted:
    """``pyslurm.db.Job`` records -> the ended jobs that ran, by end time, as
    :func:`slurmrl.slurm.accounting.parse_sacct` reads sacct's lines (the database
    already left out jobs that ended before the window)."""
    return collect(jobs, db_record, until)


def db_record(j: Any) -> SlurmJob | None:
    """One ``pyslurm.db.Job`` with the fields ``accounting._record`` fills; None unless it ran and ended.

    pyslurm/db/job.pyx (25.11.2): times are epoch ints, 0 read as None
    (``_raw_time``); ``time_limit`` is minutes, "PartitionLimit" where unset or
    0 and None where unlimited; ``state`` is Slurm's state string (no "by UID");
    ``comment`` is the record's ``derived_es``, which sacct prints as Comment;
    ``num_nodes`` is 0 where the allocated TRES lack ``node``.
    """
    state = (str(j.state or "").split() or [""])[0].upper()
    start, end = j.start_time, j.end_time
    if state not in ENDED_STATES or not start or not end:
        return None
    limit = j.time_limit
    return SlurmJob(
        db_job_id(j),
        name=j.name or "",
        user=j.user_name or "",
        account=j.account or "",
        partition=j.partition or "",
        state=state,
        submit_time=float(j.submit_time or start),
        start_time=float(start),
        end_time=float(end),
        time_limit=float(limit) * 60.0 if isinstance(limit, int) else None,
        num_nodes=int(j.num_nodes or 0) or None,
        gpus=gpus_of_tres(gres_counts(j.allocated_tres)),
        comment=j.comment or "",
        admin_comment=j.admin_comment or "",
    )


def db_job_id(j: Any) -> str:
    """sacct's JobID (``slurmdb_get_job_id_str``): the array task (``7_3``), else the
    heterogeneous component (``5+1``), else the id. pyslurm reads a het offset of 0 as None."""
    if j.array_id or not j.heterogeneous_id:
        return _job_id(j)[0]
    return f"{j.heterogeneous_id}+{j.heterogeneous_offset or 0}"


def gres_counts(tres: Any) -> dict[str, int]:
    """pyslurm's ``TrackableResources`` (None where the string is empty) as ``parse_tres`` reads
    sacct's AllocTRES, GRES only: ``.gres`` maps ``gpu``/``gpu:a100`` to GPU objects with a
    ``count`` (pyslurm/db/tres.pyx), which become ``gres/gpu``/``gres/gpu:a100``."""
    gres = getattr(tres, "gres", None) or {}
    return {f"gres/{name}".lower(): int(item.count) for name, item in gres.items()}
