"""Result directories and comparison tables.

A run is kept as three plain files so that anyone can open it with a
spreadsheet, pandas or ``jq`` without installing slurmrl:

* ``summary.json`` — the :class:`~slurmrl.sim.metrics.Summary` keys at top
  level plus a ``meta`` object (policy, placement, trace, cluster, seed, load,
  version). Strict JSON: NaN is written as ``null``. Summaries written before
  finished and killed jobs were told apart still read
  (:meth:`~slurmrl.sim.metrics.Summary.from_dict`).
* ``jobs.csv`` — one row per :class:`~slurmrl.sim.records.JobRecord`, every
  field, with a header. Missing times (NaN) are empty cells; booleans are
  ``true``/``false``; floats keep full precision so a round trip is exact.
  Files written before a defaulted field existed (``best_time``) still read:
  the field takes its default (NaN).
* ``timeline.csv`` — the :class:`~slurmrl.sim.records.Sample` rows, evenly
  thinned to at most :data:`MAX_TIMELINE_ROWS` (first and last always kept) so
  a month-long trace stays small enough for the report site.

Terminal tables (:func:`format_table`) pick one unit per column, named in the
header, so values line up and compare at a glance:

* durations (JCT, waits, makespan, bounds, ``*_s``): seconds with one decimal
  below 100 s, minutes with one decimal below 2 h, else hours with two decimals;
* ratios and fractions (utilisation, locality, fairness, ``*_over_bound``):
  three decimals; slowdowns, queue lengths, finish-time fairness ``rho`` and
  GPU-hours: two decimals;
* counts: integers with thousands separators; other floats: four significant
  digits; missing values (NaN, ``None``): ``-``.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from pathlib import Path

import numpy as np

from slurmrl._version import __version__
from slurmrl.errors import SlurmrlError
from slurmrl.sim.metrics import Summary
from slurmrl.sim.records import JobRecord, Sample

SUMMARY_FILE = "summary.json"
JOBS_FILE = "jobs.csv"
TIMELINE_FILE = "timeline.csv"
MAX_TIMELINE_ROWS = 5000

_RESULT_HINT = "a result directory holds summary.json, jobs.csv and timeline.csv written by a simulation run"


@dataclass(frozen=True)
class Results:
    path: Path
    summary: Summary
    meta: Mapping[str, object]
    records: tuple[JobRecord, ...]
    samples: tuple[Sample, ...]


def run_folder(label: str) -> str:
    """A run's folder name under ``runs/``: its ``policy+placement`` label as one path component.

    A checkpoint folder given by its path (``policies/topdrl-philly``,
    ``/home/me/ckpt``) would otherwise nest the run below ``runs/``, where no
    reader looks, or, from an absolute path, put it beside the checkpoint,
    outside the folder the user named. Separators and other odd characters
    become ``-``.
    """
    return re.sub(r"[^A-Za-z0-9_.+=-]+", "-", label).strip("-.") or "run"


def _json_safe(value: object) -> object:
    """Recursively replace non-finite floats with ``None`` and tuples with lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return _json_safe(value.item())
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    return str(value)


def _write_rows(path: Path, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow([_cell(v) for v in row])


def _thin(n: int, limit: int) -> np.ndarray:
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


def write_results(
    out_dir: str | Path,
    *,
    summary: Summary | Mapping[str, object],
    records: Sequence[JobRecord],
    samples: Sequence[Sample],
    meta: Mapping[str, object],
) -> Path:
    """Write the three result files into ``out_dir`` (created if needed); returns it.

    ``meta`` should carry ``policy``, ``placement``, ``trace``, ``cluster``,
    ``seed`` and ``load``; ``version`` is filled in from the package when absent.
    ``summary`` may also be the dict from :meth:`Summary.to_dict`; it is checked
    for every summary key, and extra keys are kept.
    """
    out = Path(out_dir)
    if isinstance(summary, Summary):
        summary_dict: dict[str, object] = summary.to_dict()
    else:
        Summary.from_dict(dict(summary), source="summary passed to write_results")
        summary_dict = {str(k): _json_safe(v) for k, v in summary.items() if k != "meta"}
    try:
        out.mkdir(parents=True, exist_ok=True)
        meta_out = dict(meta)
        meta_out.setdefault("version", __version__)
        payload = {**summary_dict, "meta": _json_safe(meta_out)}
        text = json.dumps(payload, indent=2, allow_nan=False)
        (out / SUMMARY_FILE).write_text(text + "\n", encoding="utf-8")

        job_fields = [f.name for f in fields(JobRecord)]
        _write_rows(out / JOBS_FILE, job_fields, [[getattr(r, k) for k in job_fields] for r in records])

        sample_fields = [f.name for f in fields(Sample)]
        keep = _thin(len(samples), MAX_TIMELINE_ROWS)
        _write_rows(
            out / TIMELINE_FILE,
            sample_fields,
            [[getattr(samples[i], k) for k in sample_fields] for i in keep.tolist()],
        )
    except OSError as exc:
        raise SlurmrlError(
            f"cannot write results: {exc.strerror or exc}",
            file=str(exc.filename or out),
            hint="choose an output directory you can write to",
        ) from None
    return out


def _parse(raw: str, kind: str) -> object:
    if kind == "str":
        return raw
    if kind == "bool":
        low = raw.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise ValueError
    if kind == "int":
        return int(raw)
    if kind == "float":
        return float(raw) if raw.strip() else float("nan")
    raise ValueError


def _columns(path: Path, header: list[str], cls: type) -> list[tuple[str, str]]:
    """The (name, type) of each header column, checked against ``cls``'s fields.

    Columns must come in field order; a field with a default may be absent
    (files written before it existed), and rows then take its default.
    """
    spec = {f.name: str(f.type) for f in fields(cls)}
    optional = {f.name for f in fields(cls) if f.default is not MISSING}
    missing = [c for c in spec if c not in header and c not in optional]
    extra = [c for c in header if c not in spec]
    in_order = [c for c in spec if c in header] == header
    if missing or extra or not in_order:
        detail = []
        if missing:
            detail.append("missing " + ", ".join(missing))
        if extra:
            detail.append("unexpected " + ", ".join(extra))
        if not detail:
            detail.append("columns out of order")
        raise SlurmrlError(
            "header does not match this version's columns: " + "; ".join(detail),
            file=str(path),
            line=1,
            hint="re-run the simulation to rewrite the results",
        )
    return [(name, spec[name]) for name in header]


def _read_rows(path: Path, cls: type) -> tuple:
    if not path.is_file():
        raise SlurmrlError("file is missing", file=str(path), hint=_RESULT_HINT)
    out = []
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise SlurmrlError("file is empty, expected a header row", file=str(path), hint=_RESULT_HINT)
            spec = _columns(path, header, cls)
            for line_no, row in enumerate(reader, start=2):
                if not row:
                    continue
                if len(row) != len(spec):
                    raise SlurmrlError(
                        f"expected {len(spec)} fields, found {len(row)}", file=str(path), line=line_no
                    )
                values = {}
                for (name, kind), raw in zip(spec, row, strict=True):
                    try:
                        values[name] = _parse(raw, kind)
                    except ValueError:
                        raise SlurmrlError(
                            f"cannot read {raw!r} as {kind}", file=str(path), line=line_no, column=name
                        ) from None
                out.append(cls(**values))
    except OSError as exc:
        raise SlurmrlError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    except UnicodeDecodeError:
        raise SlurmrlError("file is not UTF-8 text", file=str(path), hint=_RESULT_HINT) from None
    return tuple(out)


def read_results(result_dir: str | Path) -> Results:
    """Load a directory written by :func:`write_results`, checking that its files agree."""
    root = Path(result_dir)
    if not root.is_dir():
        raise SlurmrlError("result directory does not exist", file=str(root), hint=_RESULT_HINT)
    summary_path = root / SUMMARY_FILE
    if not summary_path.is_file():
        raise SlurmrlError("file is missing", file=str(summary_path), hint=_RESULT_HINT)
    try:
        data = json.loads(summary_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SlurmrlError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", file=str(summary_path), line=exc.lineno
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SlurmrlError(f"cannot read file: {exc}", file=str(summary_path)) from None
    if not isinstance(data, dict):
        raise SlurmrlError("expected a JSON object at top level", file=str(summary_path), hint=_RESULT_HINT)
    summary = Summary.from_dict(data, source=str(summary_path))
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise SlurmrlError("key 'meta' should be an object", file=str(summary_path))

    records = _read_rows(root / JOBS_FILE, JobRecord)
    if len(records) != summary.jobs:
        raise SlurmrlError(
            f"{len(records)} job rows, but {SUMMARY_FILE} says {summary.jobs} jobs",
            file=str(root / JOBS_FILE),
            hint="the files come from different runs; re-run the simulation",
        )
    samples = _read_rows(root / TIMELINE_FILE, Sample)
    return Results(path=root, summary=summary, meta=meta, records=records, samples=samples)


# ---------------------------------------------------------------------------
# Comparison tables

_DURATION_NAMES = {"makespan", "makespan_lower_bound", "avg_jct_lower_bound", "wall_seconds", "last_end"}
_RATIO_WORDS = ("fraction", "utilization", "fairness", "over_bound", "share", "jain")
_TWO_DECIMAL_WORDS = ("slowdown", "queue_length", "load", "rho", "gpu_hours")
_COUNT_NAMES = {"jobs", "finished", "killed", "unfinished", "preemptions", "steady_jobs", "gpus"}


def column_kind(name: str) -> str:
    """How a column is formatted: ``duration``, ``ratio``, ``two``, ``count`` or ``auto``."""
    low = name.lower()
    if any(w in low for w in _RATIO_WORDS) or low == "avg_fragmentation":
        return "ratio"
    if any(w in low for w in _TWO_DECIMAL_WORDS):
        return "two"
    if low in _DURATION_NAMES or low.endswith(("_jct", "_wait", "_s", "_seconds")) or low in ("jct", "wait"):
        return "duration"
    if low in _COUNT_NAMES:
        return "count"
    return "auto"


def _number(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        x = float(value)
        return x if math.isfinite(x) else None
    return None


def _duration_unit(values: Sequence[float]) -> tuple[str, float, int]:
    """(unit label, divisor, decimals) chosen from the column's largest magnitude."""
    top = max((abs(v) for v in values), default=0.0)
    if top < 100:
        return "s", 1.0, 1
    if top < 7200:
        return "min", 60.0, 1
    return "h", 3600.0, 2


@dataclass(frozen=True)
class NumberFormat:
    """How one numeric column is shown: its header (with unit) and how a value becomes text."""

    header: str
    divisor: float
    spec: str  # a format spec applied to value / divisor

    def __call__(self, value: float | None) -> str:
        return "-" if value is None else format(value / self.divisor, self.spec)


def number_format(name: str, present: Sequence[float], *, integers: bool = False) -> NumberFormat:
    """The format of column ``name`` given its finite values (units in the module docstring).

    ``integers`` says the values are counts even where the name does not.
    """
    kind = column_kind(name)
    if kind == "duration":
        unit, div, dec = _duration_unit(present)
        return NumberFormat(f"{name} [{unit}]", div, f",.{dec}f")
    if kind == "ratio":
        return NumberFormat(name, 1.0, ".3f")
    if kind == "two":
        return NumberFormat(name, 1.0, ",.2f")
    if kind == "count" or integers:
        return NumberFormat(name, 1.0, ",.0f")
    return NumberFormat(name, 1.0, ".4g")


def _format_column(name: str, values: Sequence[object]) -> tuple[str, list[str], bool]:
    """Header text, cell texts, and whether the column is numeric (right-aligned)."""
    nums = [_number(v) for v in values]
    present = [x for x in nums if x is not None]
    missing = [v is None or (isinstance(v, float) and math.isnan(v)) for v in values]
    numeric = all(m or x is not None for m, x in zip(missing, nums, strict=True)) and bool(present)
    if not numeric:
        return name, ["-" if m else str(v) for v, m in zip(values, missing, strict=True)], False
    integers = all(isinstance(v, (int, np.integer)) for v in values if v is not None)
    fmt = number_format(name, present, integers=integers)
    if fmt.spec == ",.0f":
        return fmt.header, [f"{round(x):,d}" if x is not None else "-" for x in nums], True
    return fmt.header, [fmt(x) for x in nums], True


def align_table(headers: Sequence[str], columns: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    """Header, rule and rows of text cells, each column padded to its widest cell."""
    widths = [max([len(h)] + [len(c) for c in cells]) for h, cells in zip(headers, columns, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)]
        return "  ".join(parts).rstrip()

    rows = len(columns[0]) if columns else 0
    out = [line(headers), "  ".join("-" * w for w in widths)]
    for i in range(rows):
        out.append(line([cells[i] for cells in columns]))
    return "\n".join(out)


def format_table(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    """An aligned plain-text table: header, rule, one line per row (units in the module docstring).

    A column missing from a row shows ``-``; text columns are left-aligned,
    numeric ones right-aligned.
    """
    formatted = [_format_column(name, [row.get(name) for row in rows]) for name in columns]
    return align_table(
        [h for h, _, _ in formatted], [c for _, c, _ in formatted], [r for _, _, r in formatted]
    )


def _columns_of(rows: Sequence[Mapping[str, object]], columns: Sequence[str] | None) -> list[str]:
    if columns is not None:
        return list(columns)
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def write_table_csv(
    path: str | Path, rows: Sequence[Mapping[str, object]], columns: Sequence[str] | None = None
) -> Path:
    """Raw values (seconds, full precision) for spreadsheets; missing values are empty cells.

    ``columns`` defaults to every key of every row, in first-seen order.
    """
    target = Path(path)
    columns = _columns_of(rows, columns)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_rows(target, list(columns), [[_raw_cell(row.get(c)) for c in columns] for row in rows])
    except OSError as exc:
        raise SlurmrlError(f"cannot write table: {exc.strerror or exc}", file=str(target)) from None
    return target


def write_table_json(
    path: str | Path,
    rows: Sequence[Mapping[str, object]],
    columns: Sequence[str] | None = None,
    *,
    meta: Mapping[str, object] | None = None,
) -> Path:
    """Strict JSON ``{"meta": {...}, "rows": [{...}, ...]}``; NaN becomes ``null``.

    ``columns`` defaults to every key of every row, in first-seen order;
    ``meta`` describes what was compared (workload, cluster) and defaults to ``{}``.
    """
    target = Path(path)
    columns = _columns_of(rows, columns)
    payload = {
        "meta": _json_safe(dict(meta or {})),
        "rows": [_json_safe({c: row.get(c) for c in columns}) for row in rows],
    }
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise SlurmrlError(f"cannot write table: {exc.strerror or exc}", file=str(target)) from None
    return target


def _raw_cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, np.generic):
        return value.item()
    return value
