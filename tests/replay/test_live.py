"""A small replay on the local Slurm test cluster with the daemon in the loop (marked ``slurm``).

40 jobs of the embedded Philly week from hour 48 at 60 trace seconds per
wall second: about two minutes. Tolerance for the simulated twin's average
JCT: 10%, the project's fidelity target (README, "Simulator fidelity");
measured on this window: within about 2%.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from live_slurm import slurm, wait_for  # loaded by tests/conftest.py

from slurmrl.cli import main
from slurmrl.replay.plan import NAME_PREFIX
from slurmrl.replay.runner import LEDGER
from slurmrl.sim.results import read_results

pytestmark = pytest.mark.slurm
TOLERANCE = 0.10


def _queue() -> list[str]:
    return [line for line in slurm("squeue", "-h", "-o", "%i|%j|%T").stdout.splitlines() if line.strip()]


def test_replay_with_the_daemon_runs_every_job_once_and_leaves_nothing(tmp_path: Path) -> None:
    wait_for(lambda: not _queue(), 120, "an idle cluster before the replay")
    out, twin = tmp_path / "live", tmp_path / "sim"
    args = [
        "replay",
        "--trace",
        "embedded:philly-sample",
        "--start",
        "172800",
        "--limit",
        "40",
        "--speedup",
        "60",
        "--policy",
        "fifo-backfill",
        "--slurm-conf",
        os.environ["SLURM_CONF"],
        "--out",
        str(out),
        "--twin-out",
        str(twin),
        "--no-progress",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exception is None, result.output

    ledger = [json.loads(x) for x in (out / LEDGER).read_text().splitlines()]
    submitted = [x for x in ledger if "slurm_id" in x]
    assert len(submitted) == 40 and len({x["trace_id"] for x in submitted}) == 40
    assert len({x["slurm_id"] for x in submitted}) == 40
    live = read_results(out)
    assert live.summary.finished == 40 and live.summary.killed == 0 and live.summary.unfinished == 0
    assert all(r.preemptions == 0 and math.isfinite(r.end_time) for r in live.records)  # ran once, to its end
    assert live.meta["source"] == "slurm" and live.meta["daemon"] is True

    state = json.loads((out / "daemon" / "state.json").read_text())
    assert state["jobs"] == {} and state["cycle"] > 0  # every change given back
    audit = [json.loads(x) for x in (out / "daemon" / "audit.jsonl").read_text().splitlines()]
    assert any(e.get("kind") == "change" for e in audit), "the daemon changed nothing: not in the loop"
    assert not [q for q in _queue() if NAME_PREFIX in q]

    sim = read_results(twin)
    assert sim.summary.finished == 40
    gap = live.summary.avg_jct / sim.summary.avg_jct - 1
    assert abs(gap) <= TOLERANCE, (
        f"live avg JCT {live.summary.avg_jct:.0f} s vs simulated {sim.summary.avg_jct:.0f} s"
    )
