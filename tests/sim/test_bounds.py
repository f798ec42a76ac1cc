from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.sim.bounds import (
    avg_jct_lower_bound,
    jct_lower,
    makespan_lower_bound,
    srpt_fluid_response_times,
)


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


def test_full_trace_size_is_fast() -> None:
    rng = np.random.default_rng(1)
    n = 46_070
    r = np.sort(rng.uniform(0, 60 * 86400, n))
    p = rng.lognormal(7, 2, n)
    g = rng.choice([1, 2, 4, 8, 16], n)
    t0 = time.perf_counter()
    avg = avg_jct_lower_bound(r, p, g, 2000)
    mk = makespan_lower_bound(r, p, g, 2000)
    assert time.perf_counter() - t0 < 1.0
    assert avg >= p.mean() and mk >= (r + p).max()
