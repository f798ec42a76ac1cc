"""Preemption by requeue on the local Slurm test cluster (contrib/testcluster).

Run with ``eval "$(contrib/testcluster/testcluster env)"; pytest -m slurm tests/daemon``.
Every job here carries a private account, the daemon's scope; all are cancelled at the end.
"""

from __future__ import annotations

import os
from pathlib import Path

import live_slurm  # loaded by tests/conftest.py
import pytest
from live_slurm import daemon_config, node_gpus, show, state, wait_for

from slurmrl.daemon.loop import Daemon, make_backend
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.record import Record

pytestmark = pytest.mark.slurm
ACCOUNT = f"slurmrl-p{os.getpid()}"


@pytest.fixture(scope="module", autouse=True)
def cleanup():
    yield
    live_slurm.clean_up(heal=True)


def long_jobs() -> dict[str, str]:
    """One whole-node job asking 10 hours on every GPU node, all running: node -> job id."""
    ids = {
        node: live_slurm.sbatch(f"-w{node}", "-N1", f"--gres=gpu:{n}", "-t", "600", account=ACCOUNT)
        for node, n in node_gpus().items()
        if n
    }
    wait_for(lambda: all(state(j) == "RUNNING" for j in ids.values()), 90, "the long jobs to run")
    return ids


def test_srtf_limit_requeues_a_long_job_and_the_short_one_starts_in_its_place(tmp_path: Path) -> None:
    longs = long_jobs()
    submitted = {j: show(j)["SubmitTime"] for j in longs.values()}
    node, gpus = next(iter(node_gpus().items()))
    short = live_slurm.sbatch("-N1", f"--gres=gpu:{gpus}", "-t", "5", account=ACCOUNT)
    wait_for(lambda: show(short).get("Reason") in ("Resources", "Priority"), 30, "the short job to queue")
    # Trace seconds per wall second: the long jobs' few seconds of run count past srtf's minimum run.
    cfg = daemon_config(tmp_path, ACCOUNT, policy="srtf-limit", preempt="requeue", time_scale=100.0)
    d = Daemon(cfg, make_backend(cfg), metrics=DaemonMetrics())
    try:
        assert d.cycle().error is None
        entries = Record.load(tmp_path / "state.json").preempted
        assert len(entries) == 1, entries
        (victim,) = entries
        assert victim in longs.values() and entries[victim].count == 1 and entries[victim].stopping is None
        # A requeued job shows COMPLETING until its node has ended the run (longer on a busy host).
        fields = wait_for(
            lambda: (f := show(victim))["JobState"] != "COMPLETING" and f, 60, "the requeue to end"
        )
        assert fields["Restarts"] == "1" and fields["JobState"] == "PENDING", fields
        assert fields["SubmitTime"] != submitted[victim]  # Slurm resets it: the record keeps the first
        freed = next(n for n, j in longs.items() if j == victim)
        assert show(short)["ReqNodeList"] == freed
        wait_for(lambda: state(short) == "RUNNING", 60, "the short job to start")
        assert show(short)["NodeList"] == freed
        d.cycle()  # the short job runs now: nothing more to stop
        assert [j for j in longs.values() if show(j)["Restarts"] != "0"] == [victim]
    finally:
        d.close()
