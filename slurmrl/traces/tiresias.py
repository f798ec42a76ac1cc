"""Loader for Tiresias simulator job lists (SymbioticLab/Tiresias, e.g. ``60_job.csv``).

Times are the simulator's seconds from the start and are kept. ``iterations``
and ``interval`` drive Tiresias' own progress model and are not needed here:
``duration`` is already the run time.
"""

from __future__ import annotations

from pathlib import Path

from slurmrl.traces.rows import Builder, RowError, csv_rows, parse_count, parse_float, parse_id, read_text
from slurmrl.traces.schema import Trace, TraceJob

REQUIRED = ("job_id", "num_gpu", "submit_time", "duration")
DROP_NO_GPUS = "no GPUs"


def load(path: Path, display: str, skip_bad: bool, *, fmt: str = "tiresias") -> Trace:
    b = Builder(display, fmt, skip_bad)
    for row in csv_rows(read_text(path, display), display, REQUIRED):
        try:
            job_id = parse_id(row.get("job_id"))
            gpus = parse_count(row.get("num_gpu"), "num_gpu")
            submit = parse_float(row.get("submit_time"), "submit_time")
            duration = parse_float(row.get("duration"), "duration")
        except RowError as err:
            b.bad(err, row.line)
            continue
        if gpus == 0:
            b.drop(DROP_NO_GPUS)
            continue
        user = row.opt("user")
        b.add(
            TraceJob(
                job_id=job_id,
                submit_time=submit,
                duration=duration,
                num_gpus=gpus,
                user=user,
                vc=user.removeprefix("vc_") if user.startswith("vc_") else "",
                model=row.opt("model_name"),
            ),
            row.line,
        )
    return b.finish()
