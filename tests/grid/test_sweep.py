"""A sweep: rows equal on any number of processes, re-runs that run only unfinished cells."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurmrl.executors.local import LocalExecutor
from slurmrl.grid import store
from slurmrl.grid.spec import Grid, option_axes
from slurmrl.grid.store import ERROR_FILE, ROW_FILE, cell_folder
from slurmrl.grid.sweep import pending_cells, run_sweep
from slurmrl.sim.experiment import SimSettings, prepare, run_policy

GRID = Grid(
    policies=(("fifo", None), ("sjf-oracle", None)),
    clusters=("2x4x8:v100",),
    seeds=(0, 1),
    options=option_axes({"limit": [80], "speed_model": ["none", "placement"]}),
)
GRID_NONE = SimSettings(speed_model="none")


def test_rows_are_the_same_on_one_process_and_on_a_pool(tmp_path: Path) -> None:
    serial = run_sweep(GRID, LocalExecutor(1), tmp_path / "serial")
    pooled = run_sweep(GRID, LocalExecutor(2), tmp_path / "pooled")
    assert len(serial.rows) == 8 and not serial.failed
    assert serial.rows == pooled.rows
    assert (tmp_path / "pooled" / "results.csv").read_text() == (
        tmp_path / "serial" / "results.csv"
    ).read_text()
    # Each row is what a run of its own gives.
    row = next(
        r
        for r in serial.rows
        if r["policy"] == "sjf-oracle" and r["seed"] == 1 and r["speed_model"] == "none"
    )
    direct = run_policy(prepare(cluster="2x4x8:v100", seed=1, limit=80), "sjf-oracle", settings=GRID_NONE)
    assert row["fingerprint"] == store.records_fingerprint(direct.records)
    assert row["avg_jct"] == direct.summary["avg_jct"]
    assert "wall_seconds" not in row
    table = json.loads((tmp_path / "serial" / "results.json").read_text())
    assert table["meta"]["finished"] == 8 and len(table["rows"]) == 8


def test_a_rerun_runs_only_failed_and_unfinished_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cells = GRID.cells()
    broken = cells[2]
    real = store.simulate_cell

    def flaky(cell):  # one cell fails the first time (in this process: jobs=1)
        if cell == broken:
            raise RuntimeError("node lost")
        return real(cell)

    monkeypatch.setattr(store, "simulate_cell", flaky)
    first = run_sweep(GRID, LocalExecutor(1), tmp_path)
    assert len(first.rows) == 7 and [c for c, _ in first.failed] == [broken]
    assert "node lost" in first.failed[0][1]
    assert (cell_folder(tmp_path, broken) / ERROR_FILE).is_file()
    (cell_folder(tmp_path, cells[5]) / ROW_FILE).unlink()  # a cell stopped half-way

    monkeypatch.setattr(store, "simulate_cell", real)
    _, todo = pending_cells(GRID, tmp_path)
    assert todo == [broken, cells[5]]
    second = run_sweep(GRID, LocalExecutor(1), tmp_path)
    assert second.ran == 2 and len(second.rows) == 8 and not second.failed
    assert not (cell_folder(tmp_path, broken) / ERROR_FILE).exists()


def test_ctrl_c_keeps_finished_cells_in_the_tables(tmp_path: Path) -> None:
    def interrupt_after_two(done: int, seen: list[int] = []) -> None:  # noqa: B006 - a counter
        seen.append(done)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(GRID, LocalExecutor(1), tmp_path, progress=interrupt_after_two)
    table = (tmp_path / "results.csv").read_text().splitlines()
    assert len(table) == 1 + 2
    _, todo = pending_cells(GRID, tmp_path)
    assert len(todo) == len(GRID.cells()) - 2


def test_cells_reach_the_executor_costliest_first(tmp_path: Path) -> None:
    class Recording(LocalExecutor):
        def run(self, task, items):  # type: ignore[no-untyped-def]
            order.extend(cell.policy for cell in items)
            return super().run(task, items)

    order: list[str] = []
    result = run_sweep(GRID, Recording(1), tmp_path)
    # sjf-oracle costs more per job than fifo (Entry.cost): its four cells go first.
    assert order == ["sjf-oracle"] * 4 + ["fifo"] * 4
    assert len(result.rows) == 8 and [r["policy"] for r in result.rows] == [c.policy for c in GRID.cells()]
