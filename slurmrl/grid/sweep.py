"""Run a grid's missing cells on an executor and gather every finished cell's row.

A re-run of the same sweep into the same folder skips finished cells and
runs the rest: cells never run, cells whose task raised, and cells stopped
half-way. The tables are written whether the run ends, fails or is
interrupted, so they always list what is finished.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import slurmrl
from slurmrl.executors import Executor, longest_first
from slurmrl.grid.cells import Cell
from slurmrl.grid.spec import Grid
from slurmrl.grid.store import SweepCell, complete, failure, finished_row, write_tables


@dataclass(frozen=True)
class SweepResult:
    """What a sweep left: every finished cell's row (grid order), the cells that failed and why."""

    out: Path
    rows: tuple[dict[str, Any], ...]
    failed: tuple[tuple[Cell, str], ...] = ()
    ran: int = 0  # cells run this time (the rest were finished before)
    total: int = 0
    table: Path | None = None


def pending_cells(grid: Grid, out: Path) -> tuple[list[Cell], list[Cell]]:
    """(every cell, the cells without a finished row)."""
    cells = grid.cells()
    return cells, [c for c in cells if finished_row(out, c) is None]


def in_submission_order(cells: list[Cell]) -> list[Cell]:
    """``cells`` as an executor gets them: costliest first (``Cell.cost``), grid order among equals."""
    return [cells[i] for i in longest_first([c.cost for c in cells])]


def run_sweep(
    grid: Grid,
    executor: Executor,
    out: Path,
    progress: Callable[[int], None] | None = None,
) -> SweepResult:
    """Run the grid's unfinished cells on ``executor``; rows of every finished cell, also in DIR/results.*.

    Cells go to the executor in :func:`in_submission_order`, so a pool
    does not end on one long replay. ``progress`` is called with 1 as each
    cell ends. A KeyboardInterrupt is re-raised after the tables are written
    (the executor has cancelled what it started).
    """
    out = out.resolve()
    cells, todo = pending_cells(grid, out)
    todo = in_submission_order(todo)
    errors: dict[str, str] = {}
    try:
        for outcome in executor.run(SweepCell(str(out)), todo):
            if not outcome.ok:
                errors[todo[outcome.index].id] = outcome.error or "failed"
            if progress is not None:
                progress(1)
    finally:  # also on Ctrl-C: the tables list every cell finished so far
        result = _gather(grid, cells, out, errors, ran=len(todo))
    return result


def _gather(grid: Grid, cells: list[Cell], out: Path, errors: dict[str, str], *, ran: int) -> SweepResult:
    rows = []
    failed = []
    for cell in cells:
        row = finished_row(out, cell)
        if row is not None:
            rows.append(row)
        elif cell.id in errors or failure(out, cell) is not None:
            failed.append((cell, errors.get(cell.id) or failure(out, cell) or "failed"))
    rows = complete(rows)
    meta = {
        "grid": grid.describe(),
        "cells": len(cells),
        "finished": len(rows),
        "version": slurmrl.__version__,
    }
    table = write_tables(out, rows, meta)
    return SweepResult(out, tuple(rows), tuple(failed), ran, len(cells), table)
