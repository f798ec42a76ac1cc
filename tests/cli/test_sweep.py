"""``slurmrl sweep`` end to end: flags and sweep files, resumed runs, dry runs, clean errors."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from slurmrl.cli import main

SMALL = ["--trace", "embedded:philly-sample", "--cluster", "2x4x8:v100", "--limit", "60", "--no-progress"]


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["sweep", *args])


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open() as fh:
        return list(csv.DictReader(fh))


def test_flags_make_the_grid_and_a_rerun_runs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = [*SMALL, "--policies", "fifo,sjf-oracle", "--seeds", "2", "--vary", "speed_model=none,placement"]
    result = _invoke(*args, "--out", str(out), "--jobs", "1")
    assert result.exception is None, result.output
    rows = _rows(out)
    assert len(rows) == 2 * 2 * 2
    assert {(r["policy"], r["seed"], r["speed_model"]) for r in rows} == {
        (p, s, m) for p in ("fifo", "sjf-oracle") for s in ("0", "1") for m in ("none", "placement")
    }
    assert all(r["limit"] == "60" and float(r["avg_jct"]) > 0 and r["fingerprint"] for r in rows)
    assert "8 of 8 cells finished (8 run now)" in result.output

    again = _invoke(*args, "--out", str(out))
    assert again.exception is None and "8 of 8 cells finished (0 run now)" in again.output
    assert _rows(out) == rows


def test_sweep_file_with_flags_on_top(tmp_path: Path) -> None:
    config = tmp_path / "sweep.toml"
    config.write_text(
        'traces = ["embedded:philly-sample"]\nclusters = ["2x4x8:v100", "2x2x8:v100"]\n'
        'policies = ["fifo", "tiresias+topology"]\nseeds = [3]\n[options]\nlimit = 50\n'
        "target_load = [0.8, 1.2]\n"
    )
    out = tmp_path / "out"
    result = _invoke(
        "--config", str(config), "--seeds", "1", "--seed", "5", "--out", str(out), "--no-progress"
    )
    assert result.exception is None, result.output
    rows = _rows(out)
    assert len(rows) == 2 * 2 * 2
    assert {r["seed"] for r in rows} == {"5"}  # flags win over the file
    assert {r["placement"] for r in rows if r["policy"] == "tiresias"} == {"topology"}
    assert {r["target_load"] for r in rows} == {"0.8", "1.2"}
    assert len({r["cluster"] for r in rows}) == 2


def test_dry_run_shows_the_array_and_runs_nothing(tmp_path: Path) -> None:
    pytest.importorskip("submitit")
    out = tmp_path / "dry"
    result = _invoke(
        *SMALL, "--policies", "fifo", "--seeds", "3", "--executor", "slurm", "--partition", "debug",
        "--time", "0:10:00", "--array-parallelism", "2", "--dry-run", "--out", str(out),
    )  # fmt: skip
    assert result.exception is None, result.output
    assert "3 array task(s) on partition debug, 2 at a time, 10 min each" in result.output
    assert "#SBATCH --array=0-2%2" in result.output
    assert not (out / "results.csv").exists() and not (out / "cells").exists()


def test_dry_run_lists_the_cells_in_the_order_they_are_submitted(tmp_path: Path) -> None:
    result = _invoke(*SMALL, "--policies", "fifo,sjf-oracle", "--dry-run", "--out", str(tmp_path / "dry"))
    assert result.exception is None, result.output
    listed = [line.strip() for line in result.output.splitlines() if line.startswith("  ")]
    # sjf-oracle costs more per job than fifo (Entry.cost): its cell is array task 0.
    assert len(listed) == 2 and "sjf-oracle" in listed[0] and "_fifo+" in listed[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vary", "limit"], "--vary 'limit': expected OPTION=VALUE"),
        (["--vary", "target_load=-1"], "target_load: must be positive"),
        (["--vary", "start=0,nan"], "start: 'nan' is not a finite number"),
        (["--vary", "speed_model=fast"], "speed_model: "),
        (["--vary", "colour=red"], "unknown option 'colour'"),
        (["--policies", "nosuch"], "nosuch"),
        (["--time", "soon"], "--time 'soon' is not a Slurm time"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = _invoke(*SMALL, *args, "--out", str(tmp_path / "x"))
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "philly-sampel", "--policies", "fifo"], "unknown scenario 'philly-sampel'"),
        (
            ["--trace", "no/such.csv", "--cluster", "2x4x8", "--policies", "fifo"],
            "no/such.csv: trace file not found",
        ),
        (
            ["--trace", "embedded:philly-sample", "--cluster", "2x4x8:nosuchgpu", "--policies", "fifo"],
            "nosuchgpu",
        ),
    ],
)
def test_an_unusable_workload_fails_before_any_cell_runs(
    tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "x"
    result = _invoke(*args, "--no-progress", "--out", str(out))
    assert isinstance(result.exception, SystemExit) and result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[options]\nlimit = 'many'\n", "limit: "),
        ("arrival_scale = [1.0, inf]\n", "arrival_scale: inf is not a finite"),
    ],
)
def test_bad_sweep_file_is_one_line_naming_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    result = _invoke("--config", str(config), "--out", str(tmp_path / "x"))
    assert isinstance(result.exception, SystemExit) and result.exit_code != 0
    assert f"Error: {config}: {message}" in result.output and len(result.output.strip().splitlines()) == 1


def test_report_renders_the_cells(tmp_path: Path) -> None:
    pytest.importorskip("jinja2")
    site = tmp_path / "site"
    args = [*SMALL, "--policies", "fifo,sjf-oracle", "--out", str(tmp_path / "out"), "--report", str(site)]
    result = _invoke(*args)
    assert result.exception is None, result.output
    page = (site / "scenario-embedded-philly-sample.html").read_text()
    assert "fifo" in page and "sjf-oracle" in page
    assert f"report written: open {site / 'index.html'}" in result.output
