"""The load options and the simulator settings on the command line, and where they are recorded."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from slurmrl.cli import main

SMALL = ["--trace", "embedded:philly-sample", "--cluster", "1x2x8:v100", "--limit", "60", "--no-progress"]
# Options and settings off their defaults (the speed model and elastic rule are each test's own).
OFF_DEFAULT = [
    "--locality",
    "relax:600",
    "--enforce-limits",
    "--reveal-models",
    "--reference-gpu",
    "v100",
    "--arrival-scale",
    "1.5",
    "--limits",
    "lognormal",
]


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _ok(*args: str) -> Result:
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    assert result.exception is None
    return result


def _one_line_error(result: Result) -> str:
    """The user error's message: exit status 1 or 2, no traceback, exactly one 'Error:' line."""
    assert result.exit_code in (1, 2), result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    return errors[0]


def _submits(folder: Path) -> list[float]:
    with (folder / "jobs.csv").open() as fh:
        return sorted(float(row["submit_time"]) for row in csv.DictReader(fh))


def test_arrival_scale_divides_every_inter_arrival_gap(tmp_path: Path) -> None:
    _ok("simulate", *SMALL, "--out", str(tmp_path / "one"))
    _ok("simulate", *SMALL, "--arrival-scale", "2", "--out", str(tmp_path / "two"))
    one, two = _submits(tmp_path / "one"), _submits(tmp_path / "two")
    assert len(one) == len(two) == 60
    gaps_one = [b - a for a, b in zip(one, one[1:], strict=False)]
    gaps_two = [b - a for a, b in zip(two, two[1:], strict=False)]
    assert any(g > 0 for g in gaps_one)
    assert gaps_two == pytest.approx([g / 2 for g in gaps_one])
    meta = json.loads((tmp_path / "two" / "summary.json").read_text())["meta"]
    assert meta["arrival_scale"] == 2.0 and "target_load" not in meta


def test_target_load_meets_the_target_and_is_recorded() -> None:
    out = json.loads(_ok("simulate", *SMALL, "--target-load", "0.7", "--json").output)
    assert out["meta"]["target_load"] == 0.7
    assert out["meta"]["offered_load"] == pytest.approx(0.7, rel=1e-6)
    assert out["meta"]["arrival_scale"] < 1  # 60 jobs on 16 GPUs are far above 0.7: arrivals are spread


def test_load_is_gone_with_a_pointer_to_its_replacements() -> None:
    message = _one_line_error(_invoke("simulate", *SMALL, "--load", "2"))
    assert "--load" in message and "--arrival-scale" in message and "--target-load" in message
    message = _one_line_error(_invoke("compare", "--scenario", "philly-sample", "--load", "0.9"))
    assert "--arrival-scale" in message


@pytest.mark.parametrize(
    "args, words",
    [
        (["--locality", "relax:abc"], ["--locality", "relax:abc"]),
        (["--locality", "near"], ["--locality", "near"]),
        (["--speed-model", "exact"], ["--speed-model", "exact"]),
        (["--arrival-scale", "0"], ["--arrival-scale"]),
        (["--target-load", "-1"], ["--target-load"]),
        (["--arrival-scale", "2", "--target-load", "0.5"], ["--arrival-scale", "--target-load"]),
        (["--seeds", "0"], ["--seeds"]),
        # click's float takes nan and inf; --start nan made a window no job is past, forever.
        (["--start", "nan"], ["--start", "not a finite number"]),
        (["--arrival-scale", "inf"], ["--arrival-scale", "not a finite number"]),
        (["--handover-history", "inf"], ["--handover-history", "not a finite number"]),
        (["--vc", "11cb4"], ["no job of VC 11cb4", "did you mean 11cb48?"]),
    ],
)
def test_bad_settings_are_one_line_errors(args: list[str], words: list[str]) -> None:
    message = _one_line_error(_invoke("simulate", *SMALL, *args))
    assert all(w in message for w in words), message


def test_every_setting_is_recorded_in_summary_json_and_json_output(tmp_path: Path) -> None:
    settings = ["--speed-model", "none", *OFF_DEFAULT]
    printed = json.loads(_ok("simulate", *SMALL, *settings, "--json", "--out", str(tmp_path)).output)
    saved = json.loads((tmp_path / "summary.json").read_text())
    for out in (printed, saved):
        assert out["speed_model"] == "none"
        meta = out["meta"]
        assert meta["speed_model"] == "none"
        assert meta["locality"] == "relax:600"
        assert meta["enforce_limits"] is True
        assert meta["reveal_models"] is True
        assert meta["reference_gpu"] == "v100"
        assert meta["arrival_scale"] == 1.5
        assert meta["offered_load"] > 0
        assert meta["time_limits"] == "lognormal"


def test_defaults_are_recorded_too() -> None:
    meta = json.loads(_ok("simulate", *SMALL, "--json").output)["meta"]
    assert (meta["speed_model"], meta["locality"], meta["enforce_limits"], meta["reveal_models"]) == (
        "placement",
        "pack",
        False,
        False,
    )
    assert meta["arrival_scale"] == 1.0
    assert meta["time_limits"] == "user"


def test_limits_option_picks_the_model_and_marks_the_header() -> None:
    user = _ok("simulate", *SMALL, "--policy", "fifo-backfill", "--json").output
    older = _ok("simulate", *SMALL, "--policy", "fifo-backfill", "--limits", "lognormal").output
    assert "time limits lognormal" in older
    assert json.loads(user)["meta"]["time_limits"] == "user"
    message = _one_line_error(_invoke("simulate", *SMALL, "--limits", "exact"))
    assert "--limits" in message and "exact" in message


def test_scenario_list_prints_the_limits_spearman() -> None:
    listed = _ok("scenarios").output
    line = next(row for row in listed.splitlines() if "11386 jobs" in row)
    assert "limits (user) vs durations Spearman 0.4" in line
    older = _ok("scenarios", "--limits", "lognormal").output
    line = next(row for row in older.splitlines() if "11386 jobs" in row)
    assert "limits (lognormal) vs durations Spearman 0.8" in line


def test_revealed_models_are_marked_in_the_printed_header() -> None:
    assert "REVEALED MODELS" in _ok("simulate", *SMALL, "--reveal-models").output
    assert "REVEALED MODELS" not in _ok("simulate", *SMALL).output
    assert "REVEALED MODELS" in _ok("compare", *SMALL, "--policies", "fifo", "--reveal-models").output


def test_settings_change_the_run() -> None:
    """The options reach the simulator: with co-location slowdowns (full) jobs take longer."""
    placement = json.loads(_ok("simulate", *SMALL, "--json").output)
    full = json.loads(_ok("simulate", *SMALL, "--speed-model", "full", "--json").output)
    assert full["avg_jct"] > placement["avg_jct"]


def test_compare_records_the_settings_in_its_table_json(tmp_path: Path) -> None:
    _ok("compare", *SMALL, "--policies", "fifo", "--speed-model", "full", "--out", str(tmp_path))
    meta = json.loads((tmp_path / "comparison.json").read_text())["meta"]
    assert meta["speed_model"] == "full" and meta["arrival_scale"] == 1.0
    run = json.loads((tmp_path / "runs" / "fifo+first-fit" / "summary.json").read_text())
    assert run["speed_model"] == "full" and run["meta"]["locality"] == "pack"


@pytest.mark.parametrize("command", ["simulate", "compare", "evaluate"])
def test_every_workload_option_reaches_the_replays_of_compare_and_seeds(command: str) -> None:
    """Each option the command offers that shapes the workload is carried into its cells.

    ``compare`` and ``--seeds`` replay cells rebuilt from the options; one
    left out of the list that builds them is silently replaced by its
    default there (``--limits`` once was).
    """
    from slurmrl.cli.options import CELL_WORKLOAD_OPTIONS
    from slurmrl.grid.cells import WORKLOAD_DEFAULTS

    cli = main.get_command(click.Context(main), command)
    assert cli is not None
    offered = {p.name for p in cli.params} & set(WORKLOAD_DEFAULTS)
    assert offered and offered <= set(CELL_WORKLOAD_OPTIONS)


@pytest.mark.parametrize("limits", ["user", "lognormal"])
def test_compare_and_seeds_replay_the_limits_asked_for(limits: str, tmp_path: Path) -> None:
    args = [*SMALL, "--limits", limits]
    one = json.loads(_ok("simulate", *args, "--policy", "fifo-backfill", "--json").output)
    compared = json.loads(_ok("compare", *args, "--policies", "fifo-backfill", "--json").output)
    _ok("simulate", *args, "--policy", "fifo-backfill", "--seeds", "2", "--out", str(tmp_path))
    seeded = json.loads((tmp_path / "seed-0" / "summary.json").read_text())
    assert one["meta"]["time_limits"] == seeded["meta"]["time_limits"] == limits
    assert compared[0]["avg_jct"] == seeded["avg_jct"] == one["avg_jct"]


def test_compare_and_seeds_replay_what_simulate_replays_under_every_flag(tmp_path: Path) -> None:
    """Every workload option and simulator setting at once, off its default: the same replay three ways."""
    args = [*SMALL, *OFF_DEFAULT, "--speed-model", "full", "--elastic", "fraction:0.5"]
    one = json.loads(_ok("simulate", *args, "--policy", "afs", "--json").output)
    compared = json.loads(_ok("compare", *args, "--policies", "afs", "--json").output)
    _ok("simulate", *args, "--policy", "afs", "--seeds", "2", "--out", str(tmp_path))
    seeded = json.loads((tmp_path / "seed-0" / "summary.json").read_text())
    meta = {k: v for k, v in one["meta"].items() if k not in ("decisions", "wall_seconds")}
    assert {k: seeded["meta"].get(k) for k in meta} == meta
    for key in ("avg_jct", "makespan", "killed", "finished"):
        assert compared[0][key] == seeded[key] == one[key]


def test_evaluate_takes_the_same_settings() -> None:
    out = json.loads(_ok("evaluate", "--policy", "fifo", *SMALL, "--speed-model", "none", "--json").output)
    assert out["speed_model"] == "none" and out["meta"]["speed_model"] == "none"


def test_seeds_print_mean_and_ci_and_write_one_folder_per_seed(tmp_path: Path) -> None:
    result = _ok("simulate", *SMALL, "--seed", "3", "--seeds", "2", "--out", str(tmp_path))
    assert "seeds 3..4" in result.output and "±" in result.output
    assert {p.name for p in tmp_path.iterdir()} == {"seed-3", "seed-4", "aggregate.json"}
    seeds = [json.loads((tmp_path / f"seed-{s}" / "summary.json").read_text()) for s in (3, 4)]
    assert [s["meta"]["seed"] for s in seeds] == [3, 4]
    agg = json.loads((tmp_path / "aggregate.json").read_text())
    assert agg["meta"]["seeds"] == [3, 4]
    row = agg["rows"][0]
    assert row["policy"] == "fifo"
    avg = row["avg_jct"]
    assert avg["n"] == 2
    assert avg["mean"] == pytest.approx((seeds[0]["avg_jct"] + seeds[1]["avg_jct"]) / 2)


def test_compare_with_seeds_aggregates_per_policy() -> None:
    out = json.loads(_ok("compare", *SMALL, "--policies", "fifo,qssf", "--seeds", "2", "--json").output)
    assert [r["policy"] for r in out["rows"]] == ["fifo", "qssf"]
    assert all(r["finished"]["n"] == 2 and r["finished"]["mean"] == 60 for r in out["rows"])


def test_a_scenario_keeps_its_timeline_unless_asked() -> None:
    plain = json.loads(
        _ok("simulate", "--scenario", "philly-sample", "--limit", "40", "--json", "--no-progress").output
    )["meta"]
    assert plain["workload"] == "philly-sample" and plain["arrival_scale"] == 1.0
    scaled = json.loads(
        _ok(
            "simulate",
            "--scenario",
            "philly-sample",
            "--limit",
            "40",
            "--arrival-scale",
            "3",
            "--json",
            "--no-progress",
        ).output
    )["meta"]
    assert scaled["arrival_scale"] == 3.0
    assert scaled["offered_load"] == pytest.approx(3 * plain["offered_load"], rel=1e-6)
