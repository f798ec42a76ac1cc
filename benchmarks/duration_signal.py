"""How well what Slurm knows of a pending job ranks its true run time.

A job-ordering agent such as topdrl sees, per pending job, its GPU count,
its time limit, and the mean log run time of finished jobs of its user and
of its group (VC); never its true duration. Whatever it can gain over
``sjf-limit`` by ranking short jobs first has to come from what those
features add to the time limit. This prints, for the jobs submitted in a
scoring window of a scenario's trace, the Spearman rank correlation with
the true duration of:

    limit          the time limit alone (what sjf-limit ranks by, times GPUs)
    group history  mean log run time of the group's jobs finished before the job was submitted
    user history   the same per user (only where the trace records users)
    model history  the same per model class (only where the trace records them:
                   the Gavel and Chronus traces)
    fit            least squares on log limit, log GPUs and both histories (with
                   whether each is known), fitted on the jobs of the fitting window

and the same for GPU-time (duration x GPUs) against limit x GPUs and the fit
plus log GPUs. A job counts as finished at submit + duration, as if it never
queued: more history than any replay gives, so the history rows are an upper
bound on what history adds. Fitting and scoring windows are in days from the
trace's first submission; the defaults are the training side of the Philly
scenarios (week 1 to fit, week 2 to score), never the held-out weeks.

    python benchmarks/duration_signal.py [--scenario philly-4w] [--seed 0] [--fit 0-7] [--score 7-14]
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pandas as pd

from slurmrl.sim.experiment import prepare
from slurmrl.traces.schema import TraceJob

DAY = 86400.0
UNKNOWN_LIMIT_S = 86400.0  # the featurizer's stand-in for a job without a limit


def history_columns(jobs: Sequence[TraceJob], key: str) -> tuple[np.ndarray, np.ndarray]:
    """Per job (in submit order): mean log1p run time of earlier-finished jobs of the same ``key``, and their count."""
    by_end = sorted(jobs, key=lambda j: j.submit_time + j.duration)
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    mean = np.zeros(len(jobs))
    count = np.zeros(len(jobs))
    done = 0
    for i, job in enumerate(jobs):
        while done < len(by_end) and by_end[done].submit_time + by_end[done].duration <= job.submit_time:
            ended = by_end[done]
            s = sums[getattr(ended, key) or ""]
            s[0] += 1.0
            s[1] += math.log1p(ended.duration)
            done += 1
        n, total = sums[getattr(job, key) or ""] if getattr(job, key) else (0.0, 0.0)
        count[i] = n
        mean[i] = total / n if n else 0.0
    return mean, count


def table(jobs: Sequence[TraceJob]) -> pd.DataFrame:
    limits = [j.time_limit if j.time_limit and j.time_limit > 0 else UNKNOWN_LIMIT_S for j in jobs]
    group, group_n = history_columns(jobs, "vc")
    user, user_n = history_columns(jobs, "user")
    model, model_n = history_columns(jobs, "model")
    first = jobs[0].submit_time if jobs else 0.0
    return pd.DataFrame(
        {
            "day": [(j.submit_time - first) / DAY for j in jobs],
            "log_limit": np.log1p(limits),
            "log_gpus": np.log([max(j.num_gpus, 1) for j in jobs]),
            "group": group,
            "group_known": (group_n > 0).astype(float),
            "user": user,
            "user_known": (user_n > 0).astype(float),
            "model": model,
            "model_known": (model_n > 0).astype(float),
            "log_duration": np.log1p([j.duration for j in jobs]),
        }
    )


FEATURES = ("log_limit", "log_gpus", "group", "group_known", "user", "user_known")


def fit(train: pd.DataFrame) -> np.ndarray:
    x = np.column_stack([np.ones(len(train)), train[list(FEATURES)].to_numpy()])
    weights, *_ = np.linalg.lstsq(x, train["log_duration"].to_numpy(), rcond=None)
    return weights


def predict(weights: np.ndarray, frame: pd.DataFrame) -> np.ndarray:
    return np.column_stack([np.ones(len(frame)), frame[list(FEATURES)].to_numpy()]) @ weights


def spearman(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    return float(pd.Series(np.asarray(a)).rank().corr(pd.Series(np.asarray(b)).rank()))


def window(frame: pd.DataFrame, days: str) -> pd.DataFrame:
    lo, _, hi = days.partition("-")
    return frame[(frame["day"] >= float(lo)) & (frame["day"] < float(hi))]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenario", default="philly-4w")
    parser.add_argument(
        "--seed", type=int, default=0, help="the workload seed (time limits are drawn with it)"
    )
    parser.add_argument("--fit", default="0-7", help="days of the fitting window, FROM-TO")
    parser.add_argument("--score", default="7-14", help="days of the scoring window, FROM-TO")
    args = parser.parse_args(argv)

    workload = prepare(scenario=args.scenario, seed=args.seed)
    jobs = sorted(workload.trace.jobs, key=lambda j: j.submit_time)
    frame = table(jobs)
    train, scored = window(frame, args.fit), window(frame, args.score)
    if len(train) < len(FEATURES) + 1 or len(scored) < 2:
        raise SystemExit(f"too few jobs: {len(train)} to fit, {len(scored)} to score")
    guess = predict(fit(train), scored)
    truth = scored["log_duration"]
    users = scored["user_known"].sum()
    models = scored["model_known"].sum()
    print(
        f"{args.scenario} (seed {args.seed}, time limits {workload.time_limits}): "
        f"fitted on days {args.fit} ({len(train)} jobs), scored on days {args.score} ({len(scored)} jobs; "
        f"{int(scored['group_known'].sum())} with group history, {int(users)} with user history, "
        f"{int(models)} with model history)"
    )
    rows = [
        ("limit", spearman(scored["log_limit"], truth)),
        ("group history", spearman(scored["group"].where(scored["group_known"] > 0), truth)),
        (
            "user history",
            spearman(scored["user"].where(scored["user_known"] > 0), truth) if users else math.nan,
        ),
        (
            "model history",
            spearman(scored["model"].where(scored["model_known"] > 0), truth) if models else math.nan,
        ),
        ("fit", spearman(guess, truth)),
    ]
    gpu_time = truth + scored["log_gpus"]
    gpu_rows = [
        ("limit x GPUs", spearman(scored["log_limit"] + scored["log_gpus"], gpu_time)),
        ("fit x GPUs", spearman(guess + scored["log_gpus"], gpu_time)),
    ]
    print(f"{'ranks duration by':<20}{'Spearman':>9}")
    for name, rho in rows:
        print(f"{name:<20}{rho:>9.3f}")
    print(f"{'ranks GPU-time by':<20}{'Spearman':>9}")
    for name, rho in gpu_rows:
        print(f"{name:<20}{rho:>9.3f}")


if __name__ == "__main__":
    main()
