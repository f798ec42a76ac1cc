"""The runs of ``slurmrl compare --scenario philly-sample`` on one process and on a pool: prints its figures.

For each process count: wall time of the whole comparison, CPU time summed
over every process that ran it (this one plus each run's own, measured
inside the worker: a pool worker is a grandchild that ``time`` does not
count), and whether every run's fingerprint (a hash of every job record)
equals the one-process run's. On a shared machine wall times drift; the CPU
figures say how much work the pool adds (each worker builds the workload
once).

    python benchmarks/parallel_runs.py [--scenario philly-sample] [--jobs 1,2]
"""

from __future__ import annotations

import argparse
import time

from slurmrl.executors.local import LocalExecutor
from slurmrl.grid.cells import Cell, simulate_cell
from slurmrl.grid.store import records_fingerprint
from slurmrl.policy.registry import policy_entry, policy_names


def timed_run(cell: Cell) -> tuple[str, float]:
    """One run's fingerprint and the CPU seconds its process spent on it (workload build included)."""
    start = time.process_time()
    result = simulate_cell(cell)
    return records_fingerprint(result.records), time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="philly-sample")
    parser.add_argument("--jobs", default="1,2", help="comma-separated process counts")
    args = parser.parse_args()
    cells = [
        Cell(name, None, 0, scenario=args.scenario)
        for name in policy_names()
        if not policy_entry(name).learned
    ]
    reference: list[str] | None = None
    print(f"{len(cells)} runs of {args.scenario} (compare's default policies, seed 0)")
    for jobs in (int(j) for j in args.jobs.split(",")):
        wall0, cpu0 = time.perf_counter(), time.process_time()
        outcomes = sorted(LocalExecutor(jobs).run(timed_run, cells), key=lambda o: o.index)
        wall = time.perf_counter() - wall0
        here = time.process_time() - cpu0
        prints = [o.value[0] for o in outcomes]
        # In one process the runs' CPU is this process's; in a pool it is the workers' plus this one's.
        cpu = here if jobs == 1 else here + sum(o.value[1] for o in outcomes)
        reference = reference or prints
        same = "identical" if prints == reference else "DIFFERENT"
        print(
            f"jobs={jobs}: {wall:6.1f} s wall, {cpu:6.1f} s CPU; fingerprints {same} to jobs={args.jobs.split(',')[0]}"
        )


if __name__ == "__main__":
    main()
