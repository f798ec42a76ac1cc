"""Loader for Pollux workload CSVs (petuum/adaptdl ``osdi21-artifact``, Apache-2.0).

Pollux workloads carry no run time: Pollux simulates progress from a goodput
model. To replay them here each application gets a typical amount of work in
GPU-hours, and run time = work / ``num_replicas`` (linear scaling assumed).

The work values are ESTIMATES, not measurements: the Pollux paper (Qiao et al.,
OSDI'21, Table 1) sorts its six models into size classes by GPU-time --
small 0-1, medium 1-10, large 10-100, extra-large 100-1000 GPU-hours -- and each
value below is a representative point inside its application's class. Use
them for relative comparisons between policies, not for absolute JCTs.
"""

from __future__ import annotations

from pathlib import Path

from slurmrl.traces.rows import Builder, RowError, csv_rows, parse_count, parse_float, read_text
from slurmrl.traces.schema import Trace, TraceJob

REQUIRED = ("name", "time", "application", "num_replicas")

# application -> (model zoo name, estimated GPU-hours); size classes from Pollux OSDI'21 Table 1.
APPLICATIONS: dict[str, tuple[str, float]] = {
    "cifar10": ("resnet18", 0.5),  # small class (0-1 GPU-h)
    "ncf": ("ncf", 0.5),  # small class
    "deepspeech2": ("deepspeech2", 3.0),  # medium class (1-10 GPU-h)
    "bert": ("bert", 3.0),  # medium class
    "yolov3": ("yolov3", 30.0),  # large class (10-100 GPU-h)
    "imagenet": ("resnet50", 300.0),  # extra-large class (100-1000 GPU-h)
}


def load(path: Path, display: str, skip_bad: bool) -> Trace:
    b = Builder(display, "pollux", skip_bad)
    for row in csv_rows(read_text(path, display), display, REQUIRED):
        try:
            name = row.get("name")
            if not name:
                raise RowError("empty job name", "name")
            submit = parse_float(row.get("time"), "time")
            app = row.get("application")
            if app not in APPLICATIONS:
                raise RowError(
                    f"unknown application '{app}'", "application", f"known: {', '.join(sorted(APPLICATIONS))}"
                )
            replicas = parse_count(row.get("num_replicas"), "num_replicas")
            if replicas == 0:
                raise RowError("0 replicas: a job needs at least one GPU", "num_replicas")
        except RowError as err:
            b.bad(err, row.line)
            continue
        model, gpu_hours = APPLICATIONS[app]
        b.add(
            TraceJob(
                job_id=name,
                submit_time=submit,
                duration=gpu_hours * 3600.0 / replicas,
                num_gpus=replicas,
                model=model,
                name=app,
            ),
            row.line,
        )
    return b.finish()
