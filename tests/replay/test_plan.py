"""What a replay submits, and the twin workload built from it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from slurmrl.errors import ConfigError
from slurmrl.replay.daemon_proc import DaemonSetup
from slurmrl.replay.experiment import ReplayRequest, make_plan, run_twin
from slurmrl.replay.plan import NAME_PREFIX, plan_replay, safe_name, submitted_trace
from slurmrl.sim.experiment import prepare
from slurmrl.traces.schema import Trace, TraceJob


def _trace() -> Trace:
    jobs = (
        TraceJob(
            "b", submit_time=600.0, duration=7200.0, num_gpus=16, user="u1", vc="vc 1", time_limit=9000.0
        ),
        TraceJob("a", submit_time=0.0, duration=30.0, num_gpus=1, user="u2", vc="", time_limit=None),
        TraceJob(
            "c/$(x)",
            submit_time=600.0,
            duration=600.0,
            num_gpus=4,
            num_nodes=2,
            user="u3",
            vc="v",
            time_limit=59.0 * 100,
        ),
    )
    return Trace(jobs=jobs, source="test", format="test")


def test_jobs_are_compressed_floored_and_rounded_as_slurm_keeps_them() -> None:
    plan = plan_replay(_trace(), speedup=100.0, gpus_per_node=8, floor=2.0, submit_user="root")
    by_id = {j.trace_id: j for j in plan.jobs}
    assert [j.trace_id for j in plan.jobs] == ["a", "b", "c/$(x)"]  # by submit time, then id
    a, b, c = by_id["a"], by_id["b"], by_id["c/$(x)"]
    assert a.sleep == 2.0 and a.submit_at == 0.0  # 0.3 s compressed: floored
    assert a.minutes == 0 and a.nodes == 1 and a.account == "default"
    assert b.sleep == 72.0 and b.submit_at == 6.0
    assert b.minutes == 2  # 90 s compressed limit, in whole minutes rounded up
    assert b.nodes == 2 and b.account == "vc_1"  # fewest nodes holding 16 GPUs; a safe account
    assert c.nodes == 2  # the trace's node count binds
    assert c.minutes == 1  # 59 s compressed
    assert c.name == NAME_PREFIX + "c_x" and b.name == NAME_PREFIX + "b"
    assert plan.span == 6.0


def test_limit_never_below_the_compressed_sleep() -> None:
    trace = Trace(
        jobs=(TraceJob("x", 0.0, duration=10_000.0, num_gpus=1, time_limit=100.0),), source="t", format="t"
    )
    job = plan_replay(trace, speedup=10.0, gpus_per_node=8).jobs[0]
    assert job.sleep == 1000.0 and job.minutes == math.ceil(1000.0 / 60)


def test_twin_is_exactly_what_was_submitted_in_trace_seconds() -> None:
    trace = _trace()
    plan = plan_replay(trace, speedup=100.0, gpus_per_node=8, submit_user="root")
    twin = {j.job_id: j for j in submitted_trace(trace, plan).jobs}
    assert twin["a"].duration == 200.0  # the floor, scaled back
    assert twin["a"].time_limit is None
    assert twin["b"].duration == 7200.0 and twin["b"].time_limit == 120.0 * 100
    assert twin["b"].submit_time == 600.0 and twin["b"].num_nodes == 2
    assert {j.user for j in twin.values()} == {"root"}  # Slurm sees one submitting user
    assert twin["b"].vc == "vc_1"


@pytest.mark.parametrize("speedup", [0.0, -1.0, math.inf, math.nan])
def test_bad_speedup_is_one_line_error(speedup: float) -> None:
    with pytest.raises(ConfigError, match="--speedup"):
        plan_replay(_trace(), speedup=speedup, gpus_per_node=8)


def test_safe_name_keeps_what_slurm_and_shells_read_alike() -> None:
    assert safe_name("application_1506638472019_10238") == "application_1506638472019_10238"
    assert safe_name("a b;rm -rf /") == "a_b_rm_-rf"
    assert safe_name("$$$") == "job"


def test_twin_of_a_checkpoint_folder_runs_it_under_the_live_run_s_name(tmp_path: Path) -> None:
    """The daemon may run a checkpoint folder; its twin loads the same folder and pairs up by its path."""
    folder = str(
        Path(__file__).resolve().parents[2] / "policies" / "topdrl-philly" / "contended-val-seeds" / "0"
    )
    workload = prepare(trace="embedded:philly-sample", cluster="1x2x8:v100", limit=30)
    request = ReplayRequest(workload, 100.0, DaemonSetup(folder, "type-aware"), tmp_path, "")
    twin = run_twin(request, make_plan(request))
    assert (twin.meta["policy"], twin.meta["placement"]) == (folder, "type-aware")
    assert len(twin.records) == 30 and twin.summary["finished"] == 30
