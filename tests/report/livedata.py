"""Result folders of live Slurm replays beside simulated runs, written with ``write_results``.

Summary figures are set directly (the fidelity comparison reads only the
summary), on top of a few constructed job records and samples so each folder
reads back like any other run.
"""

from __future__ import annotations

from pathlib import Path

from slurmrl.sim.records import JobRecord, Sample
from slurmrl.sim.results import write_results
from tests.report import sitedata

WORKLOAD = "replay-tiny"
TRACE = "philly:window-0"
CLUSTER = "c16: 1 racks, 2 nodes, 16 GPUs (V100)"


def _record(job_id: str, gpus: int, submit: float, start: float, end: float) -> JobRecord:
    return JobRecord(
        job_id=job_id,
        user="alice" if gpus < 8 else "bob",
        vc="vca",
        model="resnet",
        gpus=gpus,
        submit_time=submit,
        start_time=start,
        end_time=end,
        duration=end - start,
        run_time=end - start,
        preemptions=0,
        nodes=1 if gpus <= 8 else 2,
        racks=1,
        worst_link=0 if gpus <= 8 else 2,
        time_limit=float("nan"),
        best_time=end - start,
    )


def records(stretch: float = 1.0) -> list[JobRecord]:
    """Three jobs; ``stretch`` lengthens every run, as a slower cluster would."""
    return [
        _record("j1", 8, 0.0, 0.0, 4000.0 * stretch),
        _record("j2", 16, 100.0, 4000.0 * stretch, 9000.0 * stretch),
        _record("j3", 2, 200.0, 200.0, 2200.0 * stretch),
    ]


SAMPLES = [Sample(0.0, 8, 1, 1, 0.0), Sample(4000.0, 16, 0, 1, 0.0), Sample(9000.0, 0, 0, 0, 0.0)]


def write(
    folder: Path,
    *,
    policy: str,
    placement: str = "first-fit",
    live: bool = False,
    daemon: bool = True,
    avg_jct: float,
    p95_jct: float = 9000.0,
    makespan: float = 12000.0,
    finished: int = 3,
    workload: str = WORKLOAD,
) -> Path:
    """One run folder; a live one carries the metadata ``slurmrl replay`` writes."""
    meta: dict[str, object] = {
        "policy": policy,
        "placement": placement,
        "deployable": True,
        "workload": workload,
        "trace": TRACE,
        "cluster": CLUSTER,
        "seed": 0,
        "speed_model": "placement",
    }
    if live:
        meta.update({"source": "slurm", "slurm_version": "22.05.8", "speedup": 60.0, "daemon": daemon})
    summary = sitedata.summary(
        jobs=3,
        finished=finished,
        unfinished=3 - finished,
        avg_jct=avg_jct,
        p95_jct=p95_jct,
        makespan=makespan,
        steady_jobs=3,
    )
    return write_results(
        folder, summary=summary, records=records(1.1 if live else 1.0), samples=SAMPLES, meta=meta
    )


# Every live run 10% slower than simulated: the ranking agrees (fifo-backfill < stock Slurm < fifo).
SIMULATED = {"fifo": 5000.0, "fifo-backfill": 4000.0, "slurm": 4500.0}
LIVE_AGREEING = {"fifo": 5500.0, "fifo-backfill": 4400.0, "slurm": 4950.0}
# fifo-backfill measured far slower than simulated: stock Slurm < fifo < fifo-backfill live.
LIVE_DISAGREEING = {"fifo": 5500.0, "fifo-backfill": 6000.0, "slurm": 4950.0}


def build(root: Path, live_jct: dict[str, float] = LIVE_AGREEING) -> Path:
    """``root/sim/runs/*`` (fifo, fifo-backfill, slurm) and ``root/live/*`` (the same two plus stock Slurm)."""
    for policy, jct in SIMULATED.items():
        write(root / "sim" / "runs" / f"{policy}+first-fit", policy=policy, avg_jct=jct)
    for policy, jct in live_jct.items():
        stock = policy == "slurm"
        write(
            root / "live" / (policy if not stock else "stock"),
            policy=policy,
            placement="slurm" if stock else "first-fit",
            live=True,
            daemon=not stock,
            avg_jct=jct,
            p95_jct=9900.0,
            makespan=13200.0,
        )
    return root
