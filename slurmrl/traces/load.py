"""One entry point for every trace format.

Users point at a file and expect it to load; the format is guessed from the
file name and its first line, and a guess that fails says which formats exist
so the user can name one.
"""

from __future__ import annotations

import difflib
import gzip
import importlib
import zlib
from pathlib import Path

from slurmrl.errors import TraceError
from slurmrl.traces.rows import read_bytes
from slurmrl.traces.schema import Trace

FORMATS: tuple[str, ...] = (
    "normalized",
    "philly",
    "helios",
    "acme",
    "pai",
    "openb",
    "tiresias",
    "chronus",
    "gavel",
    "pollux",
    "swf",
)
EMBEDDED_PREFIX = "embedded:"
_PEEK = 65536


def load_trace(
    path: str | Path,
    *,
    format: str = "auto",
    skip_bad: bool = False,
    procs_per_gpu: int = 1,
) -> Trace:
    """Load a trace file (plain or gzip) or ``embedded:<name>``; jobs sorted by (submit, id).

    ``procs_per_gpu`` only applies to SWF, whose logs count processors, not GPUs.
    """
    text_path = str(path)
    if text_path.startswith(EMBEDDED_PREFIX):
        from slurmrl.traces.embedded import embedded_trace

        return embedded_trace(text_path[len(EMBEDDED_PREFIX) :])
    file = Path(path)
    display = text_path
    if format == "auto":
        format = detect(file, display)
    if format not in FORMATS:
        close = difflib.get_close_matches(format, FORMATS, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"known formats: auto, {', '.join(FORMATS)}"
        raise TraceError(f"unknown trace format '{format}'", file=display, hint=hint)
    # Each format's parser module loads only when a file of that format is read.
    parser = importlib.import_module(f"slurmrl.traces.{format}")
    if format == "swf":
        return parser.load(file, display, skip_bad, procs_per_gpu=procs_per_gpu)
    return parser.load(file, display, skip_bad)


def _peek(path: Path, display: str) -> str:
    """The first few KB as text, without reading a whole large file."""
    try:
        with path.open("rb") as raw:
            head = raw.read(2)
            raw.seek(0)
            data = gzip.GzipFile(fileobj=raw).read(_PEEK) if head == b"\x1f\x8b" else raw.read(_PEEK)
    except (EOFError, gzip.BadGzipFile, zlib.error):
        data = read_bytes(path, display)  # raises the clear truncated/corrupt error
    except OSError:
        data = read_bytes(path, display)  # raises not-found / unreadable errors
    return data.decode("utf-8-sig", errors="replace")


def detect(path: Path, display: str) -> str:
    """Name of the format of ``path``, from its name and first line."""
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".swf"):
        return "swf"
    if name.endswith(".json"):
        return "philly"
    if name.endswith(".trace"):
        return "gavel"
    if name.startswith("pai_job_table"):
        return "pai"
    text = _peek(path, display)
    first = next((line for line in text.splitlines() if line.strip()), "")
    stripped = first.strip()
    if stripped.startswith(";"):
        return "swf"
    if stripped.startswith(("[", "{")):
        return "philly"
    if "\t" in first:
        return "gavel"
    columns = {c.strip().strip('"') for c in first.split(",")}
    if {"job_id", "submit_time", "duration_s", "num_gpus"} <= columns:
        return "normalized"
    if {"name", "creation_time", "scheduled_time"} <= columns:
        return "openb"
    if {"name", "time", "application", "num_replicas"} <= columns:
        return "pollux"
    if {"job_id", "num_gpu", "submit_time", "duration"} <= columns:
        return "chronus" if "expect_time_list" in columns else "tiresias"
    from slurmrl.traces import acme

    if acme.MARKERS <= columns:
        return "acme"
    if {"job_id", "gpu_num", "submit_time"} <= columns:
        return "helios"
    if "job_name" in columns and "inst_id" in columns:
        return "pai"
    from slurmrl.traces import swf

    fields = stripped.split()
    if len(fields) == len(swf.FIELDS) and all(_is_number(f) for f in fields):
        return "swf"
    raise TraceError(
        "cannot tell the trace format from the file name or first line",
        file=display,
        line=1,
        hint=f"pass the format explicitly, one of: {', '.join(FORMATS)}",
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
