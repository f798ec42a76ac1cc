"""Loader for SenseTime Helios ``cluster_log.csv`` (S-Lab-System-Group/HeliosData).

Helios logs come from Slurm, so states are Slurm's; they are folded into the
normalized vocabulary (TIMEOUT -> KILLED, NODE_FAIL -> FAILED) so policies see
one set of states across traces. ``queue`` in this log is the measured queueing
delay, not a queue name, and is ignored; the virtual cluster comes from ``vc``
when the file has it. CPU-only jobs (``gpu_num`` 0) and jobs with no run time
are counted in ``Trace.dropped``. Submit times are absolute date-times and are
counted from the earliest submit in the file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from slurmrl.traces.rows import (
    Builder,
    Row,
    RowError,
    csv_rows,
    parse_count,
    parse_datetime,
    parse_float,
    parse_id,
    read_text,
)
from slurmrl.traces.schema import Trace, TraceJob

REQUIRED = ("job_id", "gpu_num", "submit_time", "duration")

STATUS = {
    "COMPLETED": "COMPLETED",
    "CANCELLED": "CANCELLED",
    "FAILED": "FAILED",
    "TIMEOUT": "KILLED",
    "NODE_FAIL": "FAILED",
}

DROP_NO_GPUS = "no GPUs"
DROP_NEVER_RAN = "never ran (empty duration)"


def _when(text: str, column: str) -> float:
    try:
        return float(text)  # some exports keep epoch seconds
    except ValueError:
        return parse_datetime(text, column)


def _run_time(row: Row) -> float | None:
    text = row.get("duration")
    return parse_float(text, "duration") if text else None


def load(path: Path, display: str, skip_bad: bool) -> Trace:
    return read_log(path, display, skip_bad, "helios", _run_time, name_column="jobname")


def read_log(
    path: Path,
    display: str,
    skip_bad: bool,
    format: str,
    run_time: Callable[[Row], float | None],
    *,
    name_column: str,
) -> Trace:
    """A Slurm-accounting style job log (Helios, Acme); ``run_time`` reads a row's seconds, None if it never ran."""
    b = Builder(display, format, skip_bad)
    for row in csv_rows(read_text(path, display), display, REQUIRED):
        try:
            job_id = parse_id(row.get("job_id"))
            gpus = parse_count(row.get("gpu_num"), "gpu_num")
            submit = b.saw(_when(row.get("submit_time"), "submit_time"))
            nodes_text = row.opt("node_num")
            nodes = parse_count(nodes_text, "node_num") if nodes_text else None
            if gpus == 0:
                b.drop(DROP_NO_GPUS)
                continue
            duration = run_time(row)
            if duration is None:
                b.drop(DROP_NEVER_RAN)
                continue
        except RowError as err:
            b.bad(err, row.line)
            continue
        state = row.opt("state").upper()
        b.add(
            TraceJob(
                job_id=job_id,
                submit_time=submit,
                duration=duration,
                num_gpus=gpus,
                user=row.opt("user"),
                vc=row.opt("vc"),
                num_nodes=nodes or None,
                status=STATUS.get(state, state),
                name=row.opt(name_column),
            ),
            row.line,
        )
    return b.finish(rebase=True)
