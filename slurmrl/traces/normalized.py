"""Loader for the normalized job CSV (see ``shared/traces/README.md``).

The normalized schema is what converted traces are stored in, so this is the
loader most runs use. Submit times already count from the window start and are
kept as they are.

Policy for rows the simulator cannot replay (they are counted in
``Trace.dropped``, not treated as errors):

* an empty ``duration_s`` means the job never ran (the openb pod trace has 897
  PENDING pods that were never scheduled), so there is no run time to replay;
* a job with 0 GPUs (openb's CPU-only pods) does not compete for GPUs.

For GPU-sharing pods (openb's ``gpu_milli`` < 1000) the pod counts as one whole
GPU: placement here is whole-GPU, and a shared GPU is still unavailable to an
exclusive job while the pod runs.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from slurmrl.traces.rows import Builder, RowError, csv_rows, parse_count, parse_float, parse_id, read_text
from slurmrl.traces.schema import Trace, TraceJob

REQUIRED = ("job_id", "submit_time", "duration_s", "num_gpus")

DROP_NEVER_RAN = "never scheduled (empty duration)"
DROP_NO_GPUS = "no GPUs"


def load(path: Path, display: str, skip_bad: bool) -> Trace:
    text = read_text(path, display)
    clean = _clean_table(text, display)
    if clean is not None:
        return clean
    b = Builder(display, "normalized", skip_bad)
    for row in csv_rows(text, display, REQUIRED):
        try:
            job_id = parse_id(row.get("job_id"))
            submit = parse_float(row.get("submit_time"), "submit_time")
            duration_text = row.get("duration_s")
            gpus = parse_count(row.get("num_gpus"), "num_gpus")
            nodes_text = row.opt("num_nodes")
            nodes = parse_count(nodes_text, "num_nodes") if nodes_text else None
            if not duration_text:
                b.drop(DROP_NEVER_RAN)
                continue
            duration = parse_float(duration_text, "duration_s")
            milli = row.opt("gpu_milli")
            if gpus == 0 and milli and parse_float(milli, "gpu_milli") > 0:
                gpus = 1  # a share of one GPU still occupies a GPU
            if gpus == 0:
                b.drop(DROP_NO_GPUS)
                continue
        except RowError as err:
            b.bad(err, row.line)
            continue
        b.add(
            TraceJob(
                job_id=job_id,
                submit_time=submit,
                duration=duration,
                num_gpus=gpus,
                user=row.opt("user"),
                vc=row.opt("vc"),
                num_nodes=nodes,
                status=row.opt("status").upper(),
                model=row.opt("job_type"),
            ),
            row.line,
        )
    return b.finish()


def _clean_table(text: str, display: str) -> Trace | None:
    """The whole file column by column, when every row is clean; None otherwise.

    Most files are clean, and parsing them a column at a time with ``map``
    costs a fraction of the row-by-row reader. Anything unusual (a bad or
    missing value, a row to drop, a blank line, a quoted line break, a
    ``gpu_milli`` column) returns None and leaves the file to :func:`load`'s
    row-by-row reader, which keeps its rules and names the line and field
    of an error; on a clean file both give the same jobs.
    """
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error:
        return None
    if len(rows) < 2:
        return None
    header = [h.strip() for h in rows[0]]
    index = {name: i for i, name in enumerate(header)}
    if "gpu_milli" in index or any(c not in index for c in REQUIRED):
        return None
    body = rows[1:]
    width = len(header)
    # One physical line per record, so record k sits on line k + 2.
    breaks = text.count("\n")
    if breaks not in (len(rows), len(rows) - 1) or text.count("\r") not in (0, text.count("\r\n")):
        return None
    if any(len(r) != width for r in body):
        return None
    cols = list(zip(*body, strict=True))

    def strings(name: str) -> list[str] | tuple[str, ...]:
        i = index.get(name)
        return [v.strip() for v in cols[i]] if i is not None else ("",) * len(body)

    ids = strings("job_id")
    if not all(ids) or len(set(ids)) != len(ids):
        return None
    try:
        submits = list(map(float, cols[index["submit_time"]]))
        durations = list(map(float, cols[index["duration_s"]]))
        gpus = list(map(int, cols[index["num_gpus"]]))
        nodes_text = strings("num_nodes")
        nodes = [int(v) if v else None for v in nodes_text]
    except ValueError:
        return None
    # NaN fails both comparisons; 0 GPUs is a row to drop, left to the row reader.
    if not all(0.0 <= x < math.inf for x in submits) or not all(0.0 <= x < math.inf for x in durations):
        return None
    if min(gpus) <= 0 or any(n is not None and n < 0 for n in nodes):
        return None
    users, vcs, models = strings("user"), strings("vc"), strings("job_type")
    statuses = [v.upper() for v in strings("status")]
    jobs = list(map(TraceJob, ids, submits, durations, gpus, users, vcs, nodes, statuses, models))
    jobs.sort(key=lambda j: (j.submit_time, j.job_id))
    return Trace(
        jobs=tuple(jobs),
        source=display,
        format="normalized",
        lines={job_id: k + 2 for k, job_id in enumerate(ids)},
        dropped={},
    )
