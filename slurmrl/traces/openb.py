"""Loader for the raw Alibaba 2023 ``openb_pod_list_*.csv`` (alibaba/clusterdata, FGD trace).

Pods are independent single-node tasks. Same policy as the normalized openb
file (see :mod:`slurmrl.traces.normalized`): pods never scheduled (empty
``scheduled_time``) and CPU-only pods (``num_gpu`` 0) are counted in
``Trace.dropped``; a GPU-sharing pod (``gpu_milli`` < 1000) counts as one whole
GPU. Run time is ``deletion_time - scheduled_time``; for pods still alive when
the trace ends this is censored at the trace end. ``gpu_spec`` becomes
``gpu_type`` only when it names a single type; a list of acceptable types
(``A|B``) is left unconstrained. Times are already seconds from the trace start
and are kept.
"""

from __future__ import annotations

from pathlib import Path

from slurmrl.traces.rows import Builder, RowError, csv_rows, parse_count, parse_float, read_text
from slurmrl.traces.schema import Trace, TraceJob

REQUIRED = ("name", "num_gpu", "creation_time", "deletion_time", "scheduled_time")
STATUS = {"succeeded": "COMPLETED", "failed": "FAILED", "running": "RUNNING", "pending": "PENDING"}

DROP_NEVER_RAN = "never scheduled (empty duration)"
DROP_NO_GPUS = "no GPUs"
DROP_NO_END = "no deletion time"


def load(path: Path, display: str, skip_bad: bool) -> Trace:
    b = Builder(display, "openb", skip_bad)
    for row in csv_rows(read_text(path, display), display, REQUIRED):
        try:
            name = row.get("name")
            if not name:
                raise RowError("empty pod name", "name")
            gpus = parse_count(row.get("num_gpu"), "num_gpu")
            milli_text = row.opt("gpu_milli")
            milli = parse_float(milli_text, "gpu_milli") if milli_text else 0.0
            submit = parse_float(row.get("creation_time"), "creation_time")
            scheduled_text, deleted_text = row.get("scheduled_time"), row.get("deletion_time")
            if not scheduled_text:
                b.drop(DROP_NEVER_RAN)
                continue
            if gpus == 0 and milli > 0:
                gpus = 1  # a share of one GPU still occupies a GPU
            if gpus == 0:
                b.drop(DROP_NO_GPUS)
                continue
            if not deleted_text:
                b.drop(DROP_NO_END)
                continue
            scheduled = parse_float(scheduled_text, "scheduled_time")
            deleted = parse_float(deleted_text, "deletion_time")
            if deleted < scheduled:
                raise RowError(
                    f"deletion time {deleted:g} is before scheduled time {scheduled:g}", "deletion_time"
                )
        except RowError as err:
            b.bad(err, row.line)
            continue
        spec = row.opt("gpu_spec")
        phase = row.opt("pod_phase")
        b.add(
            TraceJob(
                job_id=name,
                submit_time=submit,
                duration=deleted - scheduled,
                num_gpus=gpus,
                num_nodes=1,
                status=STATUS.get(phase.lower(), phase.upper()),
                gpu_type="" if "|" in spec else spec,
            ),
            row.line,
        )
    return b.finish()
