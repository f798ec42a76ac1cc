"""Shared plumbing for the per-format parsers.

Each loader only knows how one source names its columns; reading plain or
gzip files, turning a bad field into an error that points at file, line and
column, honouring ``skip_bad`` and counting rows left out on purpose all live
here so that every format reports problems the same way.
"""

from __future__ import annotations

import csv
import gzip
import math
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from slurmrl.csv_records import Records, RunawayQuote, shown
from slurmrl.errors import TraceError
from slurmrl.traces.schema import Trace, TraceJob

MAX_REASONS = 10  # how many skip reasons a Trace keeps for the user to read


class RowError(Exception):
    """One field of one row is unusable; the caller knows the file and line."""

    def __init__(self, message: str, column: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.column = column
        self.hint = hint


def read_bytes(path: Path, display: str) -> bytes:
    """File content, gunzipped when it starts with the gzip magic number."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceError("trace file not found", file=display, hint="check the path") from None
    except IsADirectoryError:
        raise TraceError("is a directory, not a trace file", file=display) from None
    except OSError as exc:
        raise TraceError(f"cannot read trace file: {exc.strerror or exc}", file=display) from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except EOFError:
            raise TraceError(
                "gzip data ends early: the file is truncated",
                file=display,
                hint="download or copy the file again",
            ) from None
        except (gzip.BadGzipFile, zlib.error, OSError) as exc:
            raise TraceError(
                f"gzip data is corrupt ({exc})", file=display, hint="re-create the file"
            ) from None
    return data


def read_text(path: Path, display: str) -> str:
    data = read_bytes(path, display)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x})",
            file=display,
            line=line,
            hint="is this a trace file?",
        ) from None


def text_lines(text: str) -> list[str]:
    """A text file's lines as an editor numbers them: at ``\n`` and ``\r\n`` only.

    ``str.splitlines`` also breaks at form feeds, vertical tabs and other
    separators, so a stray one would shift every line number an error names.
    """
    return text.replace("\r\n", "\n").split("\n")


# ---------------------------------------------------------------- field parsers


def parse_id(text: str | None, column: str = "job_id") -> str:
    if not text:
        raise RowError("empty job id", column)
    return text


def parse_float(text: str, column: str, *, minimum: float | None = 0.0) -> float:
    try:
        value = float(text)
    except ValueError:
        raise RowError(f"'{shown(text)}' is not a number", column) from None
    if math.isnan(value) or math.isinf(value):
        raise RowError(f"'{shown(text)}' is not a finite number", column)
    if minimum is not None and value < minimum:
        raise RowError(f"{value:g} is negative", column, "times and durations must be >= 0")
    return value


def parse_count(text: str, column: str) -> int:
    """A non-negative whole number (GPUs, nodes); '2.0' is accepted, '2.5' is not."""
    try:
        value = int(text)
    except ValueError:
        value_f = parse_float(text, column)
        if value_f != int(value_f):
            raise RowError(f"'{shown(text)}' is not a whole number", column) from None
        value = int(value_f)
    if value < 0:
        raise RowError(f"{value} is negative", column)
    return value


def parse_datetime(text: str, column: str) -> float:
    """Seconds since the epoch for 'YYYY-MM-DD HH:MM:SS' (no timezone: taken as given)."""
    try:
        stamp = datetime.fromisoformat(text.strip())
    except ValueError:
        raise RowError(
            f"'{shown(text)}' is not a date-time", column, "expected YYYY-MM-DD HH:MM:SS"
        ) from None
    return stamp.timestamp() if stamp.tzinfo else _naive_seconds(stamp)


_EPOCH = datetime(1970, 1, 1)


def _naive_seconds(stamp: datetime) -> float:
    # Differences are all that matter; a fixed epoch keeps the host's timezone out of it.
    return (stamp - _EPOCH).total_seconds()


# ---------------------------------------------------------------- collecting jobs


@dataclass
class Builder:
    """Collects jobs of one file and decides, row by row, error or skip."""

    display: str
    format: str
    skip_bad: bool
    jobs: list[TraceJob] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    reasons: list[str] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    earliest: float = math.inf  # earliest submit seen, dropped rows included

    def saw(self, submit: float) -> float:
        """Note a parsed submit time, so rebasing counts from the file's first submit."""
        if submit < self.earliest:
            self.earliest = submit
        return submit

    def bad(self, err: RowError, line: int | None, *, file: str | None = None) -> None:
        """Raise for a bad row, or count it when the user asked to skip bad rows."""
        error = TraceError(
            err.message, file=file or self.display, line=line, column=err.column, hint=err.hint
        )
        if not self.skip_bad:
            raise error
        self.skipped += 1
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append(error.format())

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def add(self, job: TraceJob, line: int | None) -> None:
        if job.job_id in self.lines:
            first = self.lines[job.job_id]
            self.bad(RowError(f"duplicate job id '{job.job_id}' (first on line {first})", "job_id"), line)
            return
        self.jobs.append(job)
        if line is not None:
            self.lines[job.job_id] = line

    def finish(self, *, rebase: bool = False) -> Trace:
        """Sorted trace; ``rebase`` counts absolute timestamps from the earliest submit."""
        jobs = self.jobs
        if rebase and jobs:
            origin = min(self.earliest, min(j.submit_time for j in jobs))
            jobs = [_shift(j, origin) for j in jobs]
        jobs.sort(key=lambda j: (j.submit_time, j.job_id))
        return Trace(
            jobs=tuple(jobs),
            source=self.display,
            format=self.format,
            skipped=self.skipped,
            skip_reasons=tuple(self.reasons),
            lines=self.lines,
            dropped=dict(self.dropped),
        )


def _shift(job: TraceJob, origin: float) -> TraceJob:
    return replace(job, submit_time=job.submit_time - origin)


# ---------------------------------------------------------------- CSV tables


@dataclass(frozen=True)
class Row:
    """One CSV record with header-aware, error-raising access."""

    values: Sequence[str]
    index: dict[str, int]
    line: int

    def get(self, column: str) -> str:
        i = self.index[column]
        if i >= len(self.values):
            raise RowError(f"row has {len(self.values)} fields, no value for this column", column)
        return self.values[i].strip()

    def opt(self, column: str) -> str:
        i = self.index.get(column)
        if i is None or i >= len(self.values):
            return ""
        return self.values[i].strip()


def csv_rows(
    text: str,
    display: str,
    required: Sequence[str],
    *,
    header: Sequence[str] | None = None,
    delimiter: str = ",",
) -> Iterator[Row]:
    """Rows of a CSV; the header is read from the file unless ``header`` is given.

    A missing required column is a file-level error (no row could be read), so it
    raises even when bad rows are skipped; so does a runaway quote, whose
    swallowed rows could not be counted.
    """
    records = Records(text, delimiter=delimiter, width=len(header) if header is not None else None)
    try:
        if header is None:
            header = records.header()
            if header is None:
                raise TraceError("file is empty, expected a header row", file=display, line=1)
        index = {name: i for i, name in enumerate(header)}
        for column in required:
            if column not in index:
                raise TraceError(
                    "required column is missing from the header",
                    file=display,
                    line=1,
                    column=column,
                    hint=f"header has: {', '.join(header)}",
                )
        for values in records:
            if not values or (len(values) == 1 and not values[0].strip()):
                continue
            yield Row(values, index, records.line)
    except RunawayQuote as exc:
        raise TraceError(str(exc), file=display, line=exc.first, hint=exc.hint) from None
    except csv.Error as exc:
        raise TraceError(f"malformed CSV: {exc}", file=display, line=records.line) from None
