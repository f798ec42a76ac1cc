from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import Cluster, Node, Rack, islands_for
from slurmrl.policy import make_policy
from slurmrl.sim.bounds import (
    avg_jct_lower_bound,
    avg_jct_lower_bounds,
    jct_lower,
    makespan_lower_bound,
    mean_busy_time_bound,
    mean_busy_times,
    srpt_fluid_response_times,
)
from slurmrl.sim.metrics import summarize
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.traces.schema import Trace, TraceJob


def test_two_jobs_on_one_gpu() -> None:
    # Both released at 0 on G=1: best order is short first, ends at 1 and 3.
    assert avg_jct_lower_bound([0, 0], [1, 2], [1, 1], 1) == pytest.approx(2.0)
    assert makespan_lower_bound([0, 0], [1, 2], [1, 1], 1) == pytest.approx(3.0)


def test_srpt_preempts_for_shorter_arrival() -> None:
    # A (work 10) runs 0-2, B (work 3) arrives at 2 and preempts: B ends at 5, A at 13.
    resp = srpt_fluid_response_times([0, 2], [10, 3], [1, 1], 1)
    assert resp.tolist() == pytest.approx([13.0, 3.0])
    assert avg_jct_lower_bound([0, 2], [10, 3], [1, 1], 1) == pytest.approx(8.0)


def test_srpt_keeps_running_job_when_arrival_is_longer() -> None:
    # A (work 4) runs 0-4 undisturbed by B (work 10) arriving at 1; B ends at 14.
    resp = srpt_fluid_response_times([0, 1], [4, 10], [1, 1], 1)
    assert resp.tolist() == pytest.approx([4.0, 13.0])


def test_pooled_machine_speed_and_max_combination() -> None:
    # G=4: works 8 (4 GPUs x 2 s) and 4 (1 GPU x 4 s). SRPT: 4/4 -> t=1, then 8/4 -> t=3,
    # mean response 2; but each job needs its own ideal time, mean p = 3, which wins.
    resp = srpt_fluid_response_times([0, 0], [2, 4], [4, 1], 4)
    assert resp.tolist() == pytest.approx([3.0, 1.0])
    assert avg_jct_lower_bound([0, 0], [2, 4], [4, 1], 4) == pytest.approx(3.0)


def test_makespan_bound_counts_late_work_from_its_release() -> None:
    # Two full-cluster jobs released at 100: they must run one after the other from 100.
    r, p, g = [0, 100, 100], [1, 10, 10], [1, 4, 4]
    # Classic min r + work/G is only 20.25 and max(r+p) is 110; the suffix bound gives 120.
    assert makespan_lower_bound(r, p, g, 4) == pytest.approx(120.0)
    ends = _fifo_schedule(np.array(r, float), np.array(p, float), np.array(g), 4)
    assert ends.max() == pytest.approx(120.0)  # and FIFO attains it: the bound is tight here


def test_ties_in_release_times_share_the_suffix() -> None:
    # Sorting must not split equal release times: all three jobs count from t=5.
    assert makespan_lower_bound([5, 5, 5], [2, 2, 2], [2, 2, 2], 2) == pytest.approx(11.0)


def test_single_job_and_empty() -> None:
    assert avg_jct_lower_bound([7], [3], [2], 8) == pytest.approx(3.0)
    assert makespan_lower_bound([7], [3], [2], 8) == pytest.approx(10.0)
    assert math.isnan(avg_jct_lower_bound([], [], [], 8))
    assert math.isnan(makespan_lower_bound([], [], [], 8))
    assert jct_lower([1.5, 2.0]).tolist() == [1.5, 2.0]


def test_bad_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="same length"):
        avg_jct_lower_bound([0, 1], [1], [1, 1], 4)
    with pytest.raises(ValueError, match="at least one GPU"):
        makespan_lower_bound([0], [1], [1], 0)
    with pytest.raises(ValueError, match="finite"):
        avg_jct_lower_bound([0], [float("nan")], [1], 4)


def _fifo_schedule(r: np.ndarray, p: np.ndarray, g: np.ndarray, total: int) -> np.ndarray:
    """Strict FIFO list schedule on ``total`` GPUs; returns end times in input order."""
    free_at = [0.0] * total
    ends = np.zeros(len(r))
    last_start = -math.inf
    for j in np.argsort(r, kind="stable"):
        free_at.sort()
        start = max(r[j], last_start, free_at[g[j] - 1])
        for k in range(g[j]):
            free_at[k] = start + p[j]
        ends[j] = start + p[j]
        last_start = start
    return ends


jobs_strategy = st.integers(1, 8).flatmap(
    lambda total: st.tuples(
        st.just(total),
        st.lists(
            st.tuples(
                st.integers(0, 60),  # submit
                st.floats(0.5, 30, allow_nan=False),  # ideal duration
                st.integers(1, total),  # GPUs
                st.floats(1.0, 1.5, allow_nan=False),  # placement slowdown factor
            ),
            min_size=1,
            max_size=14,
        ),
    )
)


@settings(max_examples=150, deadline=None)
@given(jobs_strategy)
def test_any_fifo_schedule_respects_both_bounds(case: tuple[int, list[tuple]]) -> None:
    total, jobs = case
    r = np.array([j[0] for j in jobs], float)
    p = np.array([j[1] for j in jobs], float)
    g = np.array([j[2] for j in jobs])
    actual = p * np.array([j[3] for j in jobs])  # placement can only slow a job down
    ends = _fifo_schedule(r, actual, g, total)
    assert np.mean(ends - r) >= avg_jct_lower_bound(r, p, g, total) - 1e-9
    assert ends.max() >= makespan_lower_bound(r, p, g, total) - 1e-9


@settings(max_examples=100, deadline=None)
@given(jobs_strategy)
def test_srpt_beats_fcfs_on_the_pooled_machine(case: tuple[int, list[tuple]]) -> None:
    total, jobs = case
    r = np.array([j[0] for j in jobs], float)
    p = np.array([j[1] for j in jobs], float)
    g = np.array([j[2] for j in jobs])
    resp = srpt_fluid_response_times(r, p, g, total)
    assert (resp >= g * p / total - 1e-9).all()
    # FCFS on the same pooled machine is one feasible schedule there, so SRPT is no worse.
    t, fcfs = -math.inf, []
    for j in np.argsort(r, kind="stable"):
        t = max(t, r[j]) + g[j] * p[j] / total
        fcfs.append(t - r[j])
    assert resp.sum() <= sum(fcfs) + 1e-9


def test_full_trace_size() -> None:
    rng = np.random.default_rng(1)
    n = 46_070
    r = np.sort(rng.uniform(0, 60 * 86400, n))
    p = rng.lognormal(7, 2, n)
    g = rng.choice([1, 2, 4, 8, 16], n)
    parts = avg_jct_lower_bounds(r, p, g, 2000)
    avg = avg_jct_lower_bound(r, p, g, 2000)
    mk = makespan_lower_bound(r, p, g, 2000)
    assert avg == max(parts) and parts[0] == pytest.approx(p.mean())
    assert np.isfinite(parts).all() and mk >= (r + p).max()


# -- the mean-busy-time bound ----------------------------------------------


def test_mean_busy_time_of_one_job() -> None:
    # Work 10 on speed 1 from t=3: busy on [3, 13], centred at 8; the bound is 8 + 5 - 3 = 10.
    assert mean_busy_times([3], [10], [1], 1).tolist() == pytest.approx([8.0])
    assert mean_busy_time_bound([3], [10], [1], 1) == pytest.approx(10.0)


def test_mean_busy_time_beats_the_fluid_bound_for_narrow_jobs() -> None:
    # Three 1-GPU jobs of 2 s on 2 GPUs: the pooled machine runs them one by one at speed 2,
    # over [0,1], [1,2], [2,3]: mean busy times 0.5, 1.5, 2.5; plus p/2 = 1 each: mean 2.5.
    # SRPT's fluid mean is only 2 (ends 1, 2, 3) and mean p is 2; the true optimum is 8/3.
    r, p, g = [0, 0, 0], [2, 2, 2], [1, 1, 1]
    assert mean_busy_times(r, p, g, 2).tolist() == pytest.approx([0.5, 1.5, 2.5])
    assert avg_jct_lower_bounds(r, p, g, 2) == pytest.approx((2.0, 2.0, 2.5))
    assert avg_jct_lower_bound(r, p, g, 2) == pytest.approx(2.5)


def test_shortest_total_work_first_preempts_and_resumes() -> None:
    # G=1: A (work 4) runs [0,1], B (work 1) arrives at 1 and runs [1,2], A resumes [2,5].
    # M_A = (0.5 + 10.5) / 4 = 2.75, M_B = 1.5; bound = mean(2.75 + 2, 1.5 + 0.5 - 1) = 2.875.
    assert mean_busy_times([0, 1], [4, 1], [1, 1], 1).tolist() == pytest.approx([2.75, 1.5])
    assert mean_busy_time_bound([0, 1], [4, 1], [1, 1], 1) == pytest.approx(2.875)


def test_shortest_total_work_first_ranks_by_total_not_remaining_work() -> None:
    # G=1: when B (work 3) arrives at 1.5, A (work 4) has 2.5 left. SRPT would keep A; the
    # shortest-total-work order runs B on [1.5, 4.5] and A on [0, 1.5] and [4.5, 7].
    busy = mean_busy_times([0, 1.5], [4, 3], [1, 1], 1)
    assert busy.tolist() == pytest.approx([(1.5**2 / 2 + (7**2 - 4.5**2) / 2) / 4, 3.0])
    assert srpt_fluid_response_times([0, 1.5], [4, 3], [1, 1], 1).tolist() == pytest.approx([4.0, 5.5])


def test_jobs_without_work() -> None:
    # A zero-GPU job and a zero-length job use no machine time: they count with p_j.
    busy = mean_busy_times([0, 0, 0], [4, 5, 0], [1, 0, 2], 1)
    assert busy[0] == pytest.approx(2.0) and np.isnan(busy[1:]).all()
    assert mean_busy_time_bound([0, 0, 0], [4, 5, 0], [1, 0, 2], 1) == pytest.approx((4 + 5 + 0) / 3)
    assert avg_jct_lower_bound([0], [0], [0], 1) == 0.0


def _random_trace(rng: np.random.Generator, n: int) -> Trace:
    jobs = [
        TraceJob(
            f"j{i}",
            float(rng.integers(0, 4000)),
            float(rng.lognormal(6, 1.2)) + 1.0,
            int(rng.choice([1, 1, 2, 4, 8, 16])),
            model=str(rng.choice(["resnet50", "vgg16", "bert", ""])),
        )
        for i in range(n)
    ]
    return Trace(tuple(sorted(jobs, key=lambda j: (j.submit_time, j.job_id))), "random", "constructed")


def _mixed_cluster() -> Cluster:
    """Three V100 nodes (the reference type) and one faster A100 node: best times below durations."""
    nodes = tuple(
        Node(f"n{i}", i, i // 2, 4, "A100" if i == 3 else "V100", islands_for("nvswitch", 4))
        for i in range(4)
    )
    return Cluster("mixed", (Rack("r0", 0, (0, 1)), Rack("r1", 1, (2, 3))), nodes)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("policy", ["fifo", "sjf-oracle", "srtf-oracle"])
def test_every_bound_is_below_real_simulator_runs(seed: int, policy: str) -> None:
    cluster = load_cluster("2x2x4:v100") if seed < 3 else _mixed_cluster()
    trace = _random_trace(np.random.default_rng(seed), 12 + 3 * seed)
    speed_model = ("none", "placement", "full")[seed % 3]
    result = Simulator(trace, cluster, config=SimConfig(seed=seed, speed_model=speed_model)).run(
        make_policy(policy)
    )
    recs = result.records
    assert all(math.isfinite(r.end_time) for r in recs)
    if cluster.name == "mixed" and speed_model != "none":
        assert any(r.best_time < r.duration for r in recs)  # the A100 node is faster
    r = np.array([x.submit_time for x in recs])
    p = np.array([x.best_time for x in recs])
    g = np.array([x.gpus for x in recs])
    jct = np.array([x.end_time - x.submit_time for x in recs])
    parts = avg_jct_lower_bounds(r, p, g, cluster.total_gpus)
    combined = avg_jct_lower_bound(r, p, g, cluster.total_gpus)
    assert all(combined >= part for part in parts)
    assert jct.mean() >= combined - 1e-6
    assert max(x.end_time for x in recs) >= makespan_lower_bound(r, p, g, cluster.total_gpus) - 1e-6
    summary = summarize(recs, result.samples, cluster, wall_seconds=0)
    assert summary.avg_jct_lower_bound == pytest.approx(combined)
    assert summary.jct_over_bound >= 1 - 1e-9


def _brute_force_optimum(r: list[float], p: list[float]) -> float:
    """Least mean JCT over every non-preemptive order on one GPU (optimal among those; preemption can help)."""
    from itertools import permutations

    best = math.inf
    for order in permutations(range(len(r))):
        t, total = 0.0, 0.0
        for j in order:
            t = max(t, r[j]) + p[j]
            total += t - r[j]
        best = min(best, total / len(r))
    return best


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 10)), min_size=1, max_size=6))
def test_bound_is_below_every_order_on_one_gpu(jobs: list[tuple[int, int]]) -> None:
    r = [float(a) for a, _ in jobs]
    p = [float(b) for _, b in jobs]
    g = [1] * len(jobs)
    assert avg_jct_lower_bound(r, p, g, 1) <= _brute_force_optimum(r, p) + 1e-9
    # With all releases equal, shortest-first is optimal and the bound is exact.
    assert avg_jct_lower_bound([0.0] * len(p), p, g, 1) == pytest.approx(
        _brute_force_optimum([0.0] * len(p), p)
    )


@pytest.mark.parametrize("clock", [0.0, 3325.0, 2.5e6])
def test_a_tight_bound_stays_below_the_exact_schedule_late_in_a_trace(clock: float) -> None:
    # Two 4-GPU jobs of 1.1 s side by side on 8 GPUs: mean JCT exactly 1.1, and the
    # mean-busy-time bound is tight. About time zero, a trace clock of days lifted it
    # by about (clock / p) ulps of the clock above the schedule it bounds; a few ulps of
    # the clock are all any end time there can be exact to.
    mean_p, fluid, busy = avg_jct_lower_bounds([clock, clock], [1.1, 1.1], [4, 4], 8)
    slack = 8 * math.ulp(clock + 1.1)
    assert busy == pytest.approx(1.1, rel=0.0, abs=slack)
    assert max(mean_p, fluid, busy) <= 1.1 + slack
