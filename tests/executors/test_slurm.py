"""The Slurm executor's settings and the sbatch script it submits (no cluster needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmrl.errors import ConfigError
from slurmrl.executors.slurm import SlurmExecutor, SlurmOptions, package_root, parse_time


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("30", 30), ("1:30", 2), ("2:00:00", 120), ("1-0", 1440), ("1-2:30", 1590), ("0-0:0:59", 1)],
)
def test_slurm_time_formats_in_minutes(text: str, minutes: int) -> None:
    assert parse_time(text) == minutes


@pytest.mark.parametrize("text", ["", "1h", "0", "1:2:3:4"])
def test_bad_times_name_the_flag(text: str) -> None:
    with pytest.raises(ConfigError, match="--time"):
        parse_time(text)


def test_script_is_one_array_running_this_python_on_this_package(tmp_path: Path) -> None:
    pytest.importorskip("submitit")
    options = SlurmOptions(
        folder=tmp_path, partition="debug", time_min=7, account="acct", array_parallelism=3, mem_gb=1.5
    )
    script = SlurmExecutor(options).script(5)
    assert "#SBATCH --array=0-4%3" in script
    for flag in ("--partition=debug", "--time=7", "--account=acct", "--mem=1536MB", "--cpus-per-task=1"):
        assert f"#SBATCH {flag}" in script
    assert f"export PYTHONPATH={package_root()}" in script
    assert "-m submitit.core._submit" in script
    assert SlurmExecutor(options).describe(5) == "5 array task(s) on partition debug, 3 at a time, 7 min each"


def test_a_failed_array_task_is_one_line_naming_its_log() -> None:
    from types import SimpleNamespace

    from slurmrl.executors.slurm import _outcome

    trace = (
        "Job (task=0) failed during processing with trace:\n----------------------\n"
        'Traceback (most recent call last):\n  File "x.py", line 1\nslurmrl.errors.TraceError: t.csv: file not found\n'
        "----------------------\nYou can check full logs with 'job.stderr(0)' and 'job.stdout(0)'or at paths:\n"
        "  - /logs/7_1_0_log.err\n  - /logs/7_1_0_log.out"
    )
    failed = SimpleNamespace(
        exception=lambda: RuntimeError(trace),
        job_id="7_1",
        paths=SimpleNamespace(stderr="/logs/7_1_0_log.err"),
    )
    outcome = _outcome(3, failed)
    assert outcome.index == 3 and not outcome.ok
    assert outcome.error == (
        "array task 7_1: slurmrl.errors.TraceError: t.csv: file not found (log: /logs/7_1_0_log.err)"
    )
    done = SimpleNamespace(exception=lambda: None, result=lambda: {"id": "c"})
    assert _outcome(0, done).value == {"id": "c"}


@pytest.mark.parametrize(
    ("flag", "value"), [("partition", "gpu\nrm -rf ~"), ("account", "ml team"), ("partition", "a,")]
)
def test_a_name_that_would_break_the_sbatch_script_is_refused(flag: str, value: str) -> None:
    """Each value is a "#SBATCH --flag=value" line: a line break there starts a command line."""
    with pytest.raises(ConfigError, match=f"--{flag} .* is not a Slurm name"):
        SlurmOptions(**{flag: value})


def test_slurm_names_as_sites_spell_them_are_taken() -> None:
    options = SlurmOptions(partition="gpu-a100,debug.q", account="ml_team+2")
    assert options.parameters()["partition"] == "gpu-a100,debug.q"
