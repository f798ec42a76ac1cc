"""Validation replays cut once they cannot beat the best: prints what each costs whole and cut.

A trainer keeps a checkpoint only if its validation replay beats the best
so far, so :mod:`slurmrl.sim.cutoff` abandons a replay once a floor under
its average JCT passes that best. Here the figure to beat is one policy's
average JCT on a scenario (a led trainer's update 0: its lead); each other
policy is then replayed whole and with that cutoff, and the benchmark prints
the CPU seconds of both (a warm-started scenario's warm-ups played before),
the whole replay's average JCT, and the simulated time at which the cut
replay stopped (a replay that could still beat the figure runs to its end
and must give the same records).

    python benchmarks/validation_cutoff.py [--scenario philly-448-week2-val] [--beat srtf-limit+topology] [--policies a,b+placement]
"""

from __future__ import annotations

import argparse
import time

from slurmrl.cli.simulate import parse_policy_list
from slurmrl.sim.cutoff import JctCutoff, ReplayAbandoned
from slurmrl.sim.experiment import prepare, run_policy

POLICIES = "fifo+first-fit,slurm+topology,tiresias+topology,sjf-limit+topology,srtf-limit+topology"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="philly-448-week2-val")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--beat", default="srtf-limit+topology", help="the policy whose average JCT is the figure to beat"
    )
    ap.add_argument("--policies", default=POLICIES)
    args = ap.parse_args()
    workload = prepare(scenario=args.scenario, seed=args.seed)
    ((name, place),) = parse_policy_list(args.beat)
    beat = float(run_policy(workload, name, placement=place).summary["avg_jct"])  # type: ignore[arg-type]
    print(f"{args.scenario} seed {args.seed}: the figure to beat is {args.beat}'s {beat:.1f} s")
    for name, place in parse_policy_list(args.policies):  # play each warm-up (if any) before the timing
        try:
            run_policy(workload, name, placement=place, cutoff=JctCutoff(0.0))
        except ReplayAbandoned:
            pass
    print(f"{'policy':<28} {'avg JCT (s)':>12} {'whole CPU s':>12} {'cut CPU s':>10}  cut")
    for name, place in parse_policy_list(args.policies):
        label = f"{name}+{place}" if place else name
        start = time.process_time()
        whole = run_policy(workload, name, placement=place)
        whole_s = time.process_time() - start
        avg = float(whole.summary["avg_jct"])  # type: ignore[arg-type]
        start = time.process_time()
        try:
            cut = run_policy(workload, name, placement=place, cutoff=JctCutoff(beat))
            same = "same records" if cut.records == whole.records else "RECORDS DIFFER"
            print(
                f"{label:<28} {avg:>12.1f} {whole_s:>12.2f} {time.process_time() - start:>10.2f}  whole, {same}"
            )
        except ReplayAbandoned as stop:
            cut_s = time.process_time() - start
            print(f"{label:<28} {avg:>12.1f} {whole_s:>12.2f} {cut_s:>10.2f}  {stop}")


if __name__ == "__main__":
    main()
