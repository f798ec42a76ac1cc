"""Placement limits end to end, on the local Slurm test cluster (contrib/testcluster).

Run with ``eval "$(contrib/testcluster/testcluster env)"; pytest -m slurm tests/slurm``.
Nodes get features for the duration (node01/02 ``fast``, node03/04 ``big``,
every node its own name), cleared at the end; jobs carry a private account (the daemon's scope) and
are cancelled at the end. Jobs are submitted held so that Slurm does not
start them before the daemon decides; the daemon reads them as released.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import live_slurm  # loaded by tests/conftest.py
import pytest
from live_slurm import Released, node_gpus, show, wait_for

from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.loop import Daemon, make_backend
from slurmrl.daemon.metrics import DaemonMetrics

pytestmark = pytest.mark.slurm
ACCOUNT = f"slurmrl-c{os.getpid()}"
FILL = f"{ACCOUNT}-fill"
FEATURES = {"node01": "fast", "node02": "fast", "node03": "big", "node04": "big"}


run = live_slurm.slurm


def sbatch(*args: str, account: str = ACCOUNT) -> str:
    return live_slurm.sbatch(*args, account=account)


def set_features(clear: bool = False) -> None:
    """FEATURES, plus each node's own name on every node of the cluster (what Prefer= pins need)."""
    for node in node_gpus():
        feat = FEATURES.get(node)
        value = "" if clear else (f"{feat},{node}" if feat else node)
        out = run(
            "scontrol", "update", f"NodeName={node}", f"AvailableFeatures={value}", f"ActiveFeatures={value}"
        )
        assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module", autouse=True)
def features():
    # Start from an idle cluster: other live tests may still be cancelling their jobs.
    wait_for(
        lambda: not run("squeue", "-h", "-t", "RUNNING,COMPLETING").stdout.strip(), 120, "an idle cluster"
    )
    set_features()
    yield
    live_slurm.clean_up()
    set_features(clear=True)


def make_config(tmp: Path) -> DaemonConfig:
    return live_slurm.daemon_config(tmp, ACCOUNT, policy="fifo-backfill", placement="first-fit")


def test_exclude_and_constraint_are_never_pinned_around(tmp_path: Path) -> None:
    # First fit would put both on node01 if it ignored their limits.
    jx = sbatch("-H", "-N1", "--gres=gpu:2", "-x", "node01")
    jc = sbatch("-H", "-N1", "--gres=gpu:2", "--constraint=big")
    cfg = make_config(tmp_path)
    daemon = Daemon(cfg, Released(make_backend(cfg), {jx, jc}), metrics=DaemonMetrics())
    snap = daemon.backend.snapshot()
    by_id = {j.job_id: j for j in snap.jobs}
    assert by_id[jx].excluded_nodes == ("node01",) and by_id[jc].constraint == "big"
    out = daemon.cycle()
    assert out.error is None
    pin_x, pin_c = show(jx)["ReqNodeList"], show(jc)["ReqNodeList"]
    assert pin_x not in ("(null)", "node01"), pin_x
    assert pin_c in ("node03", "node04"), pin_c
    daemon.revert()
    assert show(jx)["ReqNodeList"] == "(null)" and show(jc)["ReqNodeList"] == "(null)"
    run("scancel", jx, jc)


def test_refused_pin_is_removed_once_and_not_set_again(tmp_path: Path) -> None:
    # node03/node04 (the only "big" nodes) are full, so once unpinned the job stays pending.
    fill = [sbatch(f"-w{n}", "-N1", "--gres=gpu:8", account=FILL) for n in ("node03", "node04")]
    wait_for(lambda: all(show(j).get("JobState") == "RUNNING" for j in fill), 60, "filler jobs to run")
    job = sbatch("-H", "-N1", "--gres=gpu:1", "--constraint=big")
    cfg = make_config(tmp_path)
    # A reader blind to --constraint places the job on node01: Slurm refuses that pin.
    daemon = Daemon(cfg, Released(make_backend(cfg), {job}, hide_constraint=True), metrics=DaemonMetrics())
    assert daemon.cycle().error is None
    assert show(job)["ReqNodeList"] == "node01"
    assert run("scontrol", "release", job).returncode == 0
    wait_for(lambda: show(job).get("Reason") == "BadConstraints", 30, "Slurm to refuse the pin")
    pins = []
    for _ in range(5):
        assert daemon.cycle().error is None
        pins.append(show(job)["ReqNodeList"])
        time.sleep(1.0)
    assert pins == ["(null)"] * 5, pins  # removed once, never set again: no flip-flop
    audit = [json.loads(line) for line in Path(cfg.audit_log).read_text().splitlines() if line.strip()]
    node_changes = [
        a for a in audit if a.get("kind") == "change" and a.get("job") == job and a.get("field") == "nodes"
    ]
    assert len(node_changes) == 2, node_changes  # the pin and its one removal
    daemon.revert()
    run("scancel", job, *fill)


def test_prefer_pins_softly_where_nodes_carry_their_names(tmp_path: Path) -> None:
    # Every node carries its own name as a feature here (see set_features): Prefer= can name nodes.
    job = sbatch("-H", "-N1", "--gres=gpu:2", "--constraint=big")
    cfg = replace(make_config(tmp_path), pin="prefer")
    daemon = Daemon(cfg, Released(make_backend(cfg), {job}), metrics=DaemonMetrics())
    assert daemon.backend.snapshot().pin_support.soft
    assert daemon.cycle().error is None
    fields = show(job)
    chosen = fields.get("Prefer")
    assert chosen in ("node03", "node04") and fields["ReqNodeList"] == "(null)", fields
    assert f"prefer={chosen}" in run("scontrol", "show", "job", "-o", job).stdout  # the audit note
    daemon.revert()
    fields = show(job)
    assert fields.get("Prefer") is None and fields["ReqNodeList"] == "(null)", fields
    assert daemon.cycle().error is None  # pinned again, then released: it starts where preferred
    assert show(job).get("Prefer") == chosen
    assert run("scontrol", "release", job).returncode == 0
    wait_for(lambda: show(job).get("JobState") == "RUNNING", 30, "the softly pinned job to start")
    assert show(job)["NodeList"] == chosen
    daemon.revert()
    run("scancel", job)
