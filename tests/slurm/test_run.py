"""call(): error mapping with small fake Slurm commands on PATH."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from slurmrl.slurm import run
from slurmrl.slurm.run import (
    CommandFailed,
    CommandNotFound,
    ControllerUnreachable,
    JobNotFound,
    MungeError,
    PermissionDenied,
    RateLimited,
    TryAgain,
    call,
)


def _fake(tmp_path: Path, name: str, body: str) -> dict[str, str]:
    exe = tmp_path / name
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.mark.parametrize(
    ("stderr", "cls"),
    [
        ("squeue: error: Unable to contact slurm controller (connect failure)", ControllerUnreachable),
        ("slurm_load_jobs error: Connection refused", ControllerUnreachable),
        ("sinfo: error: Socket timed out on send/recv operation", ControllerUnreachable),
        ("error: Munge decode failed: Invalid credential", MungeError),
        ("slurm_load_jobs error: Invalid authentication credential", MungeError),
        ("error: Zero Bytes were transmitted or received", MungeError),
        ("slurm_update error: Access/permission denied", PermissionDenied),
        ("error: Invalid user for SlurmUser", PermissionDenied),
        ("error: Resource temporarily unavailable", RateLimited),
        ("slurm_update error: Invalid job id specified", JobNotFound),
        (
            "slurm_update error: Job update not available right now, the DB index is being set, "
            "try again in a bit for job 301",
            TryAgain,
        ),
        ("something else broke", CommandFailed),
    ],
)
def test_error_mapping(tmp_path: Path, stderr: str, cls: type) -> None:
    env = _fake(tmp_path, "squeue", f"echo '{stderr}' >&2; exit 1")
    with pytest.raises(cls) as err:
        call(["squeue", "--json"], env=env)
    assert "squeue --json" in str(err.value) and "exit 1" in str(err.value)
    assert stderr.split(":")[-1].strip() in str(err.value)


def test_success_and_counters(tmp_path: Path) -> None:
    env = _fake(tmp_path, "sinfo", "printf 'slurm 22.05.8\\n'; printf '%s\\n' \"$@\" >&2")
    before = run.STATS.calls, run.STATS.failures
    result = call(["sinfo", "--version", "a b;$(x)"], env=env)
    assert result.stdout == "slurm 22.05.8\n"
    assert result.stderr.splitlines() == ["--version", "a b;$(x)"]  # no shell: argv arrives intact
    assert run.STATS.calls == before[0] + 1 and run.STATS.failures == before[1]


def test_missing_binary_and_timeout(tmp_path: Path) -> None:
    with pytest.raises(CommandNotFound, match="slurm-client"):
        call(["slurmrl-no-such-squeue"])
    env = _fake(tmp_path, "scontrol", "sleep 5")
    with pytest.raises(ControllerUnreachable, match="did not finish"):
        call(["scontrol", "ping"], timeout=0.3, env=env)


def test_a_missing_slurm_conf_fails_at_once_naming_it(tmp_path: Path) -> None:
    """Slurm's commands retry a slurm.conf they cannot stat for a minute, then blame the controller."""
    ran = tmp_path / "ran"
    env = _fake(tmp_path, "sinfo", f"touch {ran}; printf 'slurm 22.05.8\\n'")
    missing = tmp_path / "etc" / "slurm.conf"
    with pytest.raises(ControllerUnreachable, match=f"SLURM_CONF={missing}: no such file") as err:
        call(["sinfo", "--version"], env={**env, "SLURM_CONF": str(missing)})
    assert "point SLURM_CONF" in str(err.value) and not ran.exists()
    missing.parent.mkdir()
    missing.write_text("ClusterName=test\n")
    assert call(["sinfo", "--version"], env={**env, "SLURM_CONF": str(missing)}).stdout == "slurm 22.05.8\n"
    assert ran.exists()
