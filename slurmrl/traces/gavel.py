"""Loader for Gavel job traces (stanford-futuredata/gavel, MIT).

Gavel traces give work as ``total_steps`` rather than a run time. The run time
is recovered as ``total_steps / (throughput * scale_factor)``, with the
throughput of the job type running alone on one V100 and the assumption that
data-parallel jobs scale linearly (an optimistic bound; Gavel's own generator
draws the run time first and multiplies by a measured throughput, so this
inverts it up to the scaling assumption).

Two layouts exist, both tab-separated without a header:

* old, 7 fields: job_type, command, num_steps_arg, needs_data_dir,
  total_steps, arrival_time, scale_factor;
* new, 10 fields: job_type, command, working_dir, num_steps_arg,
  needs_data_dir, total_steps, scale_factor, priority_weight, SLO,
  arrival_time.

Jobs are named ``gavel-<row>`` (0-based data row) since the trace has no ids.
"""

from __future__ import annotations

from pathlib import Path

from slurmrl.traces.rows import Builder, RowError, parse_count, parse_float, read_text, text_lines
from slurmrl.traces.schema import Trace, TraceJob

# Steps per second of each job type alone on one V100 ("null" entries under "v100"
# in Gavel's scheduler/oracle_throughputs.json, commit 19b15c0a), rounded to 3 figures.
V100_STEPS_PER_S: dict[str, float] = {
    "ResNet-18 (batch size 16)": 77.3,
    "ResNet-18 (batch size 32)": 65.8,
    "ResNet-18 (batch size 64)": 48.9,
    "ResNet-18 (batch size 128)": 30.3,
    "ResNet-18 (batch size 256)": 17.0,
    "ResNet-50 (batch size 16)": 17.4,
    "ResNet-50 (batch size 32)": 9.92,
    "ResNet-50 (batch size 64)": 5.46,
    "ResNet-50 (batch size 128)": 2.85,
    "Transformer (batch size 16)": 12.8,
    "Transformer (batch size 32)": 12.5,
    "Transformer (batch size 64)": 9.57,
    "Transformer (batch size 128)": 5.77,
    "Transformer (batch size 256)": 1.71,
    "LM (batch size 5)": 167.0,
    "LM (batch size 10)": 143.0,
    "LM (batch size 20)": 108.0,
    "LM (batch size 40)": 71.7,
    "LM (batch size 80)": 43.9,
    "Recommendation (batch size 512)": 0.331,
    "Recommendation (batch size 1024)": 0.480,
    "Recommendation (batch size 2048)": 0.568,
    "Recommendation (batch size 4096)": 0.624,
    "Recommendation (batch size 8192)": 0.602,
    "A3C": 8.23,
    "CycleGAN": 4.92,
}

# Gavel model family -> model zoo name. Gavel's "Recommendation" is an
# autoencoder recommender on MovieLens; ncf is the nearest zoo entry.
MODEL = {
    "ResNet-18": "resnet18",
    "ResNet-50": "resnet50",
    "Transformer": "transformer",
    "LM": "lstm",
    "Recommendation": "ncf",
    "A3C": "a3c",
    "CycleGAN": "cyclegan",
}

OLD_FIELDS = (
    "job_type",
    "command",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "arrival_time",
    "scale_factor",
)
NEW_FIELDS = (
    "job_type",
    "command",
    "working_dir",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "priority_weight",
    "SLO",
    "arrival_time",
)


def family(job_type: str) -> str:
    return job_type.split(" (", 1)[0].strip()


def load(path: Path, display: str, skip_bad: bool) -> Trace:
    b = Builder(display, "gavel", skip_bad)
    index = 0
    for line_no, line in enumerate(text_lines(read_text(path, display)), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        job_id = f"gavel-{index}"
        index += 1
        try:
            if len(fields) == len(OLD_FIELDS):
                names = OLD_FIELDS
            elif len(fields) == len(NEW_FIELDS):
                names = NEW_FIELDS
            else:
                raise RowError(
                    f"{len(fields)} tab-separated fields, expected 7 (old layout) or 10 (new layout)",
                    hint="fields must be separated by tabs",
                )
            row = dict(zip(names, (f.strip() for f in fields), strict=True))
            job_type = row["job_type"]
            rate = V100_STEPS_PER_S.get(job_type)
            if rate is None:
                raise RowError(
                    f"unknown Gavel job type '{job_type}'",
                    "job_type",
                    f"known: {', '.join(sorted(V100_STEPS_PER_S))}",
                )
            steps = parse_float(row["total_steps"], "total_steps")
            gpus = parse_count(row["scale_factor"], "scale_factor")
            if gpus == 0:
                raise RowError("scale factor 0: a job needs at least one GPU", "scale_factor")
            arrival = parse_float(row["arrival_time"], "arrival_time")
        except RowError as err:
            b.bad(err, line_no)
            continue
        b.add(
            TraceJob(
                job_id=job_id,
                submit_time=arrival,
                duration=steps / (rate * gpus),
                num_gpus=gpus,
                model=MODEL.get(family(job_type), ""),
                name=job_type,
            ),
            line_no,
        )
    return b.finish()
