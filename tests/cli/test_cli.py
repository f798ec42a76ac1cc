"""The command line end to end: every --help, a simulation, and clean errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner, Result

from slurmrl.cli import COMMANDS, main


def _all_commands():
    """Every command and subcommand path, e.g. ("slurm", "snapshot")."""
    import click

    paths = [()]
    for name in COMMANDS:
        cmd = main.get_command(None, name)  # type: ignore[arg-type]
        paths.append((name,))
        if isinstance(cmd, click.Group):
            paths.extend((name, sub) for sub in cmd.list_commands(None))  # type: ignore[arg-type]
    return paths


@pytest.mark.parametrize("path", _all_commands(), ids=lambda p: " ".join(p) or "slurmrl")
def test_help(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_help_of_light_commands_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from slurmrl.cli import COMMANDS, main\n"
        "for cmd in ('daemon', 'status', 'slurm', 'cluster', 'simulate', 'compare', 'sweep', 'policies', 'report'):\n"
        "    if cmd not in COMMANDS:\n"
        "        continue\n"
        "    try:\n"
        "        main([cmd, '--help'], standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"


SIM_KEYS = {
    "jobs",
    "finished",
    "avg_jct",
    "p50_jct",
    "p95_jct",
    "p99_jct",
    "avg_wait",
    "makespan",
    "gpu_utilization",
    "avg_jct_lower_bound",
    "makespan_lower_bound",
    "multi_gpu_local_fraction",
    "wall_seconds",
}


def test_simulate_json_on_embedded_sample(tmp_path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        [
            "simulate",
            "--limit",
            "300",
            "--cluster",
            "1x2x8",
            "--policy",
            "fifo",
            "--json",
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert SIM_KEYS <= set(summary)
    assert summary["jobs"] == 300
    assert summary["finished"] == 300
    assert summary["avg_jct"] >= summary["avg_jct_lower_bound"]
    assert {"summary.json", "jobs.csv", "timeline.csv"} <= {p.name for p in out.iterdir()}


def test_compare_writes_table(tmp_path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "compare",
            "--limit",
            "200",
            "--cluster",
            "1x2x8",
            "--policies",
            "fifo,fifo+topology",
            "--out",
            str(tmp_path),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "fifo" in result.output
    rows = json.loads((tmp_path / "comparison.json").read_text())["rows"]
    assert len(rows) == 2
    assert (tmp_path / "comparison.csv").exists()


@pytest.mark.parametrize("policies", ["fifo,fifo+first-fit", "sjf-limit+topology,fifo,sjf-limit+topology"])
def test_compare_refuses_a_run_asked_for_twice(tmp_path, policies: str) -> None:
    """Both would write one result folder and print two equal rows (fifo places with first-fit)."""
    result = CliRunner().invoke(
        main,
        ["compare", "--limit", "20", "--policies", policies, "--out", str(tmp_path / "o"), "--no-progress"],
    )
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1
    assert "twice" in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_checkpoint_given_by_its_path_runs_inside_the_out_folder(tmp_path) -> None:
    """An absolute checkpoint path once put its run folder beside the checkpoint, outside --out."""
    import shutil
    from pathlib import Path

    import slurmrl

    ckpt = tmp_path / "ckpt" / "h0"
    shutil.copytree(Path(slurmrl.__file__).parent / "rl" / "shipped" / "harmony-philly", ckpt)
    out = tmp_path / "out"
    args = [
        "compare",
        "--limit",
        "60",
        "--policies",
        f"{ckpt}+type-aware,fifo",
        "--out",
        str(out),
        "--no-progress",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exception is None, result.output
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["h0"]
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert len(runs) == 2 and all((out / "runs" / r / "summary.json").is_file() for r in runs)
    assert any(r.endswith("ckpt-h0+type-aware") for r in runs)


def test_simulate_takes_a_placement_after_the_policy_as_compare_does() -> None:
    joined = CliRunner().invoke(
        main, ["simulate", "--limit", "60", "--policy", "sjf-limit+topology", "--json"]
    )
    apart = CliRunner().invoke(
        main, ["simulate", "--limit", "60", "--policy", "sjf-limit", "--placement", "topology", "--json"]
    )
    assert joined.exception is None and apart.exception is None, joined.output + apart.output

    def summary(output: str) -> dict:
        data = json.loads(output)
        data.pop("wall_seconds", None)
        return data

    assert summary(joined.output) == summary(apart.output)
    both = CliRunner().invoke(
        main, ["simulate", "--limit", "60", "--policy", "sjf-limit+topology", "--placement", "first-fit"]
    )
    assert both.exit_code != 0 and "give one" in both.output and "Traceback" not in both.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["simulate", "--policy", "fifoo"], "did you mean 'fifo'"),
        (["simulate", "--policy", "sjf-limit+nope"], "unknown placement 'nope'"),
        (["simulate", "--cluster", "8x8"], "8x8"),
        (["simulate", "--trace", "/nonexistent/trace.csv"], "/nonexistent/trace.csv"),
        (["simulate", "--scenario", "philly-512"], "unknown scenario"),
        (["compare", "--policies", "fifo,nosuch"], "unknown policy"),
        (["simulate", "--policy", "policies/no-such-run"], "no checkpoint folder policies/no-such-run"),
    ],
)
def test_user_errors_are_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, [*args, "--no-progress"])
    assert_one_line_error(result, message)


def assert_one_line_error(result: Result, message: str) -> None:
    """A clean failure: click's own exit (no other exception escaped) and one line naming the problem.

    CliRunner catches exceptions into ``result.exception`` rather than printing
    a traceback, so that, not the output, tells a clean error from a crash.
    """
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code not in (0, None)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: ") and message in lines[0]


@pytest.mark.parametrize(
    "blocked, args, extra",
    [
        ("torch", ["train", "--out", "unused"], "train"),
        ("gymnasium", ["train", "--out", "unused"], "train"),
        ("matplotlib", ["report", "unused", "--out", "unused"], "report"),
        ("nh3", ["report", "unused", "--out", "unused"], "report"),
        ("matplotlib", ["compare", "--policies", "fifo", "--limit", "5", "--report", "unused"], "report"),
    ],
)
def test_a_missing_extra_is_named(monkeypatch, tmp_path, blocked: str, args: list[str], extra: str) -> None:
    monkeypatch.setitem(sys.modules, blocked, None)  # as if not installed: importing it raises ImportError
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=tmp_path):  # nothing lands in the checkout if a guard is lost
        result = runner.invoke(main, args)
    assert_one_line_error(result, f"pip install 'slurmrl[{extra}]'")
    assert blocked in result.output


def test_bad_trace_row_is_named(tmp_path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "job_id,user,vc,submit_time,duration_s,num_gpus,num_nodes,status,job_type\n"
        "a,,vc1,0,100,1,,,\n"
        "b,,vc1,10,-5,1,,,\n"
    )
    result = CliRunner().invoke(main, ["simulate", "--trace", str(bad), "--no-progress"])
    assert_one_line_error(result, "bad.csv")
    assert "line 3" in result.output and "duration_s" in result.output
    skipped = CliRunner().invoke(
        main, ["simulate", "--trace", str(bad), "--skip-bad", "--json", "--no-progress"]
    )
    assert skipped.exit_code == 0, skipped.output
    assert "skipped 1 bad row" in skipped.output


def test_rows_a_format_drops_by_rule_are_counted_on_stderr(tmp_path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(
        "job_id,user,vc,submit_time,duration_s,num_gpus,num_nodes,status,job_type\n"
        "a,,vc1,0,100,1,,,\n"
        "b,,vc1,5,100,0,,,\n"
        "c,,vc1,10,,2,,,\n"
        "d,,vc1,20,50,2,,,\n"
    )
    result = CliRunner().invoke(main, ["simulate", "--trace", str(trace), "--json", "--no-progress"])
    assert result.exception is None, result.output
    assert json.loads(result.stdout)["jobs"] == 2
    assert "left out by the normalized format's rules" in result.stderr
    assert "1 no GPUs, 1 never scheduled (empty duration)" in result.stderr
    clean = CliRunner().invoke(
        main, ["simulate", "--scenario", "philly-sample", "--limit", "20", "--no-progress"]
    )
    assert clean.exception is None and "left out" not in clean.stderr


def test_the_table_shows_the_inherited_backlog_on_warm_started_workloads_only() -> None:
    from slurmrl.cli.simulate import TABLE_COLUMNS, table_columns
    from slurmrl.sim.experiment import prepare

    assert table_columns(prepare(scenario="philly-sample")) == TABLE_COLUMNS
    warm = prepare(scenario="philly-512-week2-val")
    assert warm.handover is not None
    assert table_columns(warm) == [*TABLE_COLUMNS, "backlog_avg_jct"]
