"""Training seeds as a job array on the local Slurm test cluster equal seeds trained here."""

from __future__ import annotations

from pathlib import Path

import live_slurm
import pytest
from click.testing import CliRunner

from slurmrl.cli import main
from tests.rl.test_cli import HARMONY

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]


def test_train_seeds_as_array_tasks(tmp_path: Path) -> None:
    pytest.importorskip("submitit")
    runner = CliRunner()
    remote = runner.invoke(
        main,
        [
            *HARMONY,
            "--seeds",
            "2",
            "--executor",
            "slurm",
            "--partition",
            "debug",
            "--time",
            "5",
            "--out",
            str(tmp_path / "slurm"),
        ],
    )
    array = next(
        (line.split()[3] for line in remote.output.splitlines() if "submitted job array" in line), ""
    )
    if remote.exception is not None and array:
        live_slurm.slurm("scancel", array)
    assert remote.exception is None, remote.output
    local = runner.invoke(main, [*HARMONY, "--seeds", "2", "--jobs", "1", "--out", str(tmp_path / "local")])
    assert local.exception is None, local.output
    for seed in ("seed-0", "seed-1"):
        weights = [
            (tmp_path / where / seed / "model.safetensors").read_bytes() for where in ("slurm", "local")
        ]
        assert weights[0] == weights[1]
    assert live_slurm.array_states(array, tasks=2) == {f"{array}_0": "COMPLETED", f"{array}_1": "COMPLETED"}
