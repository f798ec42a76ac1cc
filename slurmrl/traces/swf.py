"""Loader for the Standard Workload Format (Parallel Workloads Archive).

SWF describes CPU clusters, so processors stand in for GPUs:
GPUs = ceil(processors / ``procs_per_gpu``), using allocated processors
(field 5) and falling back to requested processors (field 8). Other fields:
submit time (2) and run time (4) in seconds, requested time (9) as the time
limit, user (12), queue (15) as the virtual cluster, status (11: 1 completed,
0 failed, 5 cancelled). ``-1`` means unknown. Jobs with unknown run time or
processor count are counted in ``Trace.dropped``. Lines starting with ``;``
are header comments. Submit times already count from the log start and are
kept.
"""

from __future__ import annotations

import math
from pathlib import Path

from slurmrl.errors import TraceError
from slurmrl.traces.rows import Builder, RowError, parse_float, read_text, text_lines
from slurmrl.traces.schema import Trace, TraceJob

FIELDS = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
STATUS = {"1": "COMPLETED", "0": "FAILED", "5": "CANCELLED"}

DROP_NO_RUNTIME = "unknown run time"
DROP_NO_PROCS = "unknown processor count"


def _known(value: float) -> bool:
    return value != -1


def load(path: Path, display: str, skip_bad: bool, *, procs_per_gpu: int = 1) -> Trace:
    if procs_per_gpu < 1:
        raise TraceError(f"procs_per_gpu must be >= 1, got {procs_per_gpu}", file=display)
    b = Builder(display, "swf", skip_bad)
    for line_no, line in enumerate(text_lines(read_text(path, display)), start=1):
        text = line.strip()
        if not text or text.startswith(";"):
            continue
        fields = text.split()
        try:
            if len(fields) != len(FIELDS):
                raise RowError(f"{len(fields)} fields, SWF has {len(FIELDS)}", FIELDS[min(len(fields), 17)])
            row = dict(zip(FIELDS, fields, strict=True))
            submit = parse_float(row["submit_time"], "submit_time")
            run = parse_float(row["run_time"], "run_time", minimum=None)
            procs = parse_float(row["allocated_processors"], "allocated_processors", minimum=None)
            if not _known(procs) or procs <= 0:
                procs = parse_float(row["requested_processors"], "requested_processors", minimum=None)
            limit = parse_float(row["requested_time"], "requested_time", minimum=None)
            if _known(run) and run < 0:
                raise RowError(f"{run:g} is negative", "run_time")
        except RowError as err:
            b.bad(err, line_no)
            continue
        if not _known(run):
            b.drop(DROP_NO_RUNTIME)
            continue
        if not _known(procs) or procs <= 0:
            b.drop(DROP_NO_PROCS)
            continue
        user, queue = row["user_id"], row["queue"]
        b.add(
            TraceJob(
                job_id=row["job_number"],
                submit_time=submit,
                duration=run,
                num_gpus=math.ceil(procs / procs_per_gpu),
                user="" if user == "-1" else user,
                vc="" if queue == "-1" else queue,
                status=STATUS.get(row["status"], ""),
                time_limit=limit if limit > 0 else None,
            ),
            line_no,
        )
    return b.finish()
