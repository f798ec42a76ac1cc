"""What the daemon's start-up read of accounting costs: parsing ``sacct`` output for N ended jobs.

The daemon reads the last ``history_days`` of ended jobs once per start
(``slurmrl/slurm/accounting.py``); on a busy cluster a week holds tens of
thousands of jobs. This writes N synthetic records in the daemon's field
order (each with its own id, times a minute apart, a few users, accounts
and GPU counts), parses them as the daemon does, and prints the best wall
time of ``--repeat`` runs and the rate. The ``sacct`` query itself is
slurmdbd's time and is not measured here.

    python benchmarks/accounting_read.py [--jobs 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from slurmrl.slurm.accounting import DELIMITER, SACCT_FIELDS, parse_sacct

T0 = time.mktime((2026, 11, 1, 0, 0, 0, 0, 0, -1))


def record(i: int) -> str:
    """One ended job as sacct prints it with ``-P --delimiter``: ran 30-90 minutes, 1-8 GPUs."""
    start = T0 + 60.0 * i
    end = start + 1800.0 + 60.0 * (i % 61)
    gpus = 1 << (i % 4)
    stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))  # noqa: E731
    row = {
        "JobID": str(100_000 + i),
        "User": f"user{i % 40}",
        "Account": f"vc{i % 12}",
        "Partition": "gpu",
        "State": "COMPLETED" if i % 9 else "CANCELLED by 1000",
        "Submit": stamp(start - 300.0),
        "Start": stamp(start),
        "End": stamp(end),
        "TimelimitRaw": "240",
        "NNodes": "1",
        "AllocTRES": f"billing={gpus},cpu={4 * gpus},gres/gpu={gpus},mem={16 * gpus}G,node=1",
        "JobName": f"train-{i % 97} model=resnet50",
        "Comment": "",
        "AdminComment": "",
    }
    return DELIMITER.join(row[f] for f in SACCT_FIELDS)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    text = "\n".join(record(i) for i in range(args.jobs)) + "\n"
    best = float("inf")
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        read = parse_sacct(text)
        best = min(best, time.perf_counter() - t0)
    if len(read.jobs) != args.jobs or read.unreadable:
        raise SystemExit(f"read {len(read.jobs)} jobs and {read.unreadable} unreadable of {args.jobs}")
    print(
        f"{args.jobs:,} ended jobs ({len(text) / 1e6:.1f} MB of sacct output): "
        f"best of {args.repeat} {best:.2f} s, {args.jobs / best:,.0f} jobs/s"
    )


if __name__ == "__main__":
    main()
