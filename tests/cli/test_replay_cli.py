"""``slurmrl replay`` refuses what it cannot run, in one line, before submitting anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmrl.cli import main
from tests.cli.test_cli import assert_one_line_error


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cluster", "2x4x8"], "live cluster"),
        (["--scenario", "philly-sample"], "live cluster"),
        (["--policy", "fifo", "--daemon-config", "{conf}"], "not both"),
        (["--placement", "topology"], "--placement needs --policy"),
        (["--policy", "tiresias"], "preempts"),
        (["--policy", "sjf-oracle"], "true job durations"),
        (["--policy", "nosuch"], "nosuch"),
        (["--slurm-conf", "{missing}"], "slurm.conf"),
    ],
)
def test_user_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    conf = tmp_path / "daemon.toml"
    conf.write_text('policy = "fifo"\n')
    args = [a.format(conf=conf, missing=tmp_path / "nowhere" / "slurm.conf") for a in args]
    result = CliRunner().invoke(
        main, ["replay", "--speedup", "100", "--out", str(tmp_path / "o"), *args, "--no-progress"]
    )
    assert_one_line_error(result, message)
    assert not (tmp_path / "o").exists()  # nothing written, nothing submitted
