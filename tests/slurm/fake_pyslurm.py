"""A stand-in for pyslurm 25.11: its attribute names and value shapes, from Slurm's raw fields.

Records are built from what ``slurm_job_info_t``/``node_info_t`` hold (raw
strings such as ``tres_per_job="gres/gpu:2"``, ``tres_req_str``,
``dependency``, ``array_task_id=0``, ``shared``, ``gres_detail``), and the
attributes convert them as pyslurm 25.11 does (read in its source:
pyslurm/core/job/job.pyx, pyslurm/core/node.pyx, pyslurm/utils/cstr.pyx,
uint.pyx, helpers.pyx, pyslurm/db/tres.pyx), including its lossy spots:

* ``array_task_id``, ``array_id``, ``num_nodes``, ``max_nodes`` read 0 as
  unset (``u32_parse``): task 0 comes back as None;
* ``tres_per_job`` and the other ``tres_per_*`` are ``TrackableResources``
  parsed as ``key=value`` pairs, so Slurm's ``gres/gpu:2`` gives None;
* ``gres_per_node`` keeps the ``gres/`` prefix (``{"gres/gpu:v100": 2}``);
* ``allocated_gres`` comes from the node's allocated TRES (``gres/`` keys
  dropped): empty unless gres/gpu is tracked, both ``gpu`` and ``gpu:v100``
  where typed GPUs are tracked too;
* ``dependencies`` is None or a dict with every kind plus ``singleton`` and
  ``satisfy``; ``constraints``/``preferred_features`` are lists split at commas;
  ``resource_sharing`` is Slurm's share string (``NO`` for ``--exclusive``).
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

__version__ = "25.11.1"

NO_VAL16 = 0xFFFE
_SHARE = {0: "NO", 1: "YES", 2: "USER", 3: "MCS", 4: "TOPO"}


class RPCError(Exception):
    pass


def _u32(value: int | None) -> int | None:
    return None if not value else value


def _csv_list(text: str | None) -> list[str]:
    return [v for v in (text or "").split(",") if v]


def _kv(text: str | None) -> dict[str, Any]:
    """``a=1,b=x`` -> dict; items without ``=`` are dropped (as cstr.to_dict does)."""
    out: dict[str, Any] = {}
    for item in (text or "").split(","):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k] = int(v) if v.isdigit() else v
    return out


def gres_dict(text: str | None) -> dict[str, Any]:
    """A GRES string in cstr.to_gres_dict's shape: ``{"gpu:v100": 8}``,
    ``{"gres/gpu:v100": 2}``, ``{"gpu:v100": {"count": 2, "indexes": "0-1"}}``."""
    out: dict[str, Any] = {}
    if not text or text == "(null)":
        return out
    for item in re.split(r",(?=[^,]+?:)", text):
        item = item.replace("gres:", "")
        idx = None
        if "(IDX:" in item:
            item, _, rest = item.partition("(IDX:")
            idx = rest.rstrip(")")
        parts = item.split(":")
        if len(parts) == 2 and parts[1].isdigit():
            key, count = parts[0], parts[1]
        elif len(parts) >= 3:
            key, count = f"{parts[0]}:{parts[1]}", parts[2]
        else:
            continue
        out[key] = {"count": int(count), "indexes": idx} if idx is not None else int(count)
    return out


class GPU:
    def __init__(self, count: int, gpu_type: str | None = None) -> None:
        self.count = count
        self.type = gpu_type

    @property
    def name(self) -> str:
        return f"gpu:{self.type}" if self.type else "gpu"


class TrackableResources:
    """Only the GRES part, which is what slurmrl reads."""

    def __init__(self) -> None:
        self.gres: dict[str, Any] = {}

    @staticmethod
    def from_str(text: str | None) -> TrackableResources | None:
        pairs = _kv(text)
        if not pairs:
            return None
        out = TrackableResources()
        for key, count in pairs.items():
            if key.startswith("gres/gpu"):
                name = key[len("gres/") :]
                typ = name.split(":", 1)[1] if ":" in name else None
                out.gres[name] = GPU(int(count), typ)
        return out


def dependency_dict(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    out: dict[str, Any] = {
        "after": [],
        "afterany": [],
        "afterburstbuffer": [],
        "aftercorr": [],
        "afternotok": [],
        "afterok": [],
        "singleton": False,
        "satisfy": "all",
    }
    delim = ","
    if "?" in text:
        delim, out["satisfy"] = "?", "any"
    for item in text.split(delim):
        if item == "singleton":
            out["singleton"] = True
        kind, sep, ids = item.partition(":")
        if sep and kind in out:
            out[kind].extend(int(i) if i.isdigit() else i for i in ids.split(":"))
    return out


class Job:
    """``raw`` keys are slurm_job_info_t field names; attributes are pyslurm's."""

    RAW = dict(
        job_id=0,
        array_job_id=0,
        array_task_id=0xFFFFFFFE,
        array_task_str=None,
        name="",
        user_name="root",
        account=None,
        partition="gpu",
        qos=None,
        job_state="PENDING",
        state_reason="None",
        submit_time=0,
        start_time=0,
        time_limit=0xFFFFFFFE,
        priority=1,
        num_nodes=1,
        max_nodes=0,
        nodes=None,
        req_nodes=None,
        exc_nodes=None,
        features=None,
        prefer=None,
        shared=NO_VAL16,
        pn_min_cpus=1,
        num_cpus=1,
        num_tasks=1,
        ntasks_per_node=0,
        pn_min_memory=None,
        mem_per_cpu=True,
        tres_per_node=None,
        tres_per_job=None,
        tres_per_task=None,
        tres_per_socket=None,
        tres_req_str=None,
        tres_alloc_str=None,
        comment=None,
        admin_comment=None,
        dependency=None,
        gres_detail=None,
    )

    def __init__(self, **raw: Any) -> None:
        unknown = set(raw) - set(self.RAW)
        if unknown:
            raise TypeError(f"not slurm_job_info_t fields: {sorted(unknown)}")
        self._raw = {**self.RAW, **raw}

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"pyslurm.Job has no attribute {name!r}")

    id = property(lambda s: s._raw["job_id"])
    name = property(lambda s: s._raw["name"])
    user_name = property(lambda s: s._raw["user_name"])
    account = property(lambda s: s._raw["account"])
    partition = property(lambda s: s._raw["partition"])
    qos = property(lambda s: s._raw["qos"])
    state = property(lambda s: s._raw["job_state"])
    state_reason = property(lambda s: s._raw["state_reason"])
    submit_time = property(lambda s: s._raw["submit_time"] or None)
    start_time = property(lambda s: s._raw["start_time"] or None)
    priority = property(lambda s: None if s._raw["priority"] == 0xFFFFFFFE else s._raw["priority"])
    num_nodes = property(lambda s: _u32(s._raw["num_nodes"]))
    max_nodes = property(lambda s: _u32(s._raw["max_nodes"]))
    allocated_nodes = property(lambda s: s._raw["nodes"])
    required_nodes = property(lambda s: s._raw["req_nodes"])
    excluded_nodes = property(lambda s: s._raw["exc_nodes"])
    constraints = property(lambda s: _csv_list(s._raw["features"]))
    preferred_features = property(lambda s: _csv_list(s._raw["prefer"]))
    resource_sharing = property(lambda s: _SHARE.get(s._raw["shared"], "OK"))
    min_cpus_per_node = property(lambda s: _u32(s._raw["pn_min_cpus"]))
    cpus = property(lambda s: _u32(s._raw["num_cpus"]))
    ntasks = property(lambda s: _u32(s._raw["num_tasks"]))
    ntasks_per_node = property(lambda s: _u32(s._raw["ntasks_per_node"]))
    comment = property(lambda s: s._raw["comment"])
    admin_comment = property(lambda s: s._raw["admin_comment"])
    dependencies = property(lambda s: dependency_dict(s._raw["dependency"]))
    array_id = property(lambda s: _u32(s._raw["array_job_id"]))
    gres_per_node = property(lambda s: gres_dict(s._raw["tres_per_node"]))  # deprecated in 25.11
    tres_per_node = property(lambda s: TrackableResources.from_str(s._raw["tres_per_node"]))
    tres_per_job = property(lambda s: TrackableResources.from_str(s._raw["tres_per_job"]))
    tres_per_task = property(lambda s: TrackableResources.from_str(s._raw["tres_per_task"]))
    tres_per_socket = property(lambda s: TrackableResources.from_str(s._raw["tres_per_socket"]))
    requested_tres = property(lambda s: TrackableResources.from_str(s._raw["tres_req_str"]))
    allocated_tres = property(lambda s: TrackableResources.from_str(s._raw["tres_alloc_str"]))

    @property
    def array_task_id(self) -> int | None:
        task = self._raw["array_task_id"]
        return None if task in (0, 0xFFFFFFFE) else task

    @property
    def array_tasks_waiting(self) -> str | None:
        text = self._raw["array_task_str"]
        if not text:
            return None
        return text[: text.rindex("%")] if "%" in text else text

    @property
    def time_limit(self) -> int | None:
        limit = self._raw["time_limit"]
        return None if limit in (0, 0xFFFFFFFE, 0xFFFFFFFF) else limit

    @property
    def memory_per_node(self) -> int | None:
        mem = self._raw["pn_min_memory"]
        return mem if mem is not None and not self._raw["mem_per_cpu"] else None

    @property
    def memory_per_cpu(self) -> int | None:
        mem = self._raw["pn_min_memory"]
        return mem if mem is not None and self._raw["mem_per_cpu"] else None

    def get_resource_layout_per_node(self) -> dict[str, dict[str, Any]]:
        """``gres_detail``: {node: "gpu:v100:2(IDX:0-1)"} in the raw record's per-node order."""
        return {
            node: {"cpu_ids": "0", "gres": gres_dict(detail), "memory": None}
            for node, detail in (self._raw["gres_detail"] or {}).items()
        }


class Node:
    RAW = dict(
        name="",
        node_state="IDLE",
        partitions=None,
        gres=None,
        alloc_tres_fmt_str=None,
        cpus=0,
        alloc_cpus=0,
        real_memory=0,
        alloc_memory=0,
        features=None,
        features_act=None,
        reason=None,
    )

    def __init__(self, **raw: Any) -> None:
        unknown = set(raw) - set(self.RAW)
        if unknown:
            raise TypeError(f"not node_info_t fields: {sorted(unknown)}")
        self._raw = {**self.RAW, **raw}

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"pyslurm.Node has no attribute {name!r}")

    name = property(lambda s: s._raw["name"])
    state = property(lambda s: s._raw["node_state"])
    partitions = property(lambda s: _csv_list(s._raw["partitions"]))
    configured_gres = property(lambda s: gres_dict(s._raw["gres"]))
    allocated_tres = property(lambda s: _kv(s._raw["alloc_tres_fmt_str"]))
    total_cpus = property(lambda s: s._raw["cpus"])
    allocated_cpus = property(lambda s: s._raw["alloc_cpus"])
    real_memory = property(lambda s: s._raw["real_memory"] or None)
    allocated_memory = property(lambda s: s._raw["alloc_memory"])
    available_features = property(lambda s: _csv_list(s._raw["features"]))
    active_features = property(lambda s: _csv_list(s._raw["features_act"]))
    reason = property(lambda s: s._raw["reason"])

    @property
    def allocated_gres(self) -> dict[str, Any]:
        return {k.replace("gres/", ""): v for k, v in self.allocated_tres.items() if "gres/" in k}


class _Collection(dict):
    """pyslurm's collections are multi-cluster maps; ``values()`` walks every record."""


class Jobs(_Collection):
    fail = False
    items: list[Job] = []

    @staticmethod
    def load(preload_passwd_info: bool = False, frozen: bool = False) -> Jobs:
        if Jobs.fail:
            raise RPCError("Unable to contact slurm controller")
        return Jobs({j.id: j for j in Jobs.items})


class Nodes(_Collection):
    items: list[Node] = []

    @staticmethod
    def load(preload_passwd_info: bool = False) -> Nodes:
        return Nodes({n.name: n for n in Nodes.items})


def module() -> ModuleType:
    import sys

    return sys.modules[__name__]
