"""How much of the gap to the clairvoyant bound knowing the run-time distribution closes, and how much is left.

``gittins-limit`` ranks by a Gittins index on the run times of ended jobs
with like limits; ``srtf-oracle`` ranks by each job's true remaining time.
Between them lie two kinds of knowledge: of the *distribution* of run times
(which the heuristic estimates from what has ended, and which accounting's
history or a table learned offline sharpens), and of each *job's own* run
time (which Slurm never has). This benchmark measures each on training-side
windows (scenarios of role "train"; the default is the contended validation
window), several workload seeds:

    H           gittins-limit as the suites run it: no history at a hand-over
    H+history   the same handed the last DAYS of ended jobs at the hand-over, as
                the daemon reads them from accounting (warm-started scenarios only)
    H+table     with --table SCENARIO: the same handed, as if from accounting, the
                run times of every job of another training-side window (a run-time
                table learned offline; also H+history+table on a warm start)
    known       Gittins on the run times of every job the replay holds (a warm
                start's warm-up too), per class of limit, never updated: the
                distribution known exactly, no job's own (it reads true run times)
    known-vc    the same per VC and class of limit
    O           srtf-oracle: every job's own remaining time (a bound)

and prints each row's share of H's gap to O, (H - row) / (H - O). ``known``
is a reference, not a bound: a table that keeps learning from the ends it
sees may do better. What the distribution rows leave of the gap needs
knowledge of each job's own run time, which a learned order has to find in
what Slurm knows of a job before it runs (``python
benchmarks/duration_signal.py``).

    python benchmarks/information_bound.py [--scenario philly-320-week2-val] [--seeds 0,1,2]
        [--placement topology] [--history-days 7] [--table philly-384-week1] [--jobs 2]
"""

from __future__ import annotations

import argparse
import statistics
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from slurmrl.policy.backfill import DEFAULT_TIME_LIMIT, limit_of
from slurmrl.policy.ordering.gittins import GittinsLimit, RunTimes, limit_class
from slurmrl.policy.registry import make_placement, make_policy
from slurmrl.policy.view import FinishedJob, JobView
from slurmrl.scenarios.catalog import get_scenario
from slurmrl.sim.experiment import SimSettings, prepare, run_policy
from slurmrl.traces.schema import TraceJob

ROWS = ("H", "H+history", "H+table", "H+history+table", "known", "known-vc", "O")


class KnownRunTimes(RunTimes):
    """Every job's run time over its limit, learned before the first decision and never after: a bound."""

    def __init__(self, jobs: Sequence[TraceJob], *, by_vc: bool) -> None:
        super().__init__()
        self.by_vc = by_vc
        self._pooled_history = deque()
        for job in jobs:
            limit = job.time_limit if job.time_limit and job.time_limit > 0 else DEFAULT_TIME_LIMIT
            cell = self._cell(limit, job.vc)
            fraction = max(0.0, job.duration) / limit
            self._history.setdefault(cell, deque()).append(fraction)  # type: ignore[arg-type]
            self._pooled_history.append(fraction)
        # Every curve is new: learn each from all of its samples at once.
        self._new = {cell: len(runs) for cell, runs in self._history.items()}  # type: ignore[misc]
        self._new[None] = len(self._pooled_history)
        self.refresh()

    def _cell(self, limit: float, vc: str) -> tuple[int, str]:
        return (limit_class(limit), vc if self.by_vc else "")

    def learn(self, job: JobView, run_time: float, *, from_accounting: bool = False) -> None:
        """Nothing more to learn: every run time is known from the start."""

    def _class_of(self, job: JobView) -> tuple[float, int]:
        limit = limit_of(job)
        return limit, self._cell(limit, job.group)  # type: ignore[return-value]


def tabled(placement: str, table: Sequence[TraceJob]) -> GittinsLimit:
    """gittins-limit handed a table of run times, oldest end first, as a checkpoint's ``run_times``
    hands its lead (:meth:`GittinsLimit.remember`): as if read from accounting."""
    policy = GittinsLimit(make_placement(placement))
    ended = [
        FinishedJob(
            JobView(j.job_id, j.num_gpus, j.submit_time, time_limit=j.time_limit),
            j.submit_time + j.duration,
            j.duration,
            from_accounting=True,
        )
        for j in table
    ]
    policy.remember(sorted(ended, key=lambda f: f.end_time))
    return policy


def one(args: tuple[str, int, str, str, float, str]) -> tuple[str, int, float]:
    """(row, seed, avg JCT) of one replay."""
    scenario, seed, row, placement, days, table = args
    workload = prepare(scenario=scenario, seed=seed)
    settings = SimSettings(handover_history=days if "history" in row else 0.0)
    if row in ("known", "known-vc"):
        policy = GittinsLimit(make_placement(placement))
        policy.runs = KnownRunTimes(workload.trace.jobs, by_vc=row == "known-vc")
        policy.deployable = False
    elif "table" in row:
        policy = tabled(placement, prepare(scenario=table, seed=seed).trace.jobs)
    else:
        policy = make_policy("srtf-oracle" if row == "O" else "gittins-limit", placement)
    out = run_policy(workload, policy, settings=settings)
    return row, seed, float(out.summary["avg_jct"])  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="philly-320-week2-val")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--placement", default="topology")
    parser.add_argument("--history-days", type=float, default=7.0)
    parser.add_argument("--table", default="", help="a training-side scenario whose run times make H+table")
    parser.add_argument("--jobs", type=int, default=2)
    a = parser.parse_args()
    scenario = get_scenario(a.scenario)
    for option, name in (("--scenario", a.scenario), ("--table", a.table)):
        role = get_scenario(name).role if name else "train"
        if role != "train":
            raise SystemExit(
                f"{option} {name} has role '{role}': this benchmark reads training-side windows only"
            )
    seeds = [int(s) for s in a.seeds.split(",")]
    rows = [
        r
        for r in ROWS
        if ("history" not in r or scenario.warmup_start is not None) and ("table" not in r or a.table)
    ]
    cells = [(a.scenario, s, row, a.placement, a.history_days, a.table) for row in rows for s in seeds]
    with ProcessPoolExecutor(a.jobs) as pool:
        jct = {(row, seed): v for row, seed, v in pool.map(one, cells)}
    print(f"{a.scenario}, placement {a.placement}, seeds {a.seeds}: avg JCT (s), mean over seeds;")
    print(
        f"closure = (H - row) / (H - O), mean over seeds; H+history: {a.history_days:g} days at the hand-over"
    )
    for row in rows:
        mean = statistics.fmean(jct[row, s] for s in seeds)
        gaps = [
            (jct["H", s] - jct[row, s]) / (jct["H", s] - jct["O", s])
            for s in seeds
            if jct["H", s] != jct["O", s]
        ]
        closes = f"{100 * statistics.fmean(gaps):6.1f}%" if gaps else "   n/a"
        per = "  ".join(f"{jct[row, s]:,.1f}" for s in seeds)
        print(f"  {row:<16}{mean:>12,.1f}  closure {closes}  seeds: {per}")


if __name__ == "__main__":
    main()
