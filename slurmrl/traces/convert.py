"""Rebuild the shared collection's converted files from their upstream sources, byte for byte.

The shared traces folder keeps some sources converted: the normalized
4-week Philly window out of the Pollux job list, the openb pod list in the
normalized schema, and files whose header was renamed. Each function here
redoes one such conversion, so ``slurmrl traces fetch`` can build the file
from its upstream bytes (checked first against ``source_sha256``) and then
check the result against the very checksum the collection's copy has.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from slurmrl.errors import SlurmrlError

NORMALIZED = (
    "job_id",
    "user",
    "vc",
    "submit_time",
    "duration_s",
    "num_gpus",
    "num_nodes",
    "status",
    "job_type",
)
PHILLY_WINDOW = (datetime(2017, 10, 2), datetime(2017, 10, 30))  # 4 weeks, Monday to Monday
PHILLY_LATE = (datetime(2017, 10, 30), datetime(2017, 11, 27))  # the 4 weeks after it
# Six weeks from two before the list's end: weeks 7-8 again (a warm-up) and
# weeks 9-10, then the thin last fortnight (the list's last job is submitted 2017-12-22).
PHILLY_TAIL = (datetime(2017, 11, 13), datetime(2017, 12, 25))
OPENB_STATUS = {"Succeeded": "COMPLETED", "Failed": "FAILED", "Running": "RUNNING", "Pending": "PENDING"}


def _rows(source: Path) -> list[dict[str, str]]:
    with source.open(newline="", encoding="utf-8") as fh:
        return [row for row in csv.DictReader(fh) if any(row.values())]


def _write(out: Path, header: tuple[str, ...], rows: list[list[object]]) -> None:
    out.write_bytes(_csv_bytes(header, rows))


def _csv_bytes(header: tuple[str, ...], rows: list[list[object]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode()


def philly_window(source: Path, out: Path) -> None:
    """Pollux's ``philly.csv`` -> the normalized jobs submitted in the 4-week window.

    ``job_id`` is ``philly-p`` and the 0-based data-row index in the source;
    ``submit_time`` counts seconds from the window start; rows are sorted by
    (submit_time, job_id); the source's own strings for run time and GPU
    time are kept as written.
    """
    picked = _philly_picked(source, *PHILLY_WINDOW, origin=PHILLY_WINDOW[0])
    rows = [
        [*_philly_normalized(submit, job_id, r), r["timestamp"], r["gpu_time"]]
        for submit, job_id, r in picked
    ]
    _write(out, (*NORMALIZED, "submit_datetime", "gpu_time_s"), rows)


def philly_late(source: Path, out: Path) -> None:
    """Pollux's ``philly.csv`` -> the four weeks after the shared window (``philly-late``).

    The same rows as :func:`philly_window` would give for 2017-10-30 to
    2017-11-27, on the same clock (seconds from 2017-10-02, so these are
    days 28-56 of it) and with the same ``job_id`` numbering, in the nine
    normalized columns only: the file the package embeds as
    ``philly-late`` (``slurmrl/traces/data/README.md``), which is why it is
    no fetch conversion.
    """
    _philly_embedded(source, out, PHILLY_LATE)


def philly_tail(source: Path, out: Path) -> None:
    """Pollux's ``philly.csv`` -> days 42 to 84 of the same clock (``philly-tail``), cut as :func:`philly_late`.

    Its first fortnight repeats the last of ``philly-late`` (same ids), so a
    scenario on the fortnight after can be warmed up on it from one file.
    """
    _philly_embedded(source, out, PHILLY_TAIL)


def _philly_embedded(source: Path, out: Path, window: tuple[datetime, datetime]) -> None:
    """The normalized rows submitted in ``window`` on the shared window's clock, gzipped reproducibly.

    Level-9 gzip with a zero header time and no name, so the bytes repeat.
    """
    picked = _philly_picked(source, *window, origin=PHILLY_WINDOW[0])
    rows = [_philly_normalized(submit, job_id, r) for submit, job_id, r in picked]
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=9, mtime=0, filename="") as gz:
        gz.write(_csv_bytes(NORMALIZED, rows))
    out.write_bytes(packed.getvalue())


def _philly_picked(
    source: Path, start: datetime, end: datetime, *, origin: datetime
) -> list[tuple[int, str, dict[str, str]]]:
    """(submit seconds from ``origin``, job id, source row) of the jobs submitted in [start, end), sorted."""
    picked = []
    for index, row in enumerate(_rows(source)):
        submitted = datetime.fromisoformat(row["timestamp"])
        if start <= submitted < end:
            picked.append((int((submitted - origin).total_seconds()), f"philly-p{index:06d}", row))
    picked.sort(key=lambda item: (item[0], item[1]))
    return picked


def _philly_normalized(submit: int, job_id: str, row: dict[str, str]) -> list[object]:
    return [job_id, "", row["cluster"], submit, row["duration"], row["num_gpus"], "", "", ""]


def openb_pods(source: Path, out: Path) -> None:
    """The openb pod list -> the normalized schema, one node per pod, source order.

    A pod never scheduled has no start, run time or wait; a pod deleted at
    the last deletion time of the trace is marked censored.
    """
    pods = _rows(source)
    trace_end = max(int(p["deletion_time"]) for p in pods)
    rows = []
    for p in pods:
        submit, deleted, scheduled = int(p["creation_time"]), int(p["deletion_time"]), p["scheduled_time"]
        start: object = ""
        run: object = ""
        wait: object = ""
        if scheduled:
            at = int(scheduled)
            start, run, wait = float(at), float(deleted - at), float(at - submit)
        rows.append(
            [
                p["name"], "", "", submit, run, p["num_gpu"], 1, OPENB_STATUS.get(p["pod_phase"], ""), "",
                start, deleted, wait, deleted == trace_end,
                p["gpu_milli"], p["cpu_milli"], p["memory_mib"], p["gpu_spec"], p["qos"], p["pod_phase"],
            ]
        )  # fmt: skip
    extra = ("start_time", "end_time", "wait_s", "censored_at_trace_end", "gpu_milli", "cpu_milli")
    _write(out, (*NORMALIZED, *extra, "memory_mib", "gpu_spec", "qos", "pod_phase_raw"), rows)


def _new_header(header: str) -> Callable[[Path, Path], None]:
    """A conversion that only renames the columns (the first line)."""

    def convert(source: Path, out: Path) -> None:
        body = source.read_bytes().split(b"\n", 1)
        out.write_bytes(header.encode() + b"\n" + (body[1] if len(body) > 1 else b""))

    convert.__doc__ = f"The source with its header line replaced by '{header}'."
    return convert


CONVERTERS: dict[str, Callable[[Path, Path], None]] = {
    "philly-window": philly_window,
    "openb-pods": openb_pods,
    "philly-vc-nodes": _new_header("vc,num_nodes"),
    "openb-nodes": _new_header("node_id,cpu_milli,memory_mib,num_gpus,gpu_model"),
}


def convert(name: str, source: Path, out: Path) -> None:
    if name not in CONVERTERS:
        raise SlurmrlError(f"unknown conversion '{name}'; known: {', '.join(CONVERTERS)}")
    try:
        CONVERTERS[name](source, out)
    except (KeyError, ValueError) as exc:
        raise SlurmrlError(f"cannot convert with '{name}' ({exc!r})", file=str(source)) from None
