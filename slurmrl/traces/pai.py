"""Loader for Alibaba PAI 2020 (``cluster-trace-gpu-v2020``, CC-BY-4.0).

A PAI job's GPU demand is not in the job table: it is spread over its tasks in
``pai_task_table.csv``, which must sit next to the job table. ``plan_gpu`` is
in percent of one GPU (100 = one GPU), per instance, so a job asks for
ceil(sum over tasks of inst_num * plan_gpu / 100) GPUs; fractional shares are
rounded up to whole GPUs because placement here is whole-GPU.

Run time is from the first task start to the last task end (the job table's
start time is the submit time, so job end - job start would include queueing).
Upstream CSVs have no header; a header row is accepted when present. Jobs with
no tasks, no GPUs, or no finished task times are counted in ``Trace.dropped``.
A job's ``gpu_type`` is set only when all its GPU tasks name the same concrete
type (``MISC`` means any type). Timestamps are epoch seconds and are counted
from the earliest submit in the file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from slurmrl.errors import TraceError
from slurmrl.traces.rows import Builder, RowError, csv_rows, parse_count, parse_float, read_text
from slurmrl.traces.schema import Trace, TraceJob

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
TASK_FILES = ("pai_task_table.csv", "pai_task_table.csv.gz")

STATUS = {"terminated": "COMPLETED", "failed": "FAILED", "running": "RUNNING", "waiting": "PENDING"}

DROP_NO_TASKS = "no tasks in the task table"
DROP_NO_GPUS = "no GPUs"
DROP_NO_RUN = "no finished task times"


@dataclass
class _Demand:
    gpu_percent: float = 0.0
    start: float | None = None
    end: float | None = None
    types: set[str] = field(default_factory=set)


def _fixed_header(text: str, columns: tuple[str, ...]) -> tuple[str, ...] | None:
    """None when the file starts with its own header row, else the upstream column order."""
    head = text.lstrip().split(",", 1)[0].strip().strip('"')
    return None if head == columns[0] else columns


def find_task_table(job_path: Path, display: str) -> Path:
    for name in TASK_FILES:
        candidate = job_path.parent / name
        if candidate.is_file():
            return candidate
    raise TraceError(
        "PAI task table not found next to the job table",
        file=display,
        hint=f"put {TASK_FILES[0]} (GPU requests per task) in {job_path.parent}",
    )


def _tasks(path: Path, b: Builder) -> dict[str, _Demand]:
    display = str(path)
    text = read_text(path, display)
    demands: dict[str, _Demand] = {}
    for row in csv_rows(text, display, TASK_COLUMNS, header=_fixed_header(text, TASK_COLUMNS)):
        try:
            job = row.get("job_name")
            inst = parse_count(row.get("inst_num") or "1", "inst_num")
            plan_text = row.get("plan_gpu")
            plan = parse_float(plan_text, "plan_gpu") if plan_text else 0.0
            start_text, end_text = row.get("start_time"), row.get("end_time")
            start = parse_float(start_text, "start_time") if start_text else None
            end = parse_float(end_text, "end_time") if end_text else None
        except RowError as err:
            b.bad(err, row.line, file=display)
            continue
        d = demands.setdefault(job, _Demand())
        d.gpu_percent += inst * plan
        if start is not None and start > 0:
            d.start = start if d.start is None else min(d.start, start)
        if end is not None and end > 0:
            d.end = end if d.end is None else max(d.end, end)
        if plan > 0:
            d.types.add(row.opt("gpu_type"))
    return demands


def load(path: Path, display: str, skip_bad: bool) -> Trace:
    b = Builder(display, "pai", skip_bad)
    demands = _tasks(find_task_table(path, display), b)
    text = read_text(path, display)
    for row in csv_rows(text, display, JOB_COLUMNS, header=_fixed_header(text, JOB_COLUMNS)):
        try:
            job_id = row.get("job_name")
            if not job_id:
                raise RowError("empty job name", "job_name")
            submit = b.saw(parse_float(row.get("start_time"), "start_time"))
        except RowError as err:
            b.bad(err, row.line)
            continue
        d = demands.get(job_id)
        if d is None:
            b.drop(DROP_NO_TASKS)
            continue
        gpus = math.ceil(d.gpu_percent / 100 - 1e-9)  # 1e-9 absorbs float sums like 3 x 33.333...
        if gpus <= 0:
            b.drop(DROP_NO_GPUS)
            continue
        if d.start is None or d.end is None or d.end < d.start:
            b.drop(DROP_NO_RUN)
            continue
        concrete = {t for t in d.types if t and t.upper() != "MISC"}
        status = row.opt("status")
        b.add(
            TraceJob(
                job_id=job_id,
                submit_time=submit,
                duration=d.end - d.start,
                num_gpus=gpus,
                user=row.opt("user"),
                status=STATUS.get(status.lower(), status.upper()),
                gpu_type=concrete.pop() if len(concrete) == 1 and len(d.types) == 1 else "",
            ),
            row.line,
        )
    return b.finish(rebase=True)
