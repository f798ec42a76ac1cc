"""Loader for the Acme job tables of Shanghai AI Lab (InternLM/AcmeTrace, NSDI'24).

``trace_seren.csv`` and ``trace_kalos.csv`` record six months (March to
August 2023) of LLM development on two A100 clusters: pretraining gangs of
up to 1,024 GPUs, bursts of evaluation jobs, debugging and fine-tuning, many
of them cancelled or failed. The schema is the one the AcmeTrace README
documents (commit 6d6ac9cd): ``job_id, user, node_num, gpu_num, cpu_num,
type, state, submit_time, start_time, end_time, duration, queue, gpu_time``,
and in Kalos also ``mem_per_pod_GB, shared_mem_per_pod, fail_time,
stop_time``. What differs from Helios, whose log it resembles:

* date-times carry their UTC offset, ``+08:00`` in Seren and ``+00:00`` in
  Kalos; they are read as absolute instants, so the two clusters' files
  count from their own first submit on one clock;
* ``type`` is the LLM workload type (Pretrain, Evaluation, SFT, MLLM,
  Debug, Other in the paper), which a user declares in the job's name; it
  becomes the job's ``name`` (what Slurm shows policies), not a model class
  of the speed model, so the simulator still draws and hides one;
* the README defines ``duration`` as end minus start and ``queue`` as start
  minus submit (seconds; ``queue`` is a float in Kalos), but its own Kalos
  example rows have ``duration`` = end minus *submit* (18 s for a job that
  ran 8 s after a 10 s wait; the Seren rows agree with the definition). The
  run time is therefore taken from ``end_time - start_time`` whenever both
  are present, and from ``duration`` only when they are not; ``gpu_time``
  (``duration`` times ``gpu_num``) is not read;
* states are Slurm's five: COMPLETED, CANCELLED, FAILED, TIMEOUT and
  NODE_FAIL; the authors count the last two as failures, here TIMEOUT is
  KILLED (the normalized word for a job stopped at its limit) and NODE_FAIL
  FAILED;
* Kalos ``job_id`` values are platform strings (``dlc...``), Seren's are
  Slurm numbers; both are kept as text;
* CPU-only jobs (``gpu_num`` 0: 367,737 of Seren's 1,031,550 jobs by the
  upstream cluster summary) and jobs that never started are counted in
  ``Trace.dropped``.
"""

from __future__ import annotations

from pathlib import Path

from slurmrl.traces.helios import read_log
from slurmrl.traces.rows import Row, RowError, parse_datetime, parse_float
from slurmrl.traces.schema import Trace

# Columns that tell an Acme table from a Helios log (which has vc and no type).
MARKERS = frozenset({"job_id", "gpu_num", "node_num", "type", "state", "submit_time", "duration", "gpu_time"})


def _run_time(row: Row) -> float | None:
    """Seconds the job ran: end minus start when both are known, else ``duration``; None if it never started."""
    start, end, duration = row.opt("start_time"), row.opt("end_time"), row.opt("duration")
    if not start:
        return None
    if end:
        ran = parse_datetime(end, "end_time") - parse_datetime(start, "start_time")
        if ran < 0:
            raise RowError(f"end_time is {-ran:g} s before start_time", "end_time")
        return ran
    return parse_float(duration, "duration") if duration else None


def load(path: Path, display: str, skip_bad: bool) -> Trace:
    return read_log(path, display, skip_bad, "acme", _run_time, name_column="type")
