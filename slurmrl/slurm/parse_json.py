"""Jobs and nodes out of ``squeue --json``, ``sinfo --json`` and ``scontrol show nodes --json``.

One parser covers every shape from Slurm 22.05 (openapi v0.0.38) to 26.05,
because the differences are in spelling, not meaning:

* numbers are plain (v0.0.38) or ``{"set", "infinite", "number"}`` objects
  (v0.0.39 and later);
* ``job_state`` and node ``state`` are strings (v0.0.38, and ``job_state`` in
  v0.0.39) or lists of flags (later); v0.0.38 nodes carry flags separately in
  ``state_flags``;
* GPU asks are ``gres:gpu:N`` (22.05) or ``gres/gpu:N`` (later) in ``tres_per_*``;
* ``sinfo --json`` lists nodes (22.05/23.02) or node groups under ``sinfo``
  (23.11 and later), where ``scontrol show nodes --json`` lists nodes.

Anything not understood raises :class:`SlurmError` naming the field and the
data_parser/openapi version found, so a new Slurm release fails loudly.
"""

from __future__ import annotations

import json
import math
from typing import Any

from slurmrl.errors import SlurmError
from slurmrl.slurm.conf import expand_hostlist
from slurmrl.slurm.parse_gres import GresItem, gpu_items, gpu_request, job_gpu_detail
from slurmrl.slurm.snapshot import SlurmJob, SlurmNode

JOB_BASE_STATES = frozenset(
    {
        "PENDING",
        "RUNNING",
        "SUSPENDED",
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
    }
)


class _Ctx:
    """Where a value came from, for error messages."""

    def __init__(self, doc: dict[str, Any], what: str) -> None:
        self.what = what
        self.parser = data_parser_version(doc)
        self.slurm = slurm_version(doc)

    def error(self, field: str, value: Any, expected: str, record: str = "") -> SlurmError:
        where = f" of {record}" if record else ""
        shown = json.dumps(value)[:80] if _jsonable(value) else repr(value)[:80]
        return SlurmError(
            f"{self.what}: field '{field}'{where} is {shown}, expected {expected} "
            f"(data_parser {self.parser or 'unknown'}, Slurm {self.slurm or 'unknown'})",
            hint="this Slurm version's output is not understood; report it with the JSON attached",
        )


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def load(text: str, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SlurmError(f"{what} did not print JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(doc, dict):
        raise SlurmError(f"{what} printed JSON that is not an object")
    return doc


def data_parser_version(doc: dict[str, Any]) -> str:
    """``v0.0.38`` (openapi plugin in 22.05) or the data_parser version of later releases."""
    plugin = _meta(doc).get("plugin") or {}
    if not isinstance(plugin, dict):
        return ""
    for key in ("data_parser", "type"):
        value = plugin.get(key) or ""
        if isinstance(value, str) and "/v" in value:
            return value.rsplit("/", 1)[1]
    return ""


def _meta(doc: dict[str, Any]) -> dict[str, Any]:
    """The document's ``meta`` table ({} when absent or not a table: it only names versions)."""
    meta = doc.get("meta")
    return meta if isinstance(meta, dict) else {}


def slurm_version(doc: dict[str, Any]) -> str:
    meta = _meta(doc)
    slurm = meta.get("Slurm") or meta.get("slurm") or {}
    if not isinstance(slurm, dict):
        return ""
    if slurm.get("release"):
        return str(slurm["release"])
    v = slurm.get("version") or {}
    if isinstance(v, dict) and "major" in v:
        return f"{v.get('major')}.{int(str(v.get('minor', 0))):02d}.{v.get('micro', 0)}"
    return ""


def _num(ctx: _Ctx, rec: dict[str, Any], key: str, record: str) -> float | None:
    """A number in either spelling; None when unset, ``inf`` when infinite."""
    value = rec.get(key)
    if value is None:
        return None
    if isinstance(value, bool):
        raise ctx.error(key, value, "a number", record)
    if isinstance(value, (int, float)) and not math.isnan(value):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, dict) and "set" in value:
        if value.get("infinite"):
            return math.inf
        if not value.get("set"):
            return None
        number = value.get("number")
        if isinstance(number, (int, float)) and not isinstance(number, bool) and not math.isnan(number):
            return number
    raise ctx.error(key, value, "a number or {set, infinite, number}", record)


def _int(ctx: _Ctx, rec: dict[str, Any], key: str, record: str) -> int | None:
    v = _num(ctx, rec, key, record)
    if v is None or v == math.inf:
        return None
    return int(v)


def _str(ctx: _Ctx, rec: dict[str, Any], key: str, record: str) -> str:
    value = rec.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    raise ctx.error(key, value, "a string", record)


def _table(ctx: _Ctx, rec: dict[str, Any], key: str, record: str) -> dict[str, Any]:
    """A nested object ({} when unset)."""
    value = rec.get(key)
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    raise ctx.error(key, value, "an object", record)


def _states(ctx: _Ctx, rec: dict[str, Any], key: str, record: str) -> list[str]:
    value = rec.get(key)
    if isinstance(value, str):
        return [s for s in value.upper().replace("+", " ").split() if s]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.upper() for v in value]
    raise ctx.error(key, value, "a state string or list of state flags", record)


def _hosts(ctx: _Ctx, value: str, key: str, record: str) -> tuple[str, ...]:
    if not value or value in ("(null)", "None", "N/A"):
        return ()
    try:
        return tuple(expand_hostlist(value))
    except ValueError as exc:
        raise ctx.error(key, value, f"a Slurm hostlist ({exc})", record) from None


def _job_id(ctx: _Ctx, rec: dict[str, Any]) -> tuple[str, int | None, str | None]:
    numeric = _int(ctx, rec, "job_id", "a job")
    if numeric is None:
        raise ctx.error("job_id", rec.get("job_id"), "a job id", "a job")
    array = _int(ctx, rec, "array_job_id", f"job {numeric}") or None
    task = _int(ctx, rec, "array_task_id", f"job {numeric}")
    task_str = _str(ctx, rec, "array_task_string", f"job {numeric}")
    if array and task is not None:
        return f"{array}_{task}", array, str(task)
    if array and task_str:
        return f"{array}_[{task_str}]", array, task_str
    return str(numeric), None, None


def parse_squeue_json(text: str) -> tuple[SlurmJob, ...]:
    doc = load(text, "squeue --json")
    ctx = _Ctx(doc, "squeue --json")
    jobs = doc.get("jobs")
    if not isinstance(jobs, list):
        raise ctx.error("jobs", jobs, "a list of jobs")
    return tuple(_job(ctx, rec) for rec in jobs if isinstance(rec, dict))


def _job(ctx: _Ctx, rec: dict[str, Any]) -> SlurmJob:
    job_id, array, task = _job_id(ctx, rec)
    where = f"job {job_id}"
    states = _states(ctx, rec, "job_state", where)
    base = next((s for s in states if s in JOB_BASE_STATES), states[0] if states else "")
    reason = _str(ctx, rec, "state_reason", where)
    priority = _int(ctx, rec, "priority", where)
    num_nodes = _int(ctx, rec, "node_count", where)
    nodes = _hosts(ctx, _str(ctx, rec, "nodes", where), "nodes", where) if base != "PENDING" else ()
    request = gpu_request(
        per_node=_str(ctx, rec, "tres_per_node", where),
        per_job=_str(ctx, rec, "tres_per_job", where),
        per_task=_str(ctx, rec, "tres_per_task", where),
        per_socket=_str(ctx, rec, "tres_per_socket", where),
        tres_req=_str(ctx, rec, "tres_req_str", where),
        num_nodes=num_nodes,
        num_tasks=_int(ctx, rec, "tasks", where),
        tasks_per_node=_int(ctx, rec, "tasks_per_node", where) or None,
        sockets_per_node=_int(ctx, rec, "sockets_per_node", where) or None,
    )
    detail = rec.get("gres_detail") or []
    if not isinstance(detail, list) or not all(isinstance(d, str) for d in detail):
        raise ctx.error("gres_detail", detail, "a list of strings", where)
    alloc = allocation(nodes, job_gpu_detail(detail), request) if nodes else ()
    hold = rec.get("hold")
    held = (
        (hold is True) or reason in ("JobHeldUser", "JobHeldAdmin") or (base == "PENDING" and priority == 0)
    )
    submit = _num(ctx, rec, "submit_time", where) or 0.0
    start = _num(ctx, rec, "start_time", where)
    end = _num(ctx, rec, "end_time", where)
    limit = _num(ctx, rec, "time_limit", where)
    return SlurmJob(
        job_id=job_id,
        name=_str(ctx, rec, "name", where),
        user=_str(ctx, rec, "user_name", where) or str(rec.get("user_id", "")),
        account=_str(ctx, rec, "account", where),
        partition=_str(ctx, rec, "partition", where),
        qos=_str(ctx, rec, "qos", where),
        state=base,
        state_flags=frozenset(s for s in states if s != base),
        reason="" if reason == "None" else reason,
        submit_time=float(submit),
        start_time=float(start) if start and base != "PENDING" and start != math.inf else None,
        end_time=float(end) if end and base not in ("PENDING", "RUNNING") and end != math.inf else None,
        restarts=_int(ctx, rec, "restart_cnt", where) or 0,
        time_limit=None if limit is None or limit == math.inf else float(limit) * 60.0,
        priority=priority,
        num_nodes=num_nodes,
        required_nodes=_hosts(ctx, _str(ctx, rec, "required_nodes", where), "required_nodes", where),
        nodes=nodes,
        gpus=request,
        gpu_alloc=alloc,
        comment=_str(ctx, rec, "comment", where),
        admin_comment=_str(ctx, rec, "admin_comment", where),
        dependency=_str(ctx, rec, "dependency", where).replace("(null)", ""),
        held=held,
        array_job_id=array,
        array_task=task,
        slurm_id=_int(ctx, rec, "job_id", where),
        **_limits(ctx, rec, where, num_nodes),
    )


def _limits(ctx: _Ctx, rec: dict[str, Any], where: str, num_nodes: int | None) -> dict[str, Any]:
    """Where the job may run: the same field names from openapi v0.0.38 (22.05) to v0.0.45
    (26.05); only the spelling of numbers and of ``shared`` changes (parsers.c, JOB_INFO)."""
    cpus = per_node_cpus(
        _int(ctx, rec, "minimum_cpus_per_node", where), _int(ctx, rec, "cpus", where), num_nodes
    )
    return {
        "excluded_nodes": _hosts(ctx, _str(ctx, rec, "excluded_nodes", where), "excluded_nodes", where),
        "constraint": _str(ctx, rec, "features", where),
        "prefer": _str(ctx, rec, "prefer", where),
        "cpus_per_node": cpus,
        "memory_per_node_mb": per_node_memory(
            _int(ctx, rec, "memory_per_node", where), _int(ctx, rec, "memory_per_cpu", where), cpus
        ),
        "exclusive": _exclusive(ctx, rec, where),
        "max_nodes": _int(ctx, rec, "max_nodes", where) or None,
        "min_cpus": _int(ctx, rec, "cpus", where) or None,
        "num_tasks": _int(ctx, rec, "tasks", where) or None,
        "tasks_per_node": _int(ctx, rec, "tasks_per_node", where) or None,
    }


def per_node_cpus(minimum: int | None, total: int | None, num_nodes: int | None) -> int | None:
    """CPUs the job needs on each node: its per-node minimum, or all its CPUs on one node."""
    need = minimum or 0
    if total and (num_nodes or 1) == 1:
        need = max(need, total)
    return need or None


def per_node_memory(per_node: int | None, per_cpu: int | None, cpus: int | None) -> int | None:
    """MB the job needs on each node (``--mem``, or ``--mem-per-cpu`` times its CPUs there)."""
    if per_node:
        return per_node
    if per_cpu:
        return per_cpu * (cpus or 1)
    return None


def _exclusive(ctx: _Ctx, rec: dict[str, Any], where: str) -> bool:
    """``--exclusive``: ``shared`` is ``"none"`` (v0.0.38 string, later a flag list);
    v0.0.39-v0.0.41 also print ``exclusive`` (``["true"]``), v0.0.45 a plain string."""
    for key, marks in (("shared", {"none"}), ("exclusive", {"true", "node"})):
        value = rec.get(key)
        if value is None:
            continue
        words = value if isinstance(value, list) else [value]
        if not all(isinstance(w, (str, bool)) for w in words):
            raise ctx.error(key, value, "a string or a list of flags", where)
        if any(w is True or str(w).lower() in marks for w in words):
            return True
    return False


def allocation(
    nodes: tuple[str, ...], detail: list[GresItem | None], request
) -> tuple[tuple[str, GresItem], ...]:
    """GPUs a running job holds per node: from the per-node detail when Slurm gives it,
    else spread from the request with indices unknown."""
    out: list[tuple[str, GresItem]] = []
    if detail and len(detail) == len(nodes):
        for node, item in zip(nodes, detail, strict=False):
            if item is not None and item.count > 0:
                out.append((node, item))
        return tuple(out)
    if request.total <= 0:
        return ()
    if request.per_node is not None:
        return tuple((n, GresItem(request.gpu_type, request.per_node, None)) for n in nodes)
    base, extra = divmod(request.total, len(nodes))
    for i, n in enumerate(nodes):
        count = base + (1 if i < extra else 0)
        if count:
            out.append((n, GresItem(request.gpu_type, count, None)))
    return tuple(out)


def parse_nodes_json(text: str, what: str = "sinfo --json") -> tuple[SlurmNode, ...]:
    """Nodes from ``sinfo --json`` (any version) or ``scontrol show nodes --json``."""
    doc = load(text, what)
    ctx = _Ctx(doc, what)
    if isinstance(doc.get("nodes"), list):
        return tuple(_node(ctx, rec) for rec in doc["nodes"] if isinstance(rec, dict))
    if isinstance(doc.get("sinfo"), list):
        return _sinfo_groups(ctx, doc["sinfo"])
    raise ctx.error("nodes", doc.get("nodes"), "a list of nodes (or an 'sinfo' list of node groups)")


def _node(ctx: _Ctx, rec: dict[str, Any]) -> SlurmNode:
    name = _str(ctx, rec, "name", "a node")
    if not name:
        raise ctx.error("name", rec.get("name"), "a node name", "a node")
    where = f"node {name}"
    states = set(_states(ctx, rec, "state", where))
    if "state_flags" in rec:  # v0.0.38 keeps flags apart from the base state
        states |= set(_states(ctx, rec, "state_flags", where))
    partitions = rec.get("partitions") or []
    if isinstance(partitions, str):
        partitions = [p for p in partitions.split(",") if p]
    if not isinstance(partitions, list):
        raise ctx.error("partitions", partitions, "a list of partition names", where)
    return SlurmNode(
        name=name,
        states=frozenset(states),
        partitions=tuple(str(p) for p in partitions),
        gpus=gpu_items(_str(ctx, rec, "gres", where)),
        gpus_used=gpu_items(_str(ctx, rec, "gres_used", where)),
        cpus=_int(ctx, rec, "cpus", where) or 0,
        memory_mb=_int(ctx, rec, "real_memory", where) or 0,
        reason=_str(ctx, rec, "reason", where) if isinstance(rec.get("reason"), (str, type(None))) else "",
        features=node_features(_str(ctx, rec, "active_features", where), _str(ctx, rec, "features", where)),
        cpus_alloc=_int(ctx, rec, "alloc_cpus", where) or 0,
        memory_alloc_mb=_int(ctx, rec, "alloc_memory", where) or 0,
    )


def node_features(active: str, available: str) -> frozenset[str]:
    """The node's active features; its available ones where none are active (most sites)."""
    text = active if active and active != "(null)" else available
    if not text or text == "(null)":
        return frozenset()
    return frozenset(f.strip() for f in text.split(",") if f.strip())


def _sinfo_groups(ctx: _Ctx, groups: list[Any]) -> tuple[SlurmNode, ...]:
    """23.11+ ``sinfo --json``: one entry per (partition, node group); merged per node."""
    merged: dict[str, SlurmNode] = {}
    for g in groups:
        if not isinstance(g, dict):
            continue
        names = _table(ctx, g, "nodes", "an sinfo group").get("nodes")
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise ctx.error("nodes/nodes", names, "a list of node names", "an sinfo group")
        where = "sinfo group " + ",".join(names[:3])
        states = frozenset(_states(ctx, _table(ctx, g, "node", where), "state", where))
        gres = _table(ctx, g, "gres", where)
        total = gpu_items(_str(ctx, gres, "total", where))
        used = gpu_items(_str(ctx, gres, "used", where)) if len(names) == 1 else ()
        part = _str(ctx, _table(ctx, g, "partition", where), "name", where)
        cpu_table, mem_table = _table(ctx, g, "cpus", where), _table(ctx, g, "memory", where)
        cpus = _int(ctx, cpu_table, "maximum", where) or 0
        mem = _int(ctx, mem_table, "maximum", where) or 0
        reason = _str(ctx, _table(ctx, g, "reason", where), "description", where)
        feats = _table(ctx, g, "features", where)
        features = node_features(_str(ctx, feats, "active", where), _str(ctx, feats, "total", where))
        one = len(names) == 1  # group-wide allocation figures say nothing of one node of several
        cpus_alloc = (_int(ctx, cpu_table, "allocated", where) or 0) if one else 0
        mem_alloc = (_int(ctx, mem_table, "allocated", where) or 0) if one else 0
        for name in names:
            prev = merged.get(name)
            parts = prev.partitions if prev else ()
            if part and part not in parts:
                parts = (*parts, part)
            merged[name] = SlurmNode(
                name=name,
                states=states | (prev.states if prev else frozenset()),
                partitions=parts,
                gpus=total,
                gpus_used=used or (prev.gpus_used if prev else ()),
                cpus=cpus,
                memory_mb=mem,
                reason=reason,
                features=features,
                cpus_alloc=cpus_alloc,
                memory_alloc_mb=mem_alloc,
            )
    return tuple(merged.values())
