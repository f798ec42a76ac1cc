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

from pathlib import Path

from slurmrl.traces.rows import Builder, RowError, csv_rows, parse_count, parse_float, parse_id, read_text
from slurmrl.traces.schema import Trace, TraceJob

REQUIRED = ("job_id", "submit_time", "duration_s", "num_gpus")

DROP_NEVER_RAN = "never scheduled (empty duration)"
DROP_NO_GPUS = "no GPUs"


def load(path: Path, display: str, skip_bad: bool) -> Trace:
    b = Builder(display, "normalized", skip_bad)
    for row in csv_rows(read_text(path, display), display, REQUIRED):
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
