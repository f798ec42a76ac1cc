"""The daemon with an Operator-only Slurm account, against the local test cluster.

``contrib/testcluster`` runs slurmdbd and gives the Unix user ``slurmrl-op``
AdminLevel=Operator. Slurm lets an Operator set SiteFactor and ReqNodeList on
other users' jobs (``validate_operator``) but AdminComment needs Administrator
(``validate_super_user``), both read from slurmctld's cached accounting data.
Every Slurm command of the daemon runs as that user here (wrappers on PATH
call ``runuser``), on jobs root submitted: the cycle must still order and
place, skip its notes with one warning, and revert cleanly.

Run with ``eval "$(contrib/testcluster/testcluster env)"; pytest -m slurm tests/daemon``.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import subprocess
import sys
from pathlib import Path

import live_slurm  # loaded by tests/conftest.py; its commands keep to the real binaries
import pytest
from live_slurm import (
    REAL,
    Released,
    daemon_config,
    fill_leaving,
    show,
    site,
    slurm,
    state,
    wait_for,
    write_toml,
)

from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.loop import Daemon, make_backend
from slurmrl.daemon.metrics import DaemonMetrics

pytestmark = pytest.mark.slurm
OPERATOR = "slurmrl-op"  # made by contrib/testcluster (AdminLevel=Operator)
ACCOUNT = f"slurmrl-o{os.getpid()}"
FILL = f"{ACCOUNT}-fill"
WRAPPED = ("scontrol", "squeue", "sinfo", "sprio", "sacctmgr", "sacct", "sshare")


def sbatch(*args: str, account: str = ACCOUNT) -> str:
    return live_slurm.sbatch(*args, account=account)


@pytest.fixture(scope="module", autouse=True)
def cleanup():
    yield
    live_slurm.clean_up()


@pytest.fixture
def as_operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH wrappers that run every Slurm client as the Operator user; returns their folder."""
    try:
        pwd.getpwnam(OPERATOR)
    except KeyError:
        pytest.fail(f"Unix user {OPERATOR} is missing: run 'contrib/testcluster/testcluster start'")
    level = slurm("sacctmgr", "-n", "-P", "show", "user", OPERATOR, "format=AdminLevel").stdout.strip()
    assert level == "Operator", f"{OPERATOR} has AdminLevel {level!r}; run 'testcluster start' (slurmdbd)"
    bindir = tmp_path / "operator-bin"
    bindir.mkdir()
    for name in WRAPPED:
        wrapper = bindir / name
        wrapper.write_text(f'#!/bin/sh\nexec runuser -u {OPERATOR} -- {REAL[name]} "$@"\n')
        wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return bindir


def config(tmp: Path) -> DaemonConfig:
    return daemon_config(tmp, ACCOUNT)


def test_an_operator_account_orders_and_places_without_notes(
    tmp_path: Path, as_operator: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # node01 ends with GPUs 2-5 free (two half NVLink quads), node02 with 4-7 (one whole quad);
    # every other node is full.
    fill = fill_leaving({"node01": {2, 3, 4, 5}, "node02": {4, 5, 6, 7}}, account=FILL)
    short = sbatch("-N1", "--gres=gpu:8", "-t", "5")  # qssf ranks it first: top site factor
    placed = sbatch("-H", "-N1", "--gres=gpu:4", "-t", "30")  # held: pinned before it can start
    long = sbatch("-N1", "--gres=gpu:8", "-t", "60")
    wait_for(lambda: state(short) == "PENDING" and state(long) == "PENDING", 20, "jobs to queue")

    cfg = config(tmp_path)
    caplog.set_level(logging.WARNING)
    d = Daemon(cfg, Released(make_backend(cfg), {placed}), metrics=DaemonMetrics())
    try:
        first = d.cycle()
        assert first.error is None
        assert site(short) == 1000 and site(long) == 0  # ordering landed as the Operator
        assert show(placed)["ReqNodeList"] == "node02"  # the pin landed too
        assert all(show(j)["AdminComment"] in ("", "(null)") for j in (short, placed, long))
        assert not d.notes
        assert d.cycle().error is None  # a second cycle: still moving, no second warning
    finally:
        d.close()
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert len([r for r in audit if r["kind"] == "notes_off"]) == 1
    warnings = [r for r in caplog.records if "notes off" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]

    cfg_path = tmp_path / "daemon.toml"
    write_toml(cfg_path, cfg)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from slurmrl.cli import main; main()",
            "daemon",
            "revert",
            "--config",
            str(cfg_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert site(short) == 0 and site(long) == 0
    assert show(placed)["ReqNodeList"] == "(null)"
    assert json.loads((tmp_path / "state.json").read_text())["jobs"] == {}
    slurm("scancel", *fill, short, placed, long)
