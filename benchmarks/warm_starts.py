"""Policies compared on a warm-started scenario, the warm-up replayed by each or once: prints its figures.

A warm-started scenario replays earlier jobs under a heuristic before the
policy under test takes over; the warm-up does not depend on that policy,
so one process plays it once and every policy continues from a copy
(:class:`slurmrl.sim.handover.WarmStarts`). This runs the same policies in
this one process twice, keeping no warm-up (each policy replays its own, as
before the sharing) and keeping them (the default), and prints the CPU time
of each and whether every run's records and summary are the same.

    python benchmarks/warm_starts.py [--scenario philly-512-week2-val] [--policies a,b+placement,...]
"""

from __future__ import annotations

import argparse
import time

from slurmrl.cli.simulate import parse_policy_list
from slurmrl.grid.store import records_fingerprint
from slurmrl.sim.experiment import prepare, run_policy
from slurmrl.sim.handover import WARM_STARTS

POLICIES = (
    "sjf-limit,srtf-limit,fifo-backfill,slurm,qssf,tiresias,sjf-oracle,srtf-oracle,"
    "sjf-limit+type-aware,srtf-limit+first-fit"
)


def replay_all(scenario: str, pairs: list[tuple[str, str | None]], keep: int) -> tuple[float, list[str], int]:
    """CPU seconds, each run's fingerprint (records and summary), and the warm-ups played."""
    WARM_STARTS.size = keep
    WARM_STARTS.clear()
    played = WARM_STARTS.played
    workload = prepare(scenario=scenario)
    start = time.process_time()
    prints = []
    for name, place in pairs:
        out = run_policy(workload, name, placement=place)
        summary = sorted((k, v) for k, v in out.summary.items() if k != "wall_seconds")
        prints.append(f"{records_fingerprint(out.records)}:{hash(repr(summary))}")
    return time.process_time() - start, prints, WARM_STARTS.played - played


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="philly-512-week2-val")
    parser.add_argument("--policies", default=POLICIES)
    args = parser.parse_args()
    pairs = parse_policy_list(args.policies)
    kept_size = WARM_STARTS.size
    alone, alone_prints, alone_played = replay_all(args.scenario, pairs, 0)
    shared, shared_prints, shared_played = replay_all(args.scenario, pairs, kept_size)
    print(f"{args.scenario}, {len(pairs)} policies in one process")
    print(f"each replays its warm-up: {alone:7.1f} CPU s ({alone_played} warm-ups)")
    print(f"warm-ups kept:            {shared:7.1f} CPU s ({shared_played} warm-ups)")
    print(f"saved: {1 - shared / alone:.0%}; every run the same: {alone_prints == shared_prints}")


if __name__ == "__main__":
    main()
