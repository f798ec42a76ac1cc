"""Faults against the local Slurm 22.05 test cluster: SIGKILL mid-batch, SIGHUP, a second daemon,
a user's -w/-x, an admin's SiteFactor. Each test is bounded in time and cancels its jobs.

The Operator-only account has its own live test (test_operator_live.py); the fake Slurm of
test_safety.py covers the same path at every point of a batch.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import live_slurm as live  # loaded by tests/conftest.py
import pytest

from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.loop import Daemon, make_backend
from slurmrl.daemon.metrics import DaemonMetrics

pytestmark = pytest.mark.slurm
ACCOUNT = f"slurmrl-f{os.getpid()}"


def sbatch(*args: str) -> str:
    return live.sbatch(*args, account=ACCOUNT)


def fill_nodes(layout: dict[str, list[int]]) -> list[str]:
    return live.fill_nodes(layout, account=f"{ACCOUNT}-fill")


def make_config(tmp: Path, **kw) -> DaemonConfig:
    return live.daemon_config(tmp, ACCOUNT, **kw)


@pytest.fixture(scope="module", autouse=True)
def cleanup():
    yield
    live.clean_up()


def audit_lines(tmp: Path) -> list[dict]:
    return live.audit_lines(tmp / "audit.jsonl")


def clean(jid: str) -> bool:
    f = live.show(jid)
    return (
        live.site(jid) in (0, -1) and f.get("ReqNodeList") == "(null)" and "slurmrl:" not in f["AdminComment"]
    )


def slow_updates(folder: Path, seconds: float) -> Path:
    """A folder whose ``scontrol`` waits ``seconds`` before each update, then runs the real one."""
    folder.mkdir()
    wrapper = folder / "scontrol"
    real = shutil.which("scontrol")
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = update ] && sleep {seconds:g}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    return folder


def test_sigkill_in_the_middle_of_a_batch_then_revert_leaves_nothing(tmp_path: Path) -> None:
    fill = fill_nodes(live.every_node())
    jobs = [sbatch("-N1", "--gres=gpu:8", "-t", str(5 + i)) for i in range(24)]
    cfg = make_config(tmp_path)
    cfg_path = tmp_path / "daemon.toml"
    live.write_toml(cfg_path, cfg)
    # Each update lands 6 s after it was started: the kill finds one under way, and its scontrol,
    # left running, lands it after the revert below has started.
    delay = 6.0
    proc = live.start_daemon(cfg_path, path_first=slow_updates(tmp_path / "bin", delay))
    try:
        live.wait_for(
            lambda: any(r.get("kind") == "change" for r in audit_lines(tmp_path)), 60, "a first change"
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        killed = time.monotonic()
        sent = [r for r in audit_lines(tmp_path) if r.get("kind") == "change"]
        assert len(sent) < len(jobs)  # it was killed before the batch ended
        record = json.loads((tmp_path / "state.json").read_text())["jobs"]
        touched = [j for j in jobs if live.site(j) > 0 or "slurmrl:" in live.show(j)["AdminComment"]]
        assert set(touched) <= set(record), "a value in Slurm the record does not know"
        # The policy it ran has gone since (a checkpoint folder deleted): revert needs none.
        live.write_toml(cfg_path, replace(cfg, policy=str(tmp_path / "deleted-checkpoint")))
        out = subprocess.run(
            [*live.CLI, "daemon", "revert", "--config", str(cfg_path)],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        time.sleep(max(0.0, killed + delay + 2 - time.monotonic()))  # the update under way has landed
        # Revert leaves a job that started meanwhile (a filler ended) as Slurm holds it.
        waiting = [j for j in jobs if live.state(j) == "PENDING"]
        assert len(waiting) >= len(jobs) - 2, f"fillers ended: {len(waiting)} jobs pending"
        assert [j for j in waiting if not clean(j)] == [], out.stdout
        assert json.loads((tmp_path / "state.json").read_text())["jobs"] == {}
    finally:
        if proc.poll() is None:
            proc.kill()
        live.cancel(fill + jobs)


def test_sighup_reloads_the_config_and_a_second_daemon_is_refused(tmp_path: Path) -> None:
    fill = fill_nodes(live.every_node())
    a = sbatch("-N1", "--gres=gpu:8", "-t", "5")
    b = sbatch("-N1", "--gres=gpu:8", "-t", "60")
    cfg = make_config(tmp_path)
    cfg_path = tmp_path / "daemon.toml"
    live.write_toml(cfg_path, cfg)
    proc = live.start_daemon(cfg_path)
    try:
        live.wait_for(lambda: live.site(a) == 1000, 30, "the first changes")
        second = subprocess.run(
            [*live.CLI, "daemon", "--once", "--config", str(cfg_path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode != 0 and f"pid {proc.pid}" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1
        assert live.site(a) == 1000  # the refused one changed nothing
        cfg_path.write_text(
            cfg_path.read_text().replace("interval = 1.0", "interval = 1.0\nmax_site_factor = 400")
        )
        proc.send_signal(signal.SIGHUP)
        live.wait_for(lambda: live.site(a) == 400, 30, "the reloaded max_site_factor")
        cfg_path.write_text(cfg_path.read_text() + "bogus_key = 1\n")
        proc.send_signal(signal.SIGHUP)
        live.wait_for(
            lambda: any(r.get("kind") == "reload" and not r.get("ok") for r in audit_lines(tmp_path)),
            20,
            "the refused reload",
        )
        time.sleep(2)
        assert proc.poll() is None and live.site(a) == 400  # still running, old config kept
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert clean(a) and clean(b)
    finally:
        if proc.poll() is None:
            proc.kill()
        live.cancel(fill + [a, b])


def test_users_nodelists_and_an_admins_site_factor_survive(tmp_path: Path) -> None:
    # Only node02 has free GPUs (4), and the -x job excludes it: nothing here can start.
    fill = fill_nodes(live.every_node(node02=[4]))
    asked = sbatch("-N1", "--gres=gpu:8", "-t", "5", "-w", "node03")  # waits for its own node
    excluded = sbatch("-N1", "--gres=gpu:4", "-t", "6", "-x", "node02")
    admin = sbatch("-N1", "--gres=gpu:8", "-t", "60")
    subprocess.run(["scontrol", "update", f"JobId={admin}", "SiteFactor=55"], check=True, timeout=30)
    ours = [asked, excluded, admin]
    live.wait_for(lambda: all(live.state(j) == "PENDING" for j in ours), 20, "jobs to queue")
    cfg = make_config(tmp_path, policy="fifo-backfill")
    d = Daemon(cfg, make_backend(cfg), metrics=DaemonMetrics())
    try:
        for _ in range(2):
            assert d.cycle().error is None
        assert live.show(asked)["ReqNodeList"] == "node03"  # the user's own -w, untouched
        assert "node02" not in live.show(excluded)["ReqNodeList"]
        assert d.record.jobs[admin].orig_site_factor == 55
        assert d.revert().remaining == 0
        assert live.site(admin) == 55  # the admin's value, not 0
        assert live.show(asked)["ReqNodeList"] == "node03"
    finally:
        d.close()
        live.cancel(fill + ours)
