"""A sweep's folder: one result folder per cell, and the tables of every finished cell.

``DIR/cells/<cell id>/`` holds what ``simulate --out`` writes
(summary.json, jobs.csv, timeline.csv) plus ``cell.json`` (what the cell
is) and, last, ``row.json`` (its row of the results table). A cell is
finished when ``row.json`` exists: it is written by rename, so a task killed
half-way (Ctrl-C, a time limit, a dead node) leaves no row and the next run
of the sweep runs it again. A task that raised leaves ``error.txt``.

``DIR/results.csv`` and ``results.json`` gather the rows of the grid's
finished cells; every cell writes its own folder, so the tables are rebuilt
from the folders (by whichever process ran the sweep), never appended to by
the tasks.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurmrl.grid.cells import Cell, simulate_cell, summary_row
from slurmrl.sim.metrics import Summary

CELLS = "cells"
CELL_FILE = "cell.json"
ROW_FILE = "row.json"
ERROR_FILE = "error.txt"
RESULTS = "results"
# What identifies a row, before its options and the summary.
ID_COLUMNS = ("id", "workload", "cluster", "policy", "placement", "seed")
# The summary's figures a row carries: all but the wall clock, which differs run to run and
# machine to machine; it stays in the cell's summary.json.
SUMMARY_COLUMNS = tuple(f for f in Summary.__dataclass_fields__ if f != "wall_seconds")


def records_fingerprint(records: Sequence[object]) -> str:
    """A short hash of every job record's every field: equal for runs that scheduled every job the same."""
    import hashlib

    digest = hashlib.blake2b(digest_size=8)
    for record in records:
        digest.update(repr(record).encode())
    return digest.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@dataclass(frozen=True)
class SweepCell:
    """The task one process or array task runs: replay a cell into its folder under ``root``; its row."""

    root: str

    def __call__(self, cell: Cell) -> dict[str, Any]:
        from slurmrl.sim.experiment import save_run

        folder = cell_folder(Path(self.root), cell)
        folder.mkdir(parents=True, exist_ok=True)
        for stale in (ROW_FILE, ERROR_FILE):
            (folder / stale).unlink(missing_ok=True)
        _write_atomic(folder / CELL_FILE, json.dumps(cell.key(), indent=2) + "\n")
        try:
            result = simulate_cell(cell)
            save_run(folder, result)
            row = cell_row(cell, result)
        except Exception:
            _write_atomic(folder / ERROR_FILE, traceback.format_exc())
            raise
        _write_atomic(folder / ROW_FILE, json.dumps(row, indent=2, allow_nan=False) + "\n")
        return row


def cell_row(cell: Cell, result: Any) -> dict[str, Any]:
    """The results table's row of a finished cell: who it is, its options, its summary, its fingerprint."""
    summary = summary_row(cell.policy, result)
    row: dict[str, Any] = {
        "id": cell.id,
        "workload": cell.workload_name,
        "cluster": result.meta["cluster"],
        "policy": cell.policy,
        "placement": summary["placement"],
        "seed": cell.seed,
    }
    row.update({key: list(v) if isinstance(v, tuple) else v for key, v in cell.options})
    row["deployable"] = summary["deployable"]
    row.update({key: summary[key] for key in SUMMARY_COLUMNS})
    row["fingerprint"] = records_fingerprint(result.records)
    return row


def cell_folder(root: Path, cell: Cell) -> Path:
    return root / CELLS / cell.id


def finished_row(root: Path, cell: Cell) -> dict[str, Any] | None:
    """The cell's row when it finished, else None (never run, failed, or stopped half-way)."""
    path = cell_folder(root, cell) / ROW_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None  # unreadable: run the cell again


def failure(root: Path, cell: Cell) -> str | None:
    """The last line of the cell's traceback when its last run raised."""
    path = cell_folder(root, cell) / ERROR_FILE
    if not path.is_file():
        return None
    lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "failed"


def columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Identity columns, then the options any row has (sorted), then deployable, the summary and the fingerprint."""
    fixed = set(ID_COLUMNS) | {"deployable", "fingerprint", *SUMMARY_COLUMNS}
    options = sorted({k for row in rows for k in row if k not in fixed})
    return [*ID_COLUMNS, *options, "deployable", *SUMMARY_COLUMNS, "fingerprint"]


def complete(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in column order with every option column: a cell that kept an option's default shows the default."""
    from slurmrl.grid.cells import SETTING_DEFAULTS, WORKLOAD_DEFAULTS

    defaults = {**WORKLOAD_DEFAULTS, **SETTING_DEFAULTS}
    shown = columns(rows)
    return [{k: row[k] if k in row else _plain(defaults.get(k)) for k in shown} for row in rows]


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def write_tables(root: Path, rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> Path:
    """``results.csv`` (raw values for spreadsheets and pandas) and ``results.json`` (with the grid); the CSV's path."""
    from slurmrl.sim.results import write_table_csv, write_table_json

    shown = columns(rows)
    flat = [{k: ";".join(map(str, v)) if isinstance(v, list) else v for k, v in row.items()} for row in rows]
    write_table_json(root / f"{RESULTS}.json", rows, shown, meta=meta)
    return write_table_csv(root / f"{RESULTS}.csv", flat, shown)
