"""Simulator speed on the shared Philly window: prints its figures.

Replays all 46,070 jobs of the four shared Philly weeks on an 8x8x8 V100
cluster with each named policy and prints wall time, jobs per second, peak
memory and the mean time per scheduling decision. Wall times on a shared
machine drift by tens of percent between identical runs, so each policy runs
``--repeat`` times, each on a freshly loaded workload (no cache carried over),
and the best and worst runs are printed. A second table replays the
same jobs at rising offered load, which lengthens the pending queue, to show
how the cost of a decision grows with the queue (it must stay far from
quadratic).

    python benchmarks/sim_speed.py [--policies fifo-backfill+topology,slurm+first-fit] [--repeat 3] [--no-scaling]
"""

from __future__ import annotations

import argparse
import resource
import time

from slurmrl.scenarios.catalog import PHILLY, shared_traces_dir
from slurmrl.sim.experiment import prepare, run_policy

TARGETS = {"fifo-backfill+topology": 10.0, "slurm+first-fit": 20.0}


def run(
    policy: str, placement: str | None, arrival_scale: float | None, limit: int | None = None
) -> dict[str, float]:
    workload = prepare(
        trace=str(shared_traces_dir() / PHILLY), cluster="8x8x8:v100", arrival_scale=arrival_scale, limit=limit
    )
    t0 = time.perf_counter()
    out = run_policy(workload, policy, placement=placement)
    wall = time.perf_counter() - t0
    decisions = int(out.meta["decisions"])  # type: ignore[call-overload]
    return {
        "jobs": len(workload.trace.jobs),
        "wall": wall,
        "jobs_per_s": len(workload.trace.jobs) / wall,
        "decisions": decisions,
        "ms_per_decision": 1000 * wall / max(1, decisions),
        "avg_queue": float(out.summary["avg_queue_length"]),  # type: ignore[arg-type]
        "finished": float(out.summary["finished"]),  # type: ignore[arg-type]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policies", default=",".join(TARGETS))
    parser.add_argument("--repeat", type=int, default=3, help="runs per policy; the best is reported")
    parser.add_argument("--no-scaling", action="store_true")
    args = parser.parse_args()

    print("Full shared Philly window (46,070 jobs) on 8x8x8:v100, trace load as recorded")
    print(
        f"{'policy':<26}{'best s':>8}{'worst s':>9}{'target':>8}{'jobs/s':>9}{'decisions':>11}"
        f"{'ms/dec':>8}{'avg queue':>11}"
    )
    for item in args.policies.split(","):
        name, _, place = item.partition("+")
        runs = [run(name, place or None, None) for _ in range(max(1, args.repeat))]
        r = min(runs, key=lambda x: x["wall"])
        worst = max(x["wall"] for x in runs)
        target = TARGETS.get(item)
        print(
            f"{item:<26}{r['wall']:>8.2f}{worst:>9.2f}{(f'{target:.0f}' if target else '-'):>8}"
            f"{r['jobs_per_s']:>9.0f}{r['decisions']:>11}{r['ms_per_decision']:>8.3f}{r['avg_queue']:>11.1f}"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak_mb:.0f} MB")
    if args.no_scaling:
        return
    print()
    print("Cost per decision as the pending queue grows (first 12,000 jobs, fifo-backfill+topology)")
    print(f"{'arr. x':>7}{'avg queue':>11}{'ms/dec':>9}{'wall s':>8}")
    for scale in (0.5, 1.0, 2.0, 4.0, 8.0):
        r = run("fifo-backfill", "topology", scale, limit=12_000)
        print(f"{scale:>7.1f}{r['avg_queue']:>11.1f}{r['ms_per_decision']:>9.3f}{r['wall']:>8.2f}")


if __name__ == "__main__":
    main()
