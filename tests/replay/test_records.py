"""Controller sightings turned into the simulator's records, in trace seconds."""

from __future__ import annotations

import math

from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import LinkTier
from slurmrl.replay.plan import plan_replay
from slurmrl.replay.records import Observed, job_record, placement_of, samples_of
from slurmrl.slurm.parse_gres import GresItem
from slurmrl.slurm.snapshot import SlurmJob
from slurmrl.traces.schema import Trace, TraceJob

CLUSTER = load_cluster("2x2x8:v100")
ORIGIN = 1_000_000.0


def _plan():
    trace = Trace(
        jobs=(
            TraceJob("t1", 0.0, 1000.0, 4, user="u", vc="v", time_limit=3000.0),
            TraceJob("t2", 100.0, 500.0, 8, user="u", vc="v"),
        ),
        source="t",
        format="t",
    )
    return plan_replay(trace, speedup=10.0, gpus_per_node=8, submit_user="root")


def _seen(
    state: str, start: float | None, end: float | None, gpus=((("node001", (0, 1, 2, 3)),))
) -> Observed:
    return Observed("7", ORIGIN + 1, start, end, state, tuple(n for n, _ in gpus), gpus, 0)


def test_record_in_trace_seconds() -> None:
    plan = _plan()
    job = plan.jobs[0]
    rec = job_record(plan, job, _seen("COMPLETED", ORIGIN + 3, ORIGIN + 104), ORIGIN, CLUSTER)
    assert (rec.submit_time, rec.start_time, rec.end_time) == (10.0, 30.0, 1040.0)
    assert rec.run_time == 1010.0 and rec.duration == 1000.0 and rec.best_time == 1000.0
    assert rec.time_limit == 5 * 60.0 * 10  # 300 s compressed: 5 whole minutes, scaled back
    assert rec.user == "root" and rec.nodes == 1 and rec.racks == 1
    assert rec.worst_link == int(LinkTier.NVLINK)
    assert not rec.killed_at_limit


def test_unfinished_and_timed_out_jobs_have_no_end() -> None:
    plan = _plan()
    running = job_record(plan, plan.jobs[0], _seen("RUNNING", ORIGIN + 3, None), ORIGIN, CLUSTER)
    assert math.isnan(running.end_time) and running.start_time == 30.0
    killed = job_record(plan, plan.jobs[0], _seen("TIMEOUT", ORIGIN + 3, ORIGIN + 303), ORIGIN, CLUSTER)
    assert killed.killed_at_limit and math.isnan(killed.end_time)
    never = job_record(plan, plan.jobs[1], None, ORIGIN, CLUSTER)
    assert math.isnan(never.start_time) and never.nodes == 0 and never.worst_link == -1


def test_observed_keeps_where_the_job_ran_after_it_ended() -> None:
    running = SlurmJob(
        "7",
        state="RUNNING",
        submit_time=1.0,
        start_time=2.0,
        nodes=("node001",),
        gpu_alloc=(("node001", GresItem("v100", 2, (4, 5))),),
    )
    ended = SlurmJob(
        "7", state="COMPLETED", submit_time=1.0, start_time=2.0, end_time=9.0, nodes=("node001",)
    )
    first = Observed.of(running, None)
    last = Observed.of(ended, first)
    assert last.ended and last.end == 9.0 and last.gpus == (("node001", (4, 5)),)
    assert placement_of(last, CLUSTER).num_gpus == 2


def test_samples_follow_submits_starts_and_ends() -> None:
    plan = _plan()
    a = job_record(plan, plan.jobs[0], _seen("COMPLETED", ORIGIN + 3, ORIGIN + 104), ORIGIN, CLUSTER)
    seen_b = _seen("COMPLETED", ORIGIN + 20, ORIGIN + 70, gpus=(("node002", tuple(range(8))),))
    b = job_record(plan, plan.jobs[1], seen_b, ORIGIN, CLUSTER)
    places = [placement_of(_seen("COMPLETED", 0, 0), CLUSTER), placement_of(seen_b, CLUSTER)]
    samples = samples_of([a, b], places, CLUSTER)
    at = {s.time: s for s in samples}
    assert at[30.0].busy_gpus == 4 and at[30.0].running_jobs == 1
    assert at[200.0].busy_gpus == 12 and at[200.0].running_jobs == 2 and at[200.0].pending_jobs == 0
    assert at[1040.0].busy_gpus == 0 and at[1040.0].running_jobs == 0
