from __future__ import annotations

import json
import math

import numpy as np
import pytest

from slurmrl.cluster.model import Cluster, Node, Rack, islands_for
from slurmrl.errors import SlurmrlError
from slurmrl.sim.bounds import avg_jct_lower_bound, makespan_lower_bound
from slurmrl.sim.metrics import Summary, jain_index, per_group, summarize, utilization_series
from slurmrl.sim.records import JobRecord, Sample

NAN = float("nan")


def small_cluster() -> Cluster:
    """2 racks x 2 nodes x 4 GPUs = 16 GPUs."""
    nodes = tuple(Node(f"n{i}", i, i // 2, 4, "V100", islands_for("nvswitch", 4)) for i in range(4))
    racks = (Rack("r0", 0, (0, 1)), Rack("r1", 1, (2, 3)))
    return Cluster("test", racks, nodes)


def rec(
    job_id: str,
    *,
    submit: float,
    start: float,
    end: float,
    duration: float,
    gpus: int = 1,
    user: str = "u",
    vc: str = "v",
    nodes: int | None = None,
    racks: int | None = None,
    preemptions: int = 0,
    time_limit: float = NAN,
    killed: bool = False,
    best_time: float = NAN,
) -> JobRecord:
    started = math.isfinite(start)
    return JobRecord(
        job_id=job_id,
        user=user,
        vc=vc,
        model="",
        gpus=gpus,
        submit_time=submit,
        start_time=start,
        end_time=end,
        duration=duration,
        run_time=(end - start) if math.isfinite(end) else 0.0,
        preemptions=preemptions,
        nodes=(nodes if nodes is not None else (1 if started else 0)),
        racks=(racks if racks is not None else (1 if started else 0)),
        worst_link=0 if started else -1,
        time_limit=time_limit,
        killed_at_limit=killed,
        best_time=best_time,
    )


RECORDS = [
    rec("a", user="u1", vc="v1", gpus=1, submit=0, start=0, end=10, duration=10),
    rec("b", user="u1", vc="v1", gpus=4, submit=0, start=10, end=30, duration=20, preemptions=2),
    rec("c", user="u2", vc="v2", gpus=8, submit=5, start=10, end=50, duration=40, nodes=2, racks=1),
    rec("d", user="u2", vc="v2", gpus=2, submit=20, start=NAN, end=NAN, duration=5),
    rec("e", user="u3", vc="v2", gpus=8, submit=30, start=50, end=NAN, duration=60, nodes=2, racks=2),
]
SAMPLES = [
    Sample(0.0, 1, 1, 1, 0.2),
    Sample(10.0, 12, 0, 2, 0.5),
    Sample(30.0, 8, 2, 1, 0.0),
    Sample(50.0, 8, 1, 1, 0.0),
]


def test_summary_on_known_records() -> None:
    s = summarize(RECORDS, SAMPLES, small_cluster(), wall_seconds=1.5)
    assert (s.jobs, s.finished, s.killed, s.unfinished) == (5, 3, 0, 2)
    # JCTs 10, 30, 45; linear-interpolated p95 = 30 + 0.9 * 15.
    assert s.avg_jct == pytest.approx(85 / 3)
    assert s.p50_jct == pytest.approx(30.0)
    assert s.p95_jct == pytest.approx(43.5)
    assert s.p99_jct == pytest.approx(30 + 0.98 * 15)
    # Waits of the four started jobs: 0, 10, 5, 20.
    assert s.avg_wait == pytest.approx(8.75)
    assert s.p95_wait == pytest.approx(10 + 0.85 * 10)
    # Bounded slowdowns: 10/10, 30/20, 45/40.
    assert s.avg_bounded_slowdown == pytest.approx((1 + 1.5 + 1.125) / 3)
    assert s.makespan == pytest.approx(50.0) and s.last_end == 50.0
    # Busy GPUs 1 on [0,10), 12 on [10,30), 8 on [30,50]: 410 GPU-s of 16 x 50.
    assert s.gpu_utilization == pytest.approx(410 / 800)
    assert s.avg_queue_length == pytest.approx((1 * 10 + 0 * 20 + 2 * 20) / 50)
    assert s.avg_fragmentation == pytest.approx((0.2 * 10 + 0.5 * 20) / 50)
    # Jobs pend on [0,10) with 15 GPUs free and on [30,50) with 8 free: 310 GPU-seconds.
    assert s.idle_gpu_hours_waiting == pytest.approx(310 / 3600)
    # Multi-GPU jobs that started: b (1 node), c (2 nodes, 1 rack), e (2 racks); d never started.
    assert s.multi_gpu_local_fraction == pytest.approx(1 / 3)
    assert s.multi_gpu_switch_fraction == pytest.approx(2 / 3)
    # Per-user mean slowdown: u1 1.25, u2 1.125 (u3 has nothing finished).
    assert s.jain_fairness_users == pytest.approx(2.375**2 / (2 * (1.25**2 + 1.125**2)))
    assert s.jain_fairness_vcs == pytest.approx(s.jain_fairness_users)
    # Jobs in the system: 2 on [0,30), 3 on [30,50). a: 10 / (10 * max(1, 2/16)) = 1;
    # b: 30 / 20 = 1.5; c: N = (2*25 + 3*20)/45 over [5,50], T_id = 40 * 8N/16, rho < 1.
    assert s.ftf_rho_max == pytest.approx(1.5)
    assert s.ftf_unfair_fraction == pytest.approx(1 / 3)
    assert s.preemptions == 2
    r, p, g = [0, 0, 5], [10, 20, 40], [1, 4, 8]
    assert s.avg_jct_lower_bound == pytest.approx(avg_jct_lower_bound(r, p, g, 16))
    assert s.makespan_lower_bound == pytest.approx(makespan_lower_bound(r, p, g, 16))
    assert s.jct_over_bound == pytest.approx(s.avg_jct / s.avg_jct_lower_bound)
    assert s.makespan_over_bound == pytest.approx(50 / s.makespan_lower_bound)
    assert s.jct_over_bound >= 1 and s.makespan_over_bound >= 1
    # Five jobs: the steady window trims int(0.5) = 0 at each end, so it is every job;
    # utilisation runs from the first to the last submission, [0, 30]: 250 GPU-s of 16 x 30.
    assert (s.steady_jobs, s.steady_avg_jct, s.steady_p95_jct) == (5, s.avg_jct, s.p95_jct)
    assert s.steady_utilization == pytest.approx(250 / 480)
    assert s.wall_seconds == 1.5


def test_horizon_end_sets_the_utilization_window() -> None:
    s = summarize(RECORDS, SAMPLES, small_cluster(), wall_seconds=0, horizon_end=100.0)
    assert s.gpu_utilization == pytest.approx((410 + 8 * 50) / 1600)


def test_duplicate_sample_times_take_the_last_state() -> None:
    samples = [Sample(0, 0, 0, 0, 0), Sample(0, 16, 0, 4, 0), Sample(10, 0, 0, 0, 0)]
    recs = [rec("a", gpus=16, submit=0, start=0, end=10, duration=10, nodes=4, racks=2)]
    s = summarize(recs, samples, small_cluster(), wall_seconds=0)
    assert s.gpu_utilization == pytest.approx(1.0)


def test_one_job() -> None:
    recs = [rec("only", gpus=4, submit=100, start=100, end=160, duration=60)]
    samples = [Sample(100, 4, 0, 1, 0.0), Sample(160, 0, 0, 0, 0.0)]
    s = summarize(recs, samples, small_cluster(), wall_seconds=0.01)
    assert s.avg_jct == s.p99_jct == 60.0
    assert s.gpu_utilization == pytest.approx(4 / 16)
    assert s.jain_fairness_users == 1.0
    assert s.jct_over_bound == pytest.approx(1.0)
    assert s.makespan_over_bound == pytest.approx(1.0)
    assert s.multi_gpu_local_fraction == 1.0


def test_no_completed_jobs_gives_nan_and_strict_json() -> None:
    recs = [rec("q", gpus=2, submit=0, start=NAN, end=NAN, duration=5)]
    s = summarize(recs, [Sample(0, 0, 1, 0, 0.0)], small_cluster(), wall_seconds=0)
    assert s.finished == 0 and s.unfinished == 1
    assert math.isnan(s.avg_jct) and math.isnan(s.jct_over_bound) and math.isnan(s.makespan)
    assert math.isnan(s.multi_gpu_local_fraction)
    d = s.to_dict()
    assert d["avg_jct"] is None and d["jobs"] == 1
    json.dumps(d, allow_nan=False)  # raises on NaN
    assert Summary.from_dict(d).jobs == 1


def test_empty_run_does_not_crash() -> None:
    s = summarize([], [], small_cluster(), wall_seconds=0)
    assert s.jobs == 0 and math.isnan(s.gpu_utilization) and math.isnan(s.avg_wait)
    json.dumps(s.to_dict(), allow_nan=False)


def test_killed_jobs_count_apart_and_only_in_the_makespan() -> None:
    # Killed at a 30 s limit although the trace says 100 s; the other job finished at 20.
    recs = [
        rec("k", submit=0, start=0, end=30, duration=100, time_limit=30, killed=True),
        rec("f", submit=0, start=0, end=20, duration=20),
    ]
    samples = [Sample(0, 2, 0, 2, 0.0), Sample(20, 1, 0, 1, 0.0), Sample(30, 0, 0, 0, 0.0)]
    s = summarize(recs, samples, small_cluster(), wall_seconds=0)
    assert (s.finished, s.killed, s.unfinished) == (1, 1, 0)
    assert s.avg_jct == 20.0 and s.p99_jct == 20.0  # the killed job's 30 s is not a JCT
    assert s.last_end == 30.0 and s.makespan == 30.0  # but it held its GPU until then
    # The makespan bound counts the killed job with min(100, limit 30): it cannot end before 30.
    assert s.makespan_lower_bound == pytest.approx(30.0)
    assert s.avg_jct_lower_bound == pytest.approx(20.0)
    assert s.jct_over_bound == pytest.approx(1.0) and s.makespan_over_bound == pytest.approx(1.0)


def test_bounds_use_best_time_and_fall_back_to_duration() -> None:
    # Job "fast" could run in 25 s on the fastest GPUs although its trace duration is 50 s.
    recs = [
        rec("fast", submit=0, start=0, end=50, duration=50, best_time=25),
        rec("old", submit=0, start=0, end=40, duration=40),  # no best time recorded: its duration
    ]
    s = summarize(recs, [Sample(0, 2, 0, 2, 0.0), Sample(50, 0, 0, 0, 0.0)], small_cluster(), wall_seconds=0)
    assert s.avg_jct_lower_bound == pytest.approx(avg_jct_lower_bound([0, 0], [25, 40], [1, 1], 16))
    assert s.avg_jct_lower_bound == pytest.approx(32.5)
    assert s.makespan_lower_bound == pytest.approx(40.0)


def test_finish_time_fairness_on_a_shared_cluster() -> None:
    # Four 8-GPU jobs of 100 s on 16 GPUs, all in the system throughout [0, 200]: N = 4 for the
    # first pair ([0, 100]), and the second pair sees 4 on [0,100) then 2: N = 3 over [0, 200].
    recs = [
        rec(f"j{i}", gpus=8, submit=0, start=s, end=s + 100, duration=100, nodes=2, racks=1)
        for i, s in enumerate((0, 0, 100, 100))
    ]
    samples = [Sample(0, 16, 2, 2, 0.0), Sample(100, 16, 0, 2, 0.0), Sample(200, 0, 0, 0, 0.0)]
    s = summarize(recs, samples, small_cluster(), wall_seconds=0)
    # First pair: T_id = 100 * 8 * 4 / 16 = 200 > JCT 100, rho 0.5; second: T_id = 150, rho 4/3.
    assert s.ftf_rho_max == pytest.approx(200 / 150)
    assert s.ftf_unfair_fraction == pytest.approx(0.5)
    assert s.idle_gpu_hours_waiting == 0.0  # jobs waited only while every GPU was busy


def test_a_job_alone_is_exactly_fair() -> None:
    # Submitted at a large trace time, so end - submit carries rounding; rho = 1 is not unfair.
    recs = [rec("solo", submit=1_000_000.1, start=1_000_000.1, end=1_000_000.1 + 3600.3, duration=3600.3)]
    samples = [Sample(1_000_000.1, 1, 0, 1, 0.0), Sample(1_000_000.1 + 3600.3, 0, 0, 0, 0.0)]
    s = summarize(recs, samples, small_cluster(), wall_seconds=0)
    assert s.ftf_rho_max == pytest.approx(1.0)
    assert s.ftf_unfair_fraction == 0.0


def test_jain_is_missing_without_users_or_vcs() -> None:
    recs = [rec(f"j{i}", user="", vc="", submit=0, start=0, end=10 * (i + 1), duration=10) for i in range(3)]
    s = summarize(recs, [Sample(0, 3, 0, 3, 0.0)], small_cluster(), wall_seconds=0)
    assert math.isnan(s.jain_fairness_users) and math.isnan(s.jain_fairness_vcs)
    assert s.to_dict()["jain_fairness_users"] is None


def test_steady_window_drops_the_first_and_last_tenth_of_arrivals() -> None:
    # 20 jobs submitted 10 s apart, each running 10 s alone on 1 GPU; the first two and the
    # last two arrivals (JCT 1000 s each) fall outside the window, the middle 16 have JCT 10 s.
    recs = []
    for i in range(20):
        jct = 1000.0 if i in (0, 1, 18, 19) else 10.0
        recs.append(
            rec(f"j{i:02d}", submit=10.0 * i, start=10.0 * i + jct - 10, end=10.0 * i + jct, duration=10)
        )
    samples = [Sample(0, 0, 1, 0, 0.0), Sample(20, 1, 0, 1, 0.0), Sample(180, 1, 1, 1, 0.0)]
    s = summarize(recs, samples, small_cluster(), wall_seconds=0)
    assert s.steady_jobs == 16
    assert s.steady_avg_jct == pytest.approx(10.0) and s.steady_p95_jct == pytest.approx(10.0)
    assert s.avg_jct > 100
    # Window [20, 170] (submissions of j02 and j17): one GPU busy throughout.
    assert s.steady_utilization == pytest.approx(1 / 16)


def test_summary_round_trip_and_older_summaries() -> None:
    s = summarize(RECORDS, SAMPLES, small_cluster(), wall_seconds=1.5)
    d = s.to_dict()
    back = Summary.from_dict(json.loads(json.dumps(d, allow_nan=False)))
    assert back.to_dict() == d
    old = {k: v for k, v in d.items() if k not in ("finished", "killed", "last_end", "steady_jobs")}
    old.update(completed=4, killed_at_limit=1)
    legacy = Summary.from_dict(old)
    assert (legacy.finished, legacy.killed) == (3, 1)
    assert legacy.steady_jobs == 0 and math.isnan(legacy.last_end)
    assert legacy.avg_jct == s.avg_jct
    with pytest.raises(SlurmrlError, match="missing key 'finished'"):
        Summary.from_dict({k: v for k, v in d.items() if k != "finished"})
    with pytest.raises(SlurmrlError, match="'killed' should be an integer"):
        Summary.from_dict({**d, "killed": "two"})


def test_jain_index() -> None:
    assert jain_index([3.0]) == 1.0
    assert jain_index([2.0, 2.0, 2.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert math.isnan(jain_index([]))


def test_per_group() -> None:
    by_vc = per_group(RECORDS, key="vc")
    assert [g.group for g in by_vc] == ["v1", "v2"]
    v2 = by_vc[1]
    assert (v2.jobs, v2.finished) == (3, 1)
    assert v2.avg_wait == pytest.approx((5 + 20) / 2)  # c and e started, d did not
    assert v2.avg_jct == pytest.approx(45.0)
    by_gpus = per_group(RECORDS, key="gpus")
    assert [g.group for g in by_gpus] == ["1", "2", "4", "8"]  # numeric, not text, order
    assert math.isnan(by_gpus[1].avg_wait)
    assert by_gpus[1].to_dict()["avg_wait"] is None
    with pytest.raises(SlurmrlError, match="cannot group"):
        per_group(RECORDS, key="colour")


def test_utilization_series_is_exact_per_bin() -> None:
    series = utilization_series(SAMPLES, small_cluster(), bins=5)
    assert series.edges.tolist() == pytest.approx([0, 10, 20, 30, 40, 50])
    assert series.busy_gpus.tolist() == pytest.approx([1, 12, 12, 8, 8])
    assert series.utilization.tolist() == pytest.approx(np.array([1, 12, 12, 8, 8]) / 16)
    assert series.queue_length.tolist() == pytest.approx([1, 0, 0, 2, 2])
    # A bin straddling a change point averages both sides.
    half = utilization_series(SAMPLES, small_cluster(), bins=2, start=0, end=20)
    assert half.busy_gpus.tolist() == pytest.approx([1, 12])
    assert series.centers.tolist() == pytest.approx([5, 15, 25, 35, 45])
    assert utilization_series([], small_cluster()).busy_gpus.size == 0


def test_bounds_are_computed_once_per_distinct_input(monkeypatch) -> None:
    import numpy as np

    from slurmrl.sim import metrics

    calls: list[int] = []
    real = metrics.avg_jct_lower_bound

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(metrics, "avg_jct_lower_bound", counted)
    monkeypatch.setattr(metrics, "_BOUNDS_SEEN", {})

    def cols(submit: list[float]) -> metrics._Cols:
        n = len(submit)
        ones = np.ones(n)
        return metrics._Cols(
            submit=np.array(submit),
            start=np.array(submit),
            end=np.array(submit) + 10.0,
            duration=10.0 * ones,
            best_time=10.0 * ones,
            gpus=np.ones(n, dtype=np.int64),
            nodes=np.ones(n, dtype=np.int64),
            racks=np.ones(n, dtype=np.int64),
            time_limit=np.full(n, np.nan),
            preemptions=np.zeros(n, dtype=np.int64),
            killed=np.zeros(n, dtype=bool),
        )

    first = metrics._bounds(cols([0.0, 1.0]), 8, 0.0)
    assert metrics._bounds(cols([0.0, 1.0]), 8, 0.0) == first and len(calls) == 1
    metrics._bounds(cols([0.0, 2.0]), 8, 0.0)  # another workload
    metrics._bounds(cols([0.0, 1.0]), 4, 0.0)  # another cluster size
    assert len(calls) == 3


def test_the_inherited_backlog_is_reported_apart() -> None:
    backlog = [
        rec("b1", submit=-50.0, start=10.0, end=60.0, duration=50.0),
        rec("b2", submit=-10.0, start=20.0, end=30.0, duration=10.0),
        rec("b3", submit=-5.0, start=NAN, end=NAN, duration=10.0),  # never started: counted, no JCT
    ]
    s = summarize(RECORDS, SAMPLES, small_cluster(), wall_seconds=0.0, backlog=backlog)
    assert s.backlog_jobs == 3
    assert s.backlog_avg_jct == pytest.approx((110.0 + 40.0) / 2)
    # The measured figures are those of the records alone.
    alone = summarize(RECORDS, SAMPLES, small_cluster(), wall_seconds=0.0)
    assert s.avg_jct == alone.avg_jct and s.jobs == alone.jobs
    assert alone.backlog_jobs == 0 and math.isnan(alone.backlog_avg_jct)


def test_summaries_written_before_the_backlog_keys_still_read() -> None:
    d = summarize(RECORDS, SAMPLES, small_cluster(), wall_seconds=1.5).to_dict()
    before = {k: v for k, v in d.items() if not k.startswith("backlog_")}
    back = Summary.from_dict(before)
    assert back.backlog_jobs == 0 and math.isnan(back.backlog_avg_jct)
    assert back.avg_jct == d["avg_jct"]
