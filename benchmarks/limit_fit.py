"""How the ``user`` time-limit model compares with logs that record both request and run time.

For each SWF log given (Parallel Workloads Archive format; only the first 18
fields are read, so logs with extra columns work), prints the real requests'
statistics and those of the model applied to the same run times: Spearman of
request vs run time, median and p10/p90 of request / run time, the share of
jobs that ran past their request, at the log's largest request (the model's: 7 days), and on one of
the model's round values. Then the same figures of both limit models on the
embedded Philly week, and the model's CPU time on a million jobs. Prints
only; slurmrl/sim/user_limits.py quotes the figures.

    python benchmarks/limit_fit.py HPC2N.swf MetaCentrum.swf
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from slurmrl.sim.limit_models import LIMIT_MODELS, seed_time_limits
from slurmrl.sim.user_limits import MAX_LIMIT, ROUND_VALUES, user_time_limits
from slurmrl.traces import load_trace

RUN_TIME, REQUESTED_TIME = 3, 8  # 0-based SWF fields


def read_swf(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Run times and requests of the jobs that have both (> 0)."""
    rows = [
        line.split()
        for line in path.read_text(errors="replace").splitlines()
        if line.strip() and not line.lstrip().startswith(";")
    ]
    run = np.array([float(r[RUN_TIME]) for r in rows])
    req = np.array([float(r[REQUESTED_TIME]) for r in rows])
    keep = (run > 0) & (req > 0)
    return run[keep], req[keep]


def stats(run: np.ndarray, limit: np.ndarray, maximum: float) -> str:
    ratio = limit / run
    rho = pd.Series(limit).rank().corr(pd.Series(run).rank())
    p10, p50, p90 = np.percentile(ratio, [10, 50, 90])
    return (
        f"Spearman {rho:.2f}, request/run median {p50:.1f}x (p10 {p10:.2f}x, p90 {p90:.0f}x), "
        f"ran past it {np.mean(run > limit):.1%}, at the maximum {np.mean(limit == maximum):.1%}, "
        f"round {np.mean(np.isin(limit, ROUND_VALUES)):.0%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="*", type=Path, help="SWF logs with requested times")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for path in args.logs:
        run, req = read_swf(path)
        ids = np.array([str(i) for i in range(len(run))], dtype=object)
        print(f"{path.name}: {len(run):,} jobs")
        print(f"  log:   {stats(run, req, req.max())}")
        print(f"  model: {stats(run, user_time_limits(run, ids, args.seed), MAX_LIMIT)}")
    week = load_trace("embedded:philly-sample")
    run = np.array([j.duration for j in week.jobs])
    print(f"philly-sample: {len(run):,} jobs")
    for model in LIMIT_MODELS:
        limits = np.array([j.time_limit for j in seed_time_limits(week, args.seed, model).jobs])
        print(f"  {model}: {stats(run, limits, MAX_LIMIT)}")
    durations = np.random.default_rng(args.seed).lognormal(np.log(1200.0), 2.0, 1_000_000)
    ids = np.array([f"job-{i}" for i in range(len(durations))], dtype=object)
    cpu = time.process_time()
    user_time_limits(durations, ids, args.seed)
    print(f"user model on 1,000,000 jobs: {time.process_time() - cpu:.2f} CPU s")


if __name__ == "__main__":
    main()
