from __future__ import annotations

import csv
import json
from pathlib import Path

from click.testing import CliRunner

from slurmrl.cli import main
from slurmrl.rl.harmony.policy import read_checkpoint

SHIPPED = Path(__file__).resolve().parents[3] / "policies" / "meta-rl-philly"


def test_adapt_writes_checkpoint_and_curve(tmp_path: Path) -> None:
    out = tmp_path / "adapted"
    result = CliRunner().invoke(
        main,
        [
            "adapt",
            "--policy",
            "meta-rl",
            "--scenario",
            "chronus-mix1-ed69ec",
            "--episodes",
            "1",
            "--episode-jobs",
            "24",
            "--held-out-jobs",
            "40",
            "--out",
            str(out),
        ],
    )
    assert result.exception is None, result.output
    assert result.exit_code == 0
    assert "chronus-mix1-ed69ec[-40:]" in result.output
    rows = list(csv.DictReader((out / "curve.csv").open()))
    assert [(r["init"], r["episodes"]) for r in rows] == [
        ("meta", "0"),
        ("meta", "1"),
        ("scratch", "0"),
        ("scratch", "1"),
        ("unadapted", "0"),
        ("unadapted", "1"),
    ]
    assert all(float(r["avg_jct"]) > 0 for r in rows)
    meta0 = next(r for r in rows if r["init"] == "meta")
    assert all(r["avg_jct"] == meta0["avg_jct"] for r in rows if r["init"] == "unadapted")
    points = json.loads((out / "curve.json").read_text())["points"]
    assert len(points) == len(rows)
    ckpt, state = read_checkpoint(out)  # the adapted network, in the shipped checkpoint's layout
    shipped, shipped_state = read_checkpoint(SHIPPED)
    assert ckpt == shipped
    assert any((state[k] != shipped_state[k]).any() for k in state)
    again = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--policy",
            str(out),
            "--trace",
            "embedded:philly-sample",
            "--limit",
            "30",
            "--speed-model",
            "full",
            "--json",
            "--no-progress",
        ],
    )
    assert again.exception is None, again.output
    assert json.loads(again.output)["finished"] == 30


def test_bad_scenario_is_a_one_line_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["adapt", "--scenario", "chronus-nope", "--out", str(tmp_path / "x")])
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit)
    assert "unknown scenario 'chronus-nope'" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "x").exists()


def test_adapting_on_an_evaluation_scenario_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["adapt", "--scenario", "chronus-mix1-7f04ca", "--out", str(tmp_path / "x")]
    )
    assert result.exit_code != 0
    assert "held out for evaluation" in result.output
