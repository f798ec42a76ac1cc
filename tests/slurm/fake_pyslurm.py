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

The accounting side, ``db.Jobs``/``db.Job``/``db.JobFilter`` and
``slurmctld.Config``, is built from ``slurmdb_job_rec_t`` and
``slurm_ctl_conf_t`` fields (pyslurm/db/job.pyx, pyslurm/db/tres.pyx,
pyslurm/core/slurmctld/config.pyx, utils/ctime.pyx, tag v25.11.2):

* times are epoch ints with 0 (and NO_VAL) read as None; ``time_limit`` is
  minutes, "PartitionLimit" for NO_VAL or 0 and None for INFINITE;
* ``tres_alloc_str`` holds slurmdbd's TRES ids (``1=4,4=1,1001=2``), named
  through the TRES table (:data:`TRES_IDS`); ``allocated_tres`` is None when
  empty, and a typed GPU name is split once at ``:`` (a second ``:`` raises);
* ``num_nodes`` is the allocated ``node`` TRES, 0 where absent; ``user_name``
  is the local passwd name of ``uid`` (the uid as text where unknown);
  ``comment`` is ``derived_es``; ``heterogeneous_offset`` reads 0 as None;
* ``Jobs.load`` picks records as slurmdbd does for a time window: eligible
  before its end and not ended before its start.
"""

from __future__ import annotations

import datetime
import re
import time
from types import ModuleType, SimpleNamespace
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
        restart_cnt=0,
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
    requeue_count = property(lambda s: 0 if s._raw["restart_cnt"] in (0, NO_VAL16) else s._raw["restart_cnt"])
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


NO_VAL = 0xFFFFFFFE
INFINITE = 0xFFFFFFFF
# Job state codes (slurm.h): base states, and the flag a requeued run is recorded with.
JOB_PENDING, JOB_RUNNING, JOB_COMPLETE, JOB_CANCELLED, JOB_FAILED, JOB_TIMEOUT = 0, 1, 3, 4, 5, 6
JOB_REQUEUE = 0x400
_BASE_STATES = (
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
)
# slurmdbd's TRES table: the fixed ids, then GRES from 1001 (tres_alloc_str holds the ids).
TRES_IDS: dict[int, tuple[str, str]] = {
    1: ("cpu", ""),
    2: ("mem", ""),
    3: ("energy", ""),
    4: ("node", ""),
    5: ("billing", ""),
    6: ("fs", "disk"),
    7: ("vmem", ""),
    8: ("pages", ""),
    1001: ("gres", "gpu"),
    1002: ("gres", "gpu:a100"),
}
PASSWD = {1000: "alice", 1001: "bob"}


def job_state_string(state: int) -> str:
    """Slurm's ``job_state_string``: a flag such as JOB_REQUEUE names the state before the base."""
    return "REQUEUED" if state & JOB_REQUEUE else _BASE_STATES[state & 0xFF]


def _text(value: str | None) -> str | None:
    """``cstr.to_unicode``: empty and "None" read as None."""
    return None if not value or value == "None" else value


def _raw_time(value: int, on_noval: Any = None, on_inf: Any = None) -> Any:
    if value in (0, NO_VAL):
        return on_noval
    return on_inf if value == INFINITE else value


def _uid_to_name(uid: int) -> str | None:
    return None if uid in (NO_VAL, INFINITE) else PASSWD.get(uid, str(uid))


def _date_to_timestamp(date: Any) -> int:
    """``date_to_timestamp``: unset -> 0, digits and datetimes as epoch; else Slurm's date parser,
    which here refuses anything (a float's text is not a Slurm date)."""
    if not date:
        return 0
    if str(date).isdigit():
        return int(date)
    if isinstance(date, datetime.datetime):
        return int(date.timestamp())
    raise ValueError(f"Invalid Time Specification: {date}")


class TrackableResource:
    def __init__(self, tres_type: str, count: int, name: str = "") -> None:
        self.type, self.count, self.name = tres_type, count, name


def _gpu_from_tres(name: str, count: int) -> GPU:
    """``GPU.from_tres``: the type is what follows the one ``:`` (``_, typ = name.split(":")``)."""
    typ = None
    if ":" in name:
        _, typ = name.split(":")
    return GPU(count, typ)


def db_tres(text: str | None) -> TrackableResources | None:
    """A ``tres_alloc_str`` of TRES ids, named through :data:`TRES_IDS` (unknown ids dropped)."""
    pairs = _kv(text)
    if not pairs:
        return None
    out = TrackableResources()
    for key, count in pairs.items():
        typ, name = TRES_IDS.get(int(key), ("", ""))
        if typ != "gres":
            continue
        if name == "gpu" or name.startswith("gpu:"):
            gpu = _gpu_from_tres(name, int(count))
            out.gres[gpu.name] = gpu
        else:
            out.gres[name] = TrackableResource(typ, int(count), name)
    return out


def _tres_count(text: str | None, tres_id: int) -> int:
    """``find_count_in_str`` with its defaults: 0 for an empty string or a missing id."""
    return int(_kv(text).get(str(tres_id), 0))


class DbJob:
    """``raw`` keys are slurmdb_job_rec_t field names; attributes are pyslurm.db.Job's.
    ``eligible`` defaults to ``submit`` (a job eligible when submitted)."""

    RAW = dict(
        jobid=0,
        array_job_id=0,
        array_task_id=NO_VAL,
        array_task_str=None,
        het_job_id=0,
        het_job_offset=NO_VAL,
        jobname=None,
        uid=1000,
        account=None,
        partition=None,
        state=JOB_COMPLETE,
        submit=0,
        eligible=0,
        start=0,
        end=0,
        timelimit=NO_VAL,
        tres_alloc_str=None,
        tres_req_str=None,
        derived_es=None,
        admin_comment=None,
        cluster="cluster",
    )

    def __init__(self, **raw: Any) -> None:
        unknown = set(raw) - set(self.RAW)
        if unknown:
            raise TypeError(f"not slurmdb_job_rec_t fields: {sorted(unknown)}")
        self._raw = {**self.RAW, **raw}
        if "eligible" not in raw:
            self._raw["eligible"] = self._raw["submit"]

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"pyslurm.db.Job has no attribute {name!r}")

    id = property(lambda s: s._raw["jobid"])
    name = property(lambda s: _text(s._raw["jobname"]))
    user_name = property(lambda s: _uid_to_name(s._raw["uid"]))
    account = property(lambda s: _text(s._raw["account"]))
    partition = property(lambda s: _text(s._raw["partition"]))
    cluster = property(lambda s: _text(s._raw["cluster"]))
    state = property(lambda s: job_state_string(s._raw["state"]))
    submit_time = property(lambda s: _raw_time(s._raw["submit"]))
    eligible_time = property(lambda s: _raw_time(s._raw["eligible"]))
    start_time = property(lambda s: _raw_time(s._raw["start"]))
    end_time = property(lambda s: _raw_time(s._raw["end"]))
    time_limit = property(lambda s: _raw_time(s._raw["timelimit"], "PartitionLimit"))
    num_nodes = property(lambda s: _tres_count(s._raw["tres_alloc_str"], 4))
    comment = property(lambda s: _text(s._raw["derived_es"]))
    admin_comment = property(lambda s: _text(s._raw["admin_comment"]))
    array_id = property(lambda s: None if s._raw["array_job_id"] in (0, NO_VAL) else s._raw["array_job_id"])
    heterogeneous_id = property(lambda s: _u32(s._raw["het_job_id"]))
    heterogeneous_offset = property(lambda s: _u32(s._raw["het_job_offset"]))
    allocated_tres = property(lambda s: db_tres(s._raw["tres_alloc_str"]))
    requested_tres = property(lambda s: db_tres(s._raw["tres_req_str"]))

    @property
    def array_task_id(self) -> int | None:
        task = self._raw["array_task_id"]
        return None if task in (0, NO_VAL) else task

    @property
    def array_tasks_waiting(self) -> str | None:
        text = self._raw["array_task_str"]
        if not text:
            return None
        return text[: text.rindex("%")] if "%" in text else text


class JobFilter:
    """pyslurm.db.JobFilter: keyword arguments set its public attributes, no others."""

    __slots__ = (
        "ids",
        "start_time",
        "end_time",
        "accounts",
        "association_ids",
        "clusters",
        "constraints",
        "cpus",
        "max_cpus",
        "nodes",
        "max_nodes",
        "qos",
        "names",
        "partitions",
        "groups",
        "timelimit",
        "max_timelimit",
        "users",
        "wckeys",
        "nodelist",
        "with_script",
        "with_env",
        "truncate_time",
    )

    def __init__(self, **kwargs: Any) -> None:
        for name in self.__slots__:
            setattr(self, name, None)
        for name, value in kwargs.items():
            setattr(self, name, value)


def _usage_window(cond: JobFilter) -> tuple[int, int]:
    """``usage_start``/``usage_end`` after ``slurmdb_job_cond_def_start_end``:
    start defaults to today's midnight, end to now."""
    start = _date_to_timestamp(cond.start_time)
    end = _date_to_timestamp(cond.end_time) or int(time.time())
    if not start:
        start = int(time.mktime(datetime.date.today().timetuple()))
    return start, end


def _in_window(job: DbJob, start: int, end: int) -> bool:
    """slurmdbd's time condition: eligible (nonzero) before ``end``, and not ended before ``start``."""
    eligible, ended = job._raw["eligible"], job._raw["end"]
    return bool(eligible) and eligible < end and (ended >= start or not ended)


class DbJobs(_Collection):
    fail = False
    items: list[DbJob] = []
    last_filter: JobFilter | None = None

    @staticmethod
    def load(db_filter: JobFilter | None = None, db_connection: Any = None) -> DbJobs:
        """Records in the filter's window, as slurmdbd picks them for a time query:
        eligible before its end, and running or ended at or after its start."""
        if DbJobs.fail:
            raise RPCError("Failed to get Jobs from slurmdbd")
        DbJobs.last_filter = cond = db_filter or JobFilter()
        start, end = _usage_window(cond)
        return DbJobs({j.id: j for j in DbJobs.items if _in_window(j, start, end)})


class Config:
    """pyslurm.slurmctld.Config from ``slurm_ctl_conf_t``; ``raw`` is shared by every load."""

    fail = False
    raw: dict[str, Any] = dict(
        accounting_storage_tres="cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu"
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        self._raw = dict(raw)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"pyslurm.slurmctld.Config has no attribute {name!r}")

    @staticmethod
    def load() -> Config:
        if Config.fail:
            raise RPCError("Unable to contact slurm controller")
        return Config(Config.raw)

    accounting_storage_tres = property(lambda s: _csv_list(s._raw["accounting_storage_tres"]))


db = SimpleNamespace(Job=DbJob, Jobs=DbJobs, JobFilter=JobFilter, JobSearchFilter=JobFilter)
slurmctld = SimpleNamespace(Config=Config)


def module() -> ModuleType:
    import sys

    return sys.modules[__name__]
