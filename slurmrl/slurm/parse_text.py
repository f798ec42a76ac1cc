"""Plain-text fallbacks: ``squeue -h -o`` and one-line ``scontrol show job/node -d -o`` records.

Used where JSON output is unavailable (Slurm built without the data_parser
plugins) or broken. Free text is the hazard: a job name may hold ``|``,
quotes, spaces or ``Key=value``. The squeue format therefore puts the name
last and splits with a bounded count; in scontrol records, values of the
free-text keys (names, comments, reasons, paths) end only at the next *known*
key, while other values end at the next ``Key=``.
"""

from __future__ import annotations

import re
import time
from datetime import datetime

from slurmrl.errors import SlurmError
from slurmrl.slurm.conf import expand_hostlist
from slurmrl.slurm.parse_gres import GresItem, gpu_items, gpu_request, job_gpu_detail
from slurmrl.slurm.parse_json import (
    JOB_BASE_STATES,
    allocation,
    node_features,
    per_node_cpus,
    per_node_memory,
)
from slurmrl.slurm.snapshot import SlurmJob, SlurmNode

SEP = "\x1f"  # ASCII unit separator: cannot be typed into a job name by accident
# Fields of SQUEUE_FORMAT in order; the comment and the name come last since
# only they may contain arbitrary text (the comment cannot hold SEP in practice).
SQUEUE_FIELDS = (
    "jobid",
    "array_job_id",
    "array_task_id",
    "state",
    "reason",
    "priority",
    "tres_per_node",
    "num_nodes",
    "time_limit",
    "submit_time",
    "start_time",
    "user",
    "account",
    "partition",
    "qos",
    "nodes",
    "dependency",
    "comment",
    "name",
)
SQUEUE_FORMAT = SEP.join(
    ["%i", "%F", "%K", "%T", "%r", "%Q", "%b", "%D", "%l", "%V", "%S", "%u", "%a", "%P", "%q", "%N", "%E"]
    + ["%k", "%j"]
)

FREE_TEXT_KEYS = frozenset(
    {
        "JobName",
        "Comment",
        "AdminComment",
        "SystemComment",
        "Reason",
        "Command",
        "WorkDir",
        "StdErr",
        "StdIn",
        "StdOut",
        "OS",
        "Features",
        "AvailableFeatures",
        "ActiveFeatures",
        "Dependency",
    }
)
# Keys that end a free-text value (those of 22.05-25.11 records that can follow one).
KNOWN_KEYS = frozenset(
    {
        "JobId",
        "ArrayJobId",
        "ArrayTaskId",
        "ArrayTaskThrottle",
        "JobName",
        "UserId",
        "GroupId",
        "MCS_label",
        "Priority",
        "Nice",
        "Account",
        "QOS",
        "JobState",
        "Reason",
        "Dependency",
        "Requeue",
        "Restarts",
        "BatchFlag",
        "Reboot",
        "ExitCode",
        "DerivedExitCode",
        "RunTime",
        "TimeLimit",
        "TimeMin",
        "SubmitTime",
        "EligibleTime",
        "AccrueTime",
        "StartTime",
        "EndTime",
        "Deadline",
        "SuspendTime",
        "SecsPreSuspend",
        "LastSchedEval",
        "Scheduler",
        "Partition",
        "AllocNode:Sid",
        "ReqNodeList",
        "ExcNodeList",
        "NodeList",
        "BatchHost",
        "NumNodes",
        "NumCPUs",
        "NumTasks",
        "CPUs/Task",
        "ReqB:S:C:T",
        "TRES",
        "Socks/Node",
        "NtasksPerN:B:S:C",
        "CoreSpec",
        "JOB_GRES",
        "Nodes",
        "CPU_IDs",
        "Mem",
        "GRES",
        "GRES_IDX",
        "MinCPUsNode",
        "MinMemoryCPU",
        "MinMemoryNode",
        "MinTmpDiskNode",
        "Features",
        "DelayBoot",
        "OverSubscribe",
        "Contiguous",
        "Licenses",
        "Network",
        "Command",
        "WorkDir",
        "StdErr",
        "StdIn",
        "StdOut",
        "Power",
        "TresPerNode",
        "TresPerJob",
        "TresPerTask",
        "TresPerSocket",
        "Comment",
        "AdminComment",
        "SystemComment",
        "Reservation",
        "Prefer",
        "Gres",
        "MailUser",
        "MailType",
        "CpusPerTres",
        "MemPerTres",
        "NodeName",
        "Arch",
        "CoresPerSocket",
        "CPUAlloc",
        "CPUEfctv",
        "CPUTot",
        "CPULoad",
        "AvailableFeatures",
        "ActiveFeatures",
        "GresDrain",
        "GresUsed",
        "NodeAddr",
        "NodeHostName",
        "Port",
        "Version",
        "OS",
        "RealMemory",
        "AllocMem",
        "FreeMem",
        "Sockets",
        "Boards",
        "State",
        "ThreadsPerCore",
        "TmpDisk",
        "Weight",
        "Owner",
        "Partitions",
        "BootTime",
        "SlurmdStartTime",
        "LastBusyTime",
        "ResumeAfterTime",
        "CfgTRES",
        "AllocTRES",
        "CapWatts",
        "CurrentWatts",
        "AveWatts",
        "ExtSensorsJoules",
        "ExtSensorsWatts",
        "ExtSensorsTemp",
        "Extra",
        "InstanceId",
        "InstanceType",
        "MemSpecLimit",
        "CoreSpecCount",
        "CPUSpecList",
        "NextState",
        "Topology",
        "Efficiency",
        "Container",
        "ContainerID",
        "OverTimeLimit",
        "SiteFactor",
    }
)
_KEY = re.compile(r"(?:(?<=\s)|^)([A-Za-z_][A-Za-z0-9_/:]*)=")
_CONFIG_LINE = re.compile(r"^(\w+)\s*=\s*(.*)$")  # one ``Key = value`` line of ``scontrol show config``


def split_record(line: str) -> list[tuple[str, str]]:
    """``Key=value`` pairs of one ``-o`` record, in order (keys may repeat: ``Nodes=``)."""
    marks = [(m.start(), m.end(), m.group(1)) for m in _KEY.finditer(line)]
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(marks):
        start, vstart, key = marks[i]
        j = i + 1
        if key in FREE_TEXT_KEYS:
            while j < len(marks) and marks[j][2] not in KNOWN_KEYS:
                j += 1
        end = marks[j][0] if j < len(marks) else len(line)
        pairs.append((key, line[vstart:end].strip()))
        i = j
    return pairs


def _null(value: str) -> str:
    return "" if value in ("(null)", "N/A", "None", "n/a") else value


def _int(value: str) -> int | None:
    m = re.match(r"\d+", value or "")
    return int(m.group(0)) if m else None


_DURATION = re.compile(r"(?:(\d+)-)?(\d+(?::\d+){0,2})")


def parse_duration(text: str) -> float | None:
    """Slurm time limits: ``UNLIMITED``, ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH[:MM[:SS]]`` -> seconds."""
    text = (text or "").strip()
    if not text or text.upper() in ("UNLIMITED", "INFINITE", "NONE", "N/A", "NOT_SET"):
        return None
    m = _DURATION.fullmatch(text)
    if m is None:
        raise SlurmError(
            f"cannot read Slurm time limit '{text}'", hint="expected MM, MM:SS, HH:MM:SS or D-HH[:MM[:SS]]"
        )
    days = int(m.group(1) or 0)
    parts = [int(p) for p in m.group(2).split(":")]
    if m.group(1) is not None:
        parts += [0] * (3 - len(parts))  # D-HH, D-HH:MM
    elif len(parts) == 1:
        parts = [0, parts[0], 0]  # bare number = minutes
    elif len(parts) == 2:
        parts = [0, *parts]
    h, mins, s = parts
    return float(days * 86400 + h * 3600 + mins * 60 + s)


def parse_timestamp(text: str) -> float | None:
    """``2026-11-22T04:28:15`` in the controller's local time -> epoch seconds."""
    text = _null((text or "").strip())
    if not text or text.lower() in ("unknown",):
        return None
    try:
        return time.mktime(datetime.fromisoformat(text).timetuple())
    except ValueError:
        raise SlurmError(f"cannot read Slurm time '{text}'") from None


def parse_hosts(text: str) -> tuple[str, ...]:
    text = _null(text)
    if not text or text.startswith("("):
        return ()
    try:
        return tuple(expand_hostlist(text))
    except ValueError as exc:
        raise SlurmError(f"cannot read node list '{text}': {exc}") from None


def output_lines(text: str) -> list[str]:
    """A Slurm command's output as its lines, split at newlines only.

    ``str.splitlines`` also splits at form feeds, vertical tabs, the ASCII
    separators and Unicode line breaks, which a user may put in a job name
    or comment: one record would then read as two, the first cut short.
    """
    return text.split("\n")


def parse_show_config(text: str) -> dict[str, str]:
    """``scontrol show config`` as ``{Key: value}`` (keys as Slurm prints them; the first of a repeat)."""
    values: dict[str, str] = {}
    for line in output_lines(text):
        m = _CONFIG_LINE.match(line.strip())
        if m:
            values.setdefault(m.group(1), m.group(2).strip())
    return values


def parse_squeue_text(text: str) -> tuple[SlurmJob, ...]:
    """Records printed by ``squeue -h -a -t all -o SQUEUE_FORMAT``."""
    jobs = []
    for number, line in enumerate(output_lines(text), 1):
        if not line.strip():
            continue
        parts = line.split(SEP, len(SQUEUE_FIELDS) - 1)
        if len(parts) != len(SQUEUE_FIELDS):
            raise SlurmError(
                f"squeue line {number} has {len(parts)} fields, expected {len(SQUEUE_FIELDS)}",
                hint="was it printed with slurmrl's SQUEUE_FORMAT?",
            )
        f = dict(zip(SQUEUE_FIELDS, parts, strict=False))
        state = f["state"].strip().upper()
        array = _int(_null(f["array_job_id"]))
        task = _null(f["array_task_id"])
        job_id = f["jobid"].strip()
        nodes = parse_hosts(f["nodes"]) if state != "PENDING" else ()
        num_nodes = _int(f["num_nodes"])
        request = gpu_request(per_node=_null(f["tres_per_node"]), num_nodes=num_nodes)
        priority = _int(f["priority"])
        reason = _null(f["reason"].strip())
        jobs.append(
            SlurmJob(
                job_id=job_id,
                name=f["name"],
                user=f["user"].strip(),
                account=_null(f["account"].strip()),
                partition=f["partition"].strip(),
                qos=_null(f["qos"].strip()),
                state=state,
                reason=reason,
                submit_time=parse_timestamp(f["submit_time"]) or 0.0,
                start_time=parse_timestamp(f["start_time"]) if state != "PENDING" else None,
                time_limit=parse_duration(f["time_limit"]),
                priority=priority,
                num_nodes=num_nodes,
                nodes=nodes,
                gpus=request,
                gpu_alloc=allocation(nodes, [], request) if nodes else (),
                comment=_null(f["comment"]),
                dependency=_null(f["dependency"].strip()),
                held=reason in ("JobHeldUser", "JobHeldAdmin") or (state == "PENDING" and priority == 0),
                array_job_id=array if array and (task or "[" in job_id) else None,
                array_task=task or None if array else None,
            )
        )
    return tuple(jobs)


def parse_scontrol_jobs(text: str) -> tuple[SlurmJob, ...]:
    """Records of ``scontrol show job -d -o`` (one job per line)."""
    return tuple(_job(split_record(line)) for line in output_lines(text) if line.startswith("JobId="))


def _job(pairs: list[tuple[str, str]]) -> SlurmJob:
    f: dict[str, str] = {}
    detail_nodes: list[str] = []
    detail_gres: list[str] = []
    for key, value in pairs:
        if key == "Nodes":
            detail_nodes.append(value)
        elif key in ("GRES", "GRES_IDX") and detail_nodes and len(detail_gres) < len(detail_nodes):
            detail_gres.append(value)
        else:
            f.setdefault(key, value)
    numeric = f.get("JobId", "")
    array = _int(f.get("ArrayJobId", ""))
    task = f.get("ArrayTaskId")
    if array and task:
        job_id = f"{array}_{task}" if task.isdigit() else f"{array}_[{task}]"
    else:
        job_id = numeric
    state_words = f.get("JobState", "").upper().split("+") if f.get("JobState") else []
    state = next((s for s in state_words if s in JOB_BASE_STATES), state_words[0] if state_words else "")
    reason = _null(f.get("Reason", ""))
    num_nodes = _int(f.get("NumNodes", ""))
    nodes = parse_hosts(f.get("NodeList", "")) if state != "PENDING" else ()
    request = gpu_request(
        per_node=_null(f.get("TresPerNode", "")),
        per_job=_null(f.get("TresPerJob", "")),
        per_task=_null(f.get("TresPerTask", "")),
        per_socket=_null(f.get("TresPerSocket", "")),
        tres_req=f.get("TRES"),
        num_nodes=num_nodes,
        num_tasks=_int(f.get("NumTasks", "")),
    )
    # Expand the per-node detail lines (Nodes=node[01-02] ... GRES=gpu:v100:1(IDX:0)).
    per_node: dict[str, GresItem | None] = {}
    for group, gres in zip(detail_nodes, detail_gres, strict=False):
        items = job_gpu_detail([gres]) if gres else [None]
        for name in parse_hosts(group):
            per_node[name] = items[0]
    detail = [per_node.get(n) for n in nodes] if per_node else []
    priority = _int(f.get("Priority", ""))
    user = f.get("UserId", "").split("(", 1)[0]
    return SlurmJob(
        job_id=job_id,
        name=f.get("JobName", ""),
        user=user,
        account=_null(f.get("Account", "")),
        partition=f.get("Partition", ""),
        qos=_null(f.get("QOS", "")),
        state=state,
        state_flags=frozenset(s for s in state_words if s != state),
        reason="" if reason == "None" else reason,
        submit_time=parse_timestamp(f.get("SubmitTime", "")) or 0.0,
        start_time=parse_timestamp(f.get("StartTime", "")) if state != "PENDING" else None,
        end_time=parse_timestamp(f.get("EndTime", "")) if state != "PENDING" else None,
        restarts=_int(f.get("Restarts", "")) or 0,
        time_limit=parse_duration(f.get("TimeLimit", "")),
        priority=priority,
        num_nodes=num_nodes,
        required_nodes=parse_hosts(f.get("ReqNodeList", "")),
        nodes=nodes,
        gpus=request,
        gpu_alloc=allocation(nodes, detail, request) if nodes else (),
        comment=_null(f.get("Comment", "")),
        admin_comment=_null(f.get("AdminComment", "")),
        dependency=_null(f.get("Dependency", "")),
        held=reason in ("JobHeldUser", "JobHeldAdmin") or (state == "PENDING" and priority == 0),
        array_job_id=array if array and task else None,
        array_task=task if array and task else None,
        site_factor=_int(f["SiteFactor"]) if "SiteFactor" in f else None,
        slurm_id=_int(numeric),
        **_limits(f, num_nodes),
    )


def _limits(f: dict[str, str], num_nodes: int | None) -> dict[str, object]:
    """Where the job may run, from ``ExcNodeList``, ``Features``, ``Prefer``, ``MinCPUsNode``,
    ``MinMemoryNode``/``MinMemoryCPU``, ``OverSubscribe=NO`` (``--exclusive``) and
    ``NumNodes=MIN-MAX`` (src/api/job_info.c)."""
    cpus = per_node_cpus(_int(f.get("MinCPUsNode", "")), _int(f.get("NumCPUs", "")), num_nodes)
    _, sep, most = f.get("NumNodes", "").partition("-")
    exclusive = f.get("OverSubscribe", "").upper() == "NO" or f.get("Exclusive", "").upper() in (
        "YES",
        "NODE",
    )
    return {
        "excluded_nodes": parse_hosts(f.get("ExcNodeList", "")),
        "constraint": _null(f.get("Features", "")),
        "prefer": _null(f.get("Prefer", "")),
        "cpus_per_node": cpus,
        "memory_per_node_mb": per_node_memory(
            parse_megabytes(f.get("MinMemoryNode", "")), parse_megabytes(f.get("MinMemoryCPU", "")), cpus
        ),
        "exclusive": exclusive,
        "max_nodes": _int(most) if sep else None,
        "min_cpus": _int(f.get("NumCPUs", "")) or None,
        "num_tasks": _int(f.get("NumTasks", "")) or None,
        "tasks_per_node": _int(f.get("NtasksPerN:B:S:C", "").split(":", 1)[0]) or None,
    }


_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024, "P": 1024**3}


def parse_megabytes(text: str) -> int | None:
    """``8G``, ``1024M``, ``512`` (MB) -> MB; None for none or 0."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)([KMGTP]?)B?\s*", (text or "").upper())
    if m is None:
        return None
    value = int(float(m.group(1)) * _UNITS[m.group(2) or "M"])
    return value or None


def parse_scontrol_nodes(text: str) -> tuple[SlurmNode, ...]:
    """Records of ``scontrol show node -d -o``."""
    out = []
    for line in output_lines(text):
        if not line.startswith("NodeName="):
            continue
        f: dict[str, str] = {}
        for key, value in split_record(line):
            f.setdefault(key, value)
        out.append(
            SlurmNode(
                name=f["NodeName"],
                states=_node_states(f.get("State", "")),
                partitions=tuple(p for p in _null(f.get("Partitions", "")).split(",") if p),
                gpus=gpu_items(_null(f.get("Gres", ""))),
                gpus_used=gpu_items(_null(f.get("GresUsed", ""))),
                cpus=_int(f.get("CPUTot", "")) or 0,
                memory_mb=_int(f.get("RealMemory", "")) or 0,
                reason=_null(f.get("Reason", "")),
                features=node_features(
                    _null(f.get("ActiveFeatures", "")), _null(f.get("AvailableFeatures", ""))
                ),
                cpus_alloc=_int(f.get("CPUAlloc", "")) or 0,
                memory_alloc_mb=_int(f.get("AllocMem", "")) or 0,
            )
        )
    return tuple(out)


def _node_states(text: str) -> frozenset[str]:
    """``MIXED+DRAIN`` -> {MIXED, DRAIN}; a trailing ``*`` means not responding."""
    text = text.upper()
    states = {s for s in text.replace("*", "").split("+") if s}
    if "*" in text:
        states.add("NOT_RESPONDING")
    return frozenset(states)
