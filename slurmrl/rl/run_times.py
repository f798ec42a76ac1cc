"""A checkpoint's run-time table: ended jobs of its training weeks, handed to its lead as history.

A lead that learns run times from ended jobs (``gittins-limit``) starts a
replay, or a daemon, knowing only what accounting hands it; a short or
absent history keys long asks as short until enough of them have ended.
A checkpoint may carry a table of the run times, with their time limits, of
every job of a training window (``run_times`` in config.json, a CSV file in
the folder: ``time_limit_s,run_time_s``): loading hands it to the lead as if
read from accounting (``FinishedJob.from_accounting``), before any history
of the cluster's own, which then ages it out as for any history.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from slurmrl.csv_records import Records, RunawayQuote
from slurmrl.errors import PolicyError
from slurmrl.policy.base import Policy
from slurmrl.policy.view import FinishedJob, JobView

COLUMNS = ("time_limit_s", "run_time_s")


def write_run_times(path: Path, pairs: Iterable[tuple[float, float]]) -> None:
    """(time limit, run time) pairs in seconds, one row each."""
    rows = [",".join(COLUMNS)] + [f"{limit:g},{run:g}" for limit, run in pairs]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def read_run_times(path: Path) -> tuple[FinishedJob, ...]:
    """The table as ended jobs read from accounting; a one-line error naming the file and line otherwise."""
    try:
        records = Records(path.read_text(encoding="utf-8"))
        header = records.header()
        if header != list(COLUMNS):
            raise PolicyError(f"the header must be {','.join(COLUMNS)}", file=str(path), line=1)
        return tuple(_ended(values, records.line, path) for values in records)
    except OSError as exc:
        raise PolicyError(f"cannot read the run-time table: {exc.strerror}", file=str(path)) from None
    except RunawayQuote as exc:
        raise PolicyError(str(exc), file=str(path), line=exc.first, hint=exc.hint) from None


def _ended(values: Sequence[str], line: int, path: Path) -> FinishedJob:
    try:
        limit, run = (float(v) for v in values)
    except ValueError:
        raise PolicyError(f"expected two numbers ({','.join(COLUMNS)})", file=str(path), line=line) from None
    if not (math.isfinite(limit) and limit > 0 and math.isfinite(run) and run >= 0):
        raise PolicyError(
            "a time limit must be positive and a run time not negative", file=str(path), line=line
        )
    job = JobView(f"table-{line}", 1, 0.0, time_limit=limit)
    return FinishedJob(job, end_time=run, run_time=run, from_accounting=True)


def hand_run_times(lead: Policy | None, table: Sequence[FinishedJob], config: Path) -> None:
    """Hand ``table`` to ``lead`` as its history; an error naming ``config`` if it learns no run times."""
    remember = getattr(lead, "remember", None)
    if remember is None:
        name = getattr(lead, "name", "none")
        raise PolicyError(
            f"'run_times' needs a lead that learns run times (gittins-limit), not '{name}'", file=str(config)
        )
    remember(table)
