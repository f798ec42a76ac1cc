"""The training tables of the policy cards, from the ``log.csv`` each training run writes.

A card's training table states what a run did (decisions, CPU, whether
entropy, approx-KL, clip fraction and explained variance moved, what its
validation checks saw), and those figures are in the run's own log, saved
beside its checkpoint. This prints them as the card's table, one row per
run folder, so a card's training figures come from a command like every
other table, without training again:

    python benchmarks/training_log.py policies/topdrl-philly/contended-val-seeds/{0,1,2}

The first column of a log names its unit (PPO updates for topdrl and maifs,
episodes for harmony, meta-iterations for meta-rl). "first/last 10" are the
means over the first and the last ten rows that hold the value (the median
for approx-KL, whose rare spikes would rule a mean). The checks are the
rows with a validation score (``val_avg_jct``, else ``eval_avg_jct``, else
``yardstick_avg_jct``): first, best (with its row) and last.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

# (column, title, statistic over rows, format)
Move = tuple[str, str, Callable[[list[float]], float], str]
MOVES: tuple[Move, ...] = (
    ("entropy", "entropy first/last 10", statistics.fmean, ".2f"),
    ("approx_kl", "approx-KL first/last 10 (median)", statistics.median, ".2g"),
    ("clip_fraction", "clip fraction first/last 10", statistics.fmean, ".3f"),
    ("explained_variance", "explained var. first/last 10", statistics.fmean, ".2f"),
)
CHECKS = ("val_avg_jct", "eval_avg_jct", "yardstick_avg_jct")


def read_log(folder: Path) -> list[dict[str, str]]:
    path = folder / "log.csv"
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        sys.exit(f"{path}: cannot read the training log: {exc}")
    if not rows:
        sys.exit(f"{path}: the training log has no rows")
    return rows


def values(rows: list[dict[str, str]], column: str) -> list[tuple[str, float]]:
    """(row label, value) of every row that holds ``column``."""
    unit = next(iter(rows[0]))
    return [(r[unit], float(r[column])) for r in rows if r.get(column)]


def decisions(rows: list[dict[str, str]]) -> int:
    """Decisions trained on: the last ``steps`` of a PPO log, else the sum of ``decisions``."""
    steps = values(rows, "steps")
    if steps:
        return int(steps[-1][1])
    return int(sum(v for _, v in values(rows, "decisions")))


def first_last(
    rows: list[dict[str, str]], column: str, stat: Callable[[list[float]], float], fmt: str
) -> str:
    got = [v for _, v in values(rows, column)]
    if not got:
        return ""
    return f"{stat(got[:10]):{fmt}} / {stat(got[-10:]):{fmt}}"


def checks(rows: list[dict[str, str]]) -> str:
    for column in CHECKS:
        got = values(rows, column)
        if got:
            label, best = min(got, key=lambda x: x[1])
            return f"{len(got)}: {got[0][1]:,.1f} / **{best:,.1f}** ({label}) / {got[-1][1]:,.1f}"
    return ""


def row(folder: Path, rows: list[dict[str, str]], moves: Sequence[Move]) -> str:
    unit = next(iter(rows[0]))
    last = rows[-1]
    cells = [
        str(folder),
        f"{len(rows)} {unit}s",
        f"{decisions(rows):,}",
        last.get("cpu_s", ""),
        last.get("wall_s", ""),
        *(first_last(rows, column, stat, fmt) for column, _, stat, fmt in moves),
        checks(rows),
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="training run folders holding log.csv")
    args = parser.parse_args()
    logs = [(folder, read_log(folder)) for folder in args.folders]
    # Only what the logs record: harmony and meta-rl log no approx-KL, for one.
    moves = [m for m in MOVES if any(r.get(m[0]) for _, rows in logs for r in rows)]
    head = ["run", "rows", "decisions", "CPU (s)", "wall (s)", *(title for _, title, _, _ in moves)]
    head.append("checks: first / best (row) / last")
    lines = ["| " + " | ".join(head) + " |", "|---|---:|---:|---:|---:|" + "---|" * (len(moves) + 1)]
    for folder, rows in logs:
        try:
            lines.append(row(folder, rows, moves))
        except ValueError as exc:  # a cell that is not a number
            sys.exit(f"{folder / 'log.csv'}: {exc}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
