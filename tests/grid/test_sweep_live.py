"""A sweep as a job array on the local Slurm test cluster equals the same sweep on local processes."""

from __future__ import annotations

from pathlib import Path

import live_slurm
import pytest

from slurmrl.executors.local import LocalExecutor
from slurmrl.executors.slurm import SlurmExecutor, SlurmOptions
from slurmrl.grid.spec import Grid, option_axes
from slurmrl.grid.sweep import run_sweep

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

GRID = Grid(
    policies=(("fifo", None), ("sjf-oracle", "topology")),
    traces=("embedded:philly-sample",),
    clusters=("2x4x8:v100",),
    seeds=(0, 1),
    options=option_axes({"limit": [120], "speed_model": ["none"]}),
)


def test_job_array_cells_equal_local_cells(tmp_path: Path) -> None:
    pytest.importorskip("submitit")
    executor = SlurmExecutor(
        SlurmOptions(folder=tmp_path / "slurm", partition="debug", time_min=5, array_parallelism=4)
    )
    try:
        remote = run_sweep(GRID, executor, tmp_path / "slurm-run")
    except BaseException:
        if executor.array_id:
            live_slurm.slurm("scancel", executor.array_id)
        raise
    local = run_sweep(GRID, LocalExecutor(2), tmp_path / "local-run")
    assert len(remote.rows) == 4 and not remote.failed
    assert remote.rows == local.rows
    assert (tmp_path / "slurm-run" / "results.csv").read_text() == (
        tmp_path / "local-run" / "results.csv"
    ).read_text()

    # sacct lists one array: a task per cell, each completed.
    array = executor.array_id
    assert live_slurm.array_states(array, tasks=4) == {f"{array}_{i}": "COMPLETED" for i in range(4)}


def test_ctrl_c_cancels_the_array_and_keeps_finished_cells(tmp_path: Path) -> None:
    import os
    import re
    import signal
    import subprocess
    import sys

    pytest.importorskip("submitit")
    out = tmp_path / "interrupted"
    args = ["--trace", "embedded:philly-sample", "--cluster", "2x4x8:v100", "--limit", "300"]
    args += [
        "--policies",
        "fifo",
        "--seeds",
        "6",
        "--executor",
        "slurm",
        "--partition",
        "debug",
        "--time",
        "5",
    ]
    args += ["--array-parallelism", "1", "--no-progress", "--out", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-c", "from slurmrl.cli import run; run()", "sweep", *args],
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    array = ""
    try:
        line = proc.stderr.readline()  # type: ignore[union-attr]
        while line and "submitted job array" not in line:
            line = proc.stderr.readline()  # type: ignore[union-attr]
        array = re.search(r"job array (\d+)", line).group(1)  # type: ignore[union-attr]
        live_slurm.wait_for(lambda: list(out.glob("cells/*/row.json")), 120, "a first finished cell")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    finally:
        proc.kill()
        if array:
            live_slurm.slurm("scancel", array)
    kept = sorted(out.glob("cells/*/row.json"))
    assert 1 <= len(kept) < 6
    assert "interrupted: finished cells are kept" in proc.stderr.read()  # type: ignore[union-attr]

    states = live_slurm.array_states(array)
    assert any(s.startswith("CANCELLED") for s in states.values()), states
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + len(kept)
