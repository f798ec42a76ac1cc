"""Loader for the raw Philly ``cluster_job_log`` (msr-fiddle/philly-traces, CC-BY-4.0).

The raw log is one JSON list of jobs, each with its attempts. Run time is the
sum of the attempts' run times, leaving out the gaps between retries, which is
how the normalized Philly file in ``shared/traces`` was derived, so both give
the same durations. The GPU count comes from the first attempt's machine
detail (GPUs listed per machine). The node count comes from the last attempt
that lists machines, the placement the job ended on: the number of distinct
machines in its ``detail``. Philly's scheduler placed a retry afresh, so
attempts may differ; when the last attempt holds a different number of GPUs
than the first, the node count is left unknown rather than paired with a GPU
count it did not run with. Jobs that never got a usable attempt (no
start or end time) or that list no GPUs cannot be replayed and are counted in
``Trace.dropped``. Submit times are absolute, so they are counted from the
earliest submit in the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from slurmrl.csv_records import shown
from slurmrl.errors import TraceError
from slurmrl.traces.rows import Builder, RowError, parse_datetime, read_text
from slurmrl.traces.schema import Trace, TraceJob

STATUS = {"pass": "COMPLETED", "killed": "KILLED", "failed": "FAILED"}

DROP_NO_ATTEMPT = "no usable attempt"
DROP_NO_GPUS = "no GPUs"


def load(path: Path, display: str, skip_bad: bool) -> Trace:
    text = read_text(path, display)
    b = Builder(display, "philly", skip_bad)
    for line, item in _elements(text, display):
        try:
            job = _job(item, b)
        except RowError as err:
            b.bad(err, line)
            continue
        if job is not None:
            b.add(job, line)
    return b.finish(rebase=True)


def _elements(text: str, display: str) -> list[tuple[int, Any]]:
    """Top-level list items with the line each starts on, so errors can point at a job."""
    decoder = json.JSONDecoder()
    out: list[tuple[int, Any]] = []
    newline_pos, line = 0, 1

    def line_at(pos: int) -> int:
        nonlocal newline_pos, line
        line += text.count("\n", newline_pos, pos)
        newline_pos = pos
        return line

    def fail(msg: str, pos: int) -> TraceError:
        row = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        return TraceError(
            f"malformed JSON: {msg}",
            file=display,
            line=row,
            column=f"char {col}",
            hint="the raw Philly log is one JSON list of job objects",
        )

    pos = _skip_ws(text, 0)
    if pos >= len(text) or text[pos] != "[":
        raise fail("expected '[' at the start of the job list", pos)
    pos = _skip_ws(text, pos + 1)
    if pos < len(text) and text[pos] == "]":
        return out
    while True:
        try:
            item, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise fail(exc.msg, exc.pos) from None
        out.append((line_at(pos), item))
        pos = _skip_ws(text, end)
        if pos >= len(text):
            raise fail("the job list is not closed (file truncated?)", pos)
        if text[pos] == "]":
            if _skip_ws(text, pos + 1) != len(text):
                raise fail("extra data after the job list", _skip_ws(text, pos + 1))
            return out
        if text[pos] != ",":
            raise fail("expected ',' or ']' after a job", pos)
        pos = _skip_ws(text, pos + 1)


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _time(value: Any, column: str) -> float | None:
    if value is None or value == "None" or value == "":
        return None
    if not isinstance(value, str):
        raise RowError(f"{shown(repr(value))} is not a date-time string", column)
    return parse_datetime(value, column)


def _job(item: Any, b: Builder) -> TraceJob | None:
    if not isinstance(item, dict):
        raise RowError(f"expected a job object, found {type(item).__name__}")
    job_id = item.get("jobid")
    if not isinstance(job_id, str) or not job_id:
        raise RowError("missing or empty job id", "jobid")
    submit = _time(item.get("submitted_time"), "submitted_time")
    if submit is None:
        raise RowError("missing submit time", "submitted_time")
    b.saw(submit)
    attempts = item.get("attempts")
    if not isinstance(attempts, list):
        raise RowError("expected a list of attempts", "attempts")
    duration, usable = 0.0, False
    for attempt in attempts:
        if not isinstance(attempt, dict):
            raise RowError("expected an attempt object", "attempts")
        start = _time(attempt.get("start_time"), "start_time")
        end = _time(attempt.get("end_time"), "end_time")
        if start is None or end is None or end < start:
            continue
        duration += end - start
        usable = True
    if not usable:
        b.drop(DROP_NO_ATTEMPT)
        return None
    gpus, _ = _machines(attempts[0])
    if gpus == 0:
        b.drop(DROP_NO_GPUS)
        return None
    status = str(item.get("status") or "")
    return TraceJob(
        job_id=job_id,
        submit_time=submit,
        duration=duration,
        num_gpus=gpus,
        num_nodes=_last_nodes(attempts, gpus),
        user=str(item.get("user") or ""),
        vc=str(item.get("vc") or ""),
        status=STATUS.get(status.lower(), status.upper()),
    )


def _machines(attempt: dict[str, Any]) -> tuple[int, int]:
    """(GPUs, distinct machines) listed in one attempt's ``detail``."""
    detail = attempt.get("detail") or []
    if not isinstance(detail, list):
        raise RowError("expected a list of machines", "detail")
    gpus, hosts = 0, set()
    for i, machine in enumerate(detail):
        listed = machine.get("gpus") if isinstance(machine, dict) else None
        if not isinstance(listed, list):
            raise RowError("expected a 'gpus' list per machine", "detail")
        gpus += len(listed)
        if listed:
            hosts.add(str(machine.get("ip") or f"#{i}"))  # an unnamed machine counts once
    return gpus, len(hosts)


def _last_nodes(attempts: list[Any], gpus: int) -> int | None:
    """Machines of the last attempt that lists any, if it held the job's ``gpus``; else unknown."""
    for attempt in reversed(attempts):
        held, nodes = _machines(attempt)
        if nodes:
            return nodes if held == gpus else None
    return None
