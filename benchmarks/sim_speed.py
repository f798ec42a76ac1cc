"""Simulator speed on the shared Philly window: prints its figures.

Replays all 46,070 jobs of the four shared Philly weeks on an 8x8x8 V100
cluster under the simulator's defaults (packed node counts, time limits as
estimates, no co-location) and prints, for each target, the best and worst
wall time over ``--repeat`` runs, the target, jobs per second and the number
of scheduling decisions. Wall times on a shared machine drift by tens of
percent between identical runs, so each run loads its workload afresh (no
cache carried over) and the best run is the figure to compare. Then the cost
of the default speed model (``placement``) relative to ``none`` for the
policies run under both, the peak resident memory, and a table of the cost
per decision as the offered load, and with it the pending queue, grows (it
must stay far from quadratic).

Targets (seconds): fifo and sjf-oracle at the trace's own arrival times with
``speed_model="none"``, 3 each; tiresias at offered load 1.0 with the default
speed model, 60. Public simulators take 88-345 s for the first two.

    python benchmarks/sim_speed.py [--repeat 3] [--only fifo,sjf-oracle] [--no-scaling]
"""

from __future__ import annotations

import argparse
import resource
import time
from dataclasses import dataclass

from slurmrl.policy.registry import make_policy
from slurmrl.scenarios.catalog import PHILLY
from slurmrl.sim.experiment import prepare
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.traces.store import locate

CLUSTER = "8x8x8:v100"


@dataclass(frozen=True)
class Case:
    policy: str  # registry name, "+placement" to override the default one
    speed_model: str
    target_load: float | None  # None: the trace's own arrival times
    target_s: float | None


CASES = (
    Case("fifo", "none", None, 3.0),
    Case("fifo", "placement", None, None),
    Case("sjf-oracle", "none", None, 3.0),
    Case("sjf-oracle", "placement", None, None),
    Case("tiresias", "placement", 1.0, 60.0),
)


@dataclass(frozen=True)
class Timing:
    jobs: int
    wall: float
    decisions: int
    avg_queue: float


def replay(policy: str, speed_model: str, target_load: float | None, limit: int | None = None) -> Timing:
    """One replay on a freshly prepared workload; times the replay only."""
    workload = prepare(trace=str(locate(PHILLY)), cluster=CLUSTER, target_load=target_load, limit=limit)
    name, _, place = policy.partition("+")
    sim = Simulator(
        workload.trace, workload.cluster, config=SimConfig(seed=workload.seed, speed_model=speed_model)
    )
    t0 = time.perf_counter()
    result = sim.run(make_policy(name, place or None))
    wall = time.perf_counter() - t0
    samples = result.samples
    span = samples[-1].time - samples[0].time if len(samples) > 1 else 0.0
    queue = (
        sum(a.pending_jobs * (b.time - a.time) for a, b in zip(samples, samples[1:], strict=False)) / span
        if span > 0
        else 0.0
    )
    return Timing(len(workload.trace.jobs), wall, result.decisions, queue)


def targets(cases: list[Case], repeat: int) -> dict[tuple[str, str], float]:
    print(f"Full shared Philly window (46,070 jobs) on {CLUSTER}, locality pack, best of {repeat}")
    print(
        f"{'policy':<14}{'speed':>10}{'load':>6}{'best s':>9}{'worst s':>9}{'target':>8}"
        f"{'jobs/s':>9}{'decisions':>11}{'ms/dec':>8}"
    )
    best: dict[tuple[str, str], float] = {}
    for case in cases:
        runs = [replay(case.policy, case.speed_model, case.target_load) for _ in range(max(1, repeat))]
        fast = min(runs, key=lambda r: r.wall)
        slow = max(r.wall for r in runs)
        best[(case.policy, case.speed_model)] = fast.wall
        load = "trace" if case.target_load is None else f"{case.target_load:g}"
        target = f"{case.target_s:g}" if case.target_s is not None else "-"
        print(
            f"{case.policy:<14}{case.speed_model:>10}{load:>6}{fast.wall:>9.2f}{slow:>9.2f}{target:>8}"
            f"{fast.jobs / fast.wall:>9.0f}{fast.decisions:>11}{1000 * fast.wall / max(1, fast.decisions):>8.3f}"
        )
    return best


def ratios(best: dict[tuple[str, str], float]) -> None:
    print()
    print("Default speed model against none (target: at most 2x)")
    for (policy, model), wall in best.items():
        base = best.get((policy, "none"))
        if model == "placement" and base:
            print(f"{policy:<14} placement/none = {wall / base:.2f}")


def scaling() -> None:
    print()
    print("Cost per decision as the pending queue grows (first 12,000 jobs, fifo-backfill+topology, none)")
    print(f"{'load':>7}{'avg queue':>11}{'ms/dec':>9}{'wall s':>8}")
    for load in (0.5, 1.0, 2.0, 4.0, 8.0):
        r = replay("fifo-backfill+topology", "none", load, limit=12_000)
        print(f"{load:>7.1f}{r.avg_queue:>11.1f}{1000 * r.wall / max(1, r.decisions):>9.3f}{r.wall:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; best and worst are printed")
    parser.add_argument("--only", default="", help="comma-separated policies of the cases to run")
    parser.add_argument("--no-scaling", action="store_true")
    args = parser.parse_args()
    wanted = {p for p in args.only.split(",") if p}
    cases = [c for c in CASES if not wanted or c.policy in wanted]
    best = targets(cases, args.repeat)
    ratios(best)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak_mb:.0f} MB")
    if not args.no_scaling:
        scaling()


if __name__ == "__main__":
    main()
