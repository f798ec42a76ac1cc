"""Hand-written result folders for the report tests (no simulator involved)."""

from __future__ import annotations

import json
from pathlib import Path

JOB_HEADER = (
    "job_id,user,vc,model,gpus,submit_time,start_time,end_time,duration,run_time,preemptions,"
    "nodes,racks,worst_link,time_limit,killed_at_limit,best_time"
)
# jobs.csv as written before best_time was recorded.
OLD_JOB_HEADER = JOB_HEADER.removesuffix(",best_time")
TIMELINE_HEADER = "time,busy_gpus,pending_jobs,running_jobs,fragmentation"
CLUSTER = "c16: 1 racks, 2 nodes, 16 GPUs (V100)"


def summary(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "jobs": 4,
        "finished": 4,
        "killed": 0,
        "unfinished": 0,
        "avg_jct": 5000.0,
        "p50_jct": 4000.0,
        "p95_jct": 9000.0,
        "p99_jct": 9500.0,
        "avg_wait": 1000.0,
        "p95_wait": 3000.0,
        "avg_bounded_slowdown": 2.5,
        "makespan": 12000.0,
        "last_end": 12000.0,
        "gpu_utilization": 0.5,
        "avg_fragmentation": 0.2,
        "avg_queue_length": 1.5,
        "idle_gpu_hours_waiting": 1.25,
        "multi_gpu_local_fraction": 0.5,
        "multi_gpu_switch_fraction": 1.0,
        "jain_fairness_users": 0.9,
        "jain_fairness_vcs": 0.95,
        "ftf_rho_max": 1.8,
        "ftf_unfair_fraction": 0.5,
        "preemptions": 0,
        "avg_jct_lower_bound": 3000.0,
        "makespan_lower_bound": 9000.0,
        "jct_over_bound": 5000.0 / 3000.0,
        "makespan_over_bound": 12000.0 / 9000.0,
        "steady_jobs": 4,
        "steady_avg_jct": 5000.0,
        "steady_p95_jct": 9000.0,
        "steady_utilization": 0.55,
        "wall_seconds": 0.5,
    }
    base.update(overrides)
    return base


def write_run(
    folder: Path,
    *,
    policy: str,
    workload: str,
    jobs: list[str],
    placement: str = "first-fit",
    deployable: bool = True,
    cluster: str = CLUSTER,
    trace: str = "embedded:tiny",
    job_header: str = JOB_HEADER,
    **metrics: object,
) -> Path:
    """One run folder; ``jobs`` are jobs.csv data lines (see JOB_HEADER)."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {
        "policy": policy,
        "placement": placement,
        "deployable": deployable,
        "workload": workload,
        "trace": trace,
        "cluster": cluster,
        "seed": 0,
        "load_factor": 1.0,
        "offered_load": 0.8,
        "decisions": 3,
        "version": "0.1.0",
    }
    data = summary(jobs=len(jobs), **metrics)
    data["meta"] = meta
    (folder / "summary.json").write_text(json.dumps(data), encoding="utf-8")
    (folder / "jobs.csv").write_text("\n".join([job_header, *jobs]) + "\n", encoding="utf-8")
    timeline = ["0.0,8,1,1,0.0", "600.0,16,0,2,0.0", "4000.0,4,0,1,0.5", "12000.0,0,0,0,0.0"]
    (folder / "timeline.csv").write_text("\n".join([TIMELINE_HEADER, *timeline]) + "\n", encoding="utf-8")
    return folder


FOUR_JOBS_FIFO = [
    "j1,alice,vca,resnet,8,0.0,0.0,4000.0,4000.0,4000.0,0,1,1,0,,false,4000.0",
    "j2,bob,vcb,bert,16,100.0,600.0,9000.0,8400.0,8400.0,0,2,1,2,,false,8400.0",
    "j3,alice,vca,gpt,1,200.0,4000.0,6000.0,2000.0,2000.0,0,1,1,0,,false,2000.0",
    "j4,carol,vcb,vgg,2,300.0,5000.0,12000.0,7000.0,7000.0,0,1,1,1,,false,7000.0",
]
FOUR_JOBS_SJF = [
    "j1,alice,vca,resnet,8,0.0,0.0,4000.0,4000.0,4000.0,0,1,1,0,,false,4000.0",
    "j2,bob,vcb,bert,16,100.0,4000.0,12400.0,8400.0,8400.0,0,2,1,2,,false,8400.0",
    "j3,alice,vca,gpt,1,200.0,200.0,2200.0,2000.0,2000.0,0,1,1,0,,false,2000.0",
    "j4,carol,vcb,vgg,2,300.0,2200.0,9200.0,7000.0,7000.0,0,1,1,1,,false,7000.0",
]
ONE_JOB = ["solo,dave,vcx,resnet,4,0.0,10.0,3610.0,3600.0,3600.0,0,1,1,0,,false,3600.0"]


def build_results(root: Path) -> Path:
    """``root/cmp/runs/{fifo,fifo-backfill,sjf-oracle}+first-fit`` and ``root/single/run``.

    fifo-backfill has the lowest mean JCT of the deployable runs (4000 s),
    the oracle lower still (3500 s), fifo the highest (5000 s).
    """
    runs = root / "cmp" / "runs"
    write_run(
        runs / "fifo+first-fit",
        policy="fifo",
        workload="tiny-cmp",
        jobs=FOUR_JOBS_FIFO,
        avg_jct=5000.0,
        gpu_utilization=0.50,
        avg_queue_length=1.5,
    )
    write_run(
        runs / "fifo-backfill+first-fit",
        policy="fifo-backfill",
        workload="tiny-cmp",
        jobs=FOUR_JOBS_SJF,
        avg_jct=4000.0,
        gpu_utilization=0.60,
        avg_queue_length=2.5,
    )
    write_run(
        runs / "sjf-oracle+first-fit",
        policy="sjf-oracle",
        workload="tiny-cmp",
        deployable=False,
        jobs=FOUR_JOBS_SJF,
        avg_jct=3500.0,
        gpu_utilization=0.70,
        avg_queue_length=0.5,
    )
    write_run(
        root / "single" / "run",
        policy="fifo",
        workload="one job",
        jobs=ONE_JOB,
        finished=1,
        steady_jobs=1,
        avg_jct=3610.0,
        multi_gpu_local_fraction=None,
        multi_gpu_switch_fraction=None,
    )
    return root


CARD = """# rl-ppo: a PPO ordering policy

Trained with **PPO** on `philly-64-week1`.

| scenario | mean JCT [h] |
|---|---:|
| week3 | 3.12 |

- observation: the first 32 pending jobs
- action: which job starts next
"""


def build_cards(root: Path) -> Path:
    card_dir = root / "policies" / "rl-ppo"
    card_dir.mkdir(parents=True)
    (card_dir / "card.md").write_text(CARD, encoding="utf-8")
    return root / "policies"
