"""Agreement with the public trace-replay simulators when the speed model is off.

The FIFO replays of public DL-cluster simulators (Tiresias', Helios' and
Alibaba PAI's among them) run every job at its trace duration. With
``speed_model="none"`` ours must give exactly their numbers on the same
input: strict FIFO over the first 100 jobs of the shared Philly window on
64 nodes of 8 GPUs, where the average JCT is 56,969.47 s and the last job
ends 1,139,821 s after the window's start.
"""

from __future__ import annotations

import numpy as np

from slurmrl.policy import make_policy
from slurmrl.scenarios.catalog import PHILLY
from slurmrl.sim.experiment import prepare
from slurmrl.sim.metrics import summarize
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.traces.store import locate


def test_fifo_without_a_speed_model_matches_the_public_simulators() -> None:
    workload = prepare(trace=str(locate(PHILLY)), cluster="8x8x8", limit=100)
    sim = Simulator(workload.trace, workload.cluster, config=SimConfig(speed_model="none"))
    result = sim.run(make_policy("fifo"))
    records = result.records
    jct = np.array([r.end_time - r.submit_time for r in records])
    assert len(records) == 100 and np.isfinite(jct).all()
    assert round(float(jct.mean()), 2) == 56_969.47
    assert max(r.end_time for r in records) == 1_139_821.0
    summary = summarize(records, result.samples, workload.cluster, wall_seconds=0.0)
    assert (summary.finished, summary.killed, summary.unfinished) == (100, 0, 0)
    assert round(summary.avg_jct, 2) == 56_969.47 and summary.last_end == 1_139_821.0
