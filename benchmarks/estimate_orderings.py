"""Orderings on run-time estimates from what Slurm knows, replayed beside ``sjf-limit``: none is shipped.

Two orderings rank pending jobs by an estimated GPU-time, each job keyed
when the ordering first sees it, with EASY backfill on the time limits and
``topology`` placement, as ``sjf-limit+topology``:

    fit   exp(the least-squares fit of benchmarks/duration_signal.py) x GPUs,
          fitted on days 0-7 of philly-4w with --fit-seed's time limits
    cap   GPUs x min(time limit, typical run time of the VC's finished jobs),
          the limit alone while the VC has none

Both learn the VCs' run times from the jobs they see finish, as QSSF does.
For each workload seed the script prints avg JCT of the measured jobs and,
on a warm-started scenario, of the backlog taken over at the hand-over
(``backlog_avg_jct``), each beside sjf-limit's. What it shows (the topdrl
card and the README): on cold windows neither gains; on a warm-started one
``cap`` looks far better on the measured jobs only because it knows no
history at the hand-over, so the inherited jobs keep their limits as keys
and wait.

    python benchmarks/estimate_orderings.py --scenario philly-448-week2-val [--seeds 3] [--only cap]
        [--handover-history 7]   (the history the daemon reads at start, handed over too)
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np
from duration_signal import FEATURES, fit, table, window

from slurmrl.policy.backfill import EasyBackfill
from slurmrl.policy.ordering.ranking import Ranked, Ranking
from slurmrl.policy.registry import make_placement
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.sim.experiment import SimSettings, prepare, run_policy

UNKNOWN_LIMIT_S = 86400.0  # the featurizer's stand-in for a job without a limit
History = dict[str, list[float]]  # VC -> [finished jobs, sum of log1p run times]
Key = Callable[[JobView, History], float]


class FirstSightOrdering:
    """Smallest ``key`` first, each job keyed once, when first seen; VC history from finished jobs."""

    def __init__(self, key: Key) -> None:
        self.history: History = defaultdict(lambda: [0.0, 0.0])
        self._ranking = Ranking(lambda job: (key(job, self.history),), lambda rows, now: rows[:, 1], width=1)

    def order(self, view: ClusterView) -> Ranked:
        for done in view.finished:
            entry = self.history[done.job.group]
            entry[0] += 1.0
            entry[1] += math.log1p(done.run_time)
        return self._ranking.order(view)

    def started(self, job_ids: Sequence[str]) -> None:
        self._ranking.started(job_ids)

    def unstarted(self, job_ids: Sequence[str]) -> None:
        self._ranking.unstarted(job_ids)


def _vc(job: JobView, history: History) -> tuple[float, float]:
    """(finished jobs, their mean log1p run time) of the job's VC."""
    n, total = history[job.group] if job.group else (0.0, 0.0)
    return n, total / n if n else 0.0


def fit_key(weights: np.ndarray) -> Key:
    def key(job: JobView, history: History) -> float:
        n, mean = _vc(job, history)
        limit = job.time_limit if job.time_limit else UNKNOWN_LIMIT_S
        x = [1.0, math.log1p(limit), math.log(max(job.gpus, 1)), mean, float(n > 0), 0.0, 0.0]
        return math.exp(float(np.dot(x, weights))) * job.gpus

    return key


def cap_key(job: JobView, history: History) -> float:
    n, mean = _vc(job, history)
    limit = job.time_limit if job.time_limit else UNKNOWN_LIMIT_S
    return job.gpus * max(min(limit, math.expm1(mean)) if n else limit, 1.0)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--seed", type=int, default=0, help="first workload seed")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--fit-seed", type=int, default=0, help="time-limit seed of the fitted jobs")
    parser.add_argument("--only", default="fit,cap", help="orderings to replay: fit, cap or both")
    parser.add_argument(
        "--handover-history",
        type=float,
        default=0.0,
        metavar="DAYS",
        help="warm-started scenarios: the warm-up's jobs ended in the last DAYS days, handed over as finished",
    )
    args = parser.parse_args(argv)
    settings = SimSettings(handover_history=args.handover_history)

    train = window(
        table(sorted(prepare(scenario="philly-4w", seed=args.fit_seed).trace.jobs, key=_submit)), "0-7"
    )
    if len(FEATURES) != 6:
        raise SystemExit("the fit's feature list changed: update fit_key")
    keys = {"fit": fit_key(fit(train)), "cap": cap_key}
    chosen = [name for name in args.only.split(",") if name]
    for seed in range(args.seed, args.seed + args.seeds):
        workload = prepare(scenario=args.scenario, seed=seed)
        base = run_policy(workload, "sjf-limit", placement="topology", settings=settings).summary
        cells = [f"sjf-limit {_figures(base)}"]
        for name in chosen:
            policy = EasyBackfill(name, FirstSightOrdering(keys[name]), make_placement("topology"))
            summary = run_policy(workload, policy, placement="topology", settings=settings).summary
            change = 100.0 * (summary["avg_jct"] / base["avg_jct"] - 1.0)
            cells.append(f"{name} {_figures(summary)} ({change:+.1f}%)")
        print(f"{args.scenario} seed {seed}: " + " | ".join(cells), flush=True)


def _submit(job: object) -> float:
    return job.submit_time  # type: ignore[attr-defined]


def _figures(summary: dict[str, object]) -> str:
    text = f"{float(summary['avg_jct']) / 3600:.2f} h"  # type: ignore[arg-type]
    backlog = summary.get("backlog_avg_jct")
    if isinstance(backlog, float) and summary.get("backlog_jobs"):
        text += f", backlog({summary['backlog_jobs']}) {backlog / 3600:.2f} h"
    return text


if __name__ == "__main__":
    main()
