"""gittins-limit: the investment curve, its keys, and what it learns from (ended jobs only)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster.model import Placement
from slurmrl.policy import make_policy
from slurmrl.policy.ordering.gittins import (
    CLASS_WINDOW,
    GRID,
    HISTORY_WINDOW,
    MIN_SAMPLES,
    REFRESH_PERIOD,
    GittinsLimit,
    RunTimes,
    investment_curve,
)
from slurmrl.policy.ordering.limits import asked_gpu_time
from slurmrl.policy.placement.first_fit import FirstFit
from slurmrl.policy.view import ClusterView, FinishedJob, JobView
from tests.policy.test_limit_baselines import view_of


def g_at(curve: np.ndarray, x: float) -> float:
    return float(np.interp(x, GRID, curve))


def test_memoryless_run_times_cost_their_mean_whatever_has_run() -> None:
    """Exponential run times: the expected time to invest per completion is the mean at any age."""
    curve = investment_curve(np.random.default_rng(0).exponential(1.0, 400))
    for x in (0.0, 0.1, 0.5, 1.0, 2.0):
        assert 0.75 < g_at(curve, x) < 1.25, x


def test_run_times_near_a_value_get_cheaper_as_the_job_nears_it() -> None:
    """Run times in [0.9, 1.1] of the limit: the nearer the end, the higher the index (SRTF-like)."""
    curve = investment_curve(np.random.default_rng(1).uniform(0.9, 1.1, 400))
    at = [g_at(curve, x) for x in (0.0, 0.5, 0.9, 1.0)]
    assert at == sorted(at, reverse=True)
    assert at[0] == pytest.approx(1.0, rel=0.05) and at[-1] < 0.1


def test_heavy_tailed_run_times_get_dearer_as_the_job_ages() -> None:
    """Pareto run times: a job that has run long is likely to run much longer (LAS-like)."""
    curve = investment_curve(np.random.default_rng(2).pareto(1.2, 400) + 1e-3)
    assert g_at(curve, 0.0) < g_at(curve, 1.0) < g_at(curve, 5.0)


def test_past_every_ended_job_the_curve_is_infinite() -> None:
    curve = investment_curve(np.array([0.1, 0.2, 0.3]))
    assert np.isinf(curve[GRID > 0.3]).all() and np.isfinite(curve[GRID < 0.25]).all()


def job(
    job_id: str, limit: float, *, gpus: int = 1, start: float | None = None, service: float = 0.0
) -> JobView:
    placement = Placement.of([(0, list(range(gpus)))]) if start is not None else None
    return JobView(
        job_id, gpus, 0.0, time_limit=limit, start_time=start, placement=placement, attained_service=service
    )


def test_without_history_a_key_is_the_asked_gpu_time() -> None:
    runs = RunTimes()
    for j in (
        job("a", 3600.0),
        job("b", 86400.0, gpus=4, start=0.0),
        job("c", 600.0, start=0.0, service=300.0),
    ):
        assert runs.key(j, 1000.0) == asked_gpu_time(j)
        assert runs.next_step(j, 1000.0) == math.inf
        assert runs.key_and_step(j, 1000.0) == (asked_gpu_time(j), math.inf)


def learned(pairs: list[tuple[float, float]]) -> RunTimes:
    runs = RunTimes()
    for i, (limit, ran) in enumerate(pairs):
        runs.learn(job(f"done-{i}", limit), ran)
    runs.refresh()
    return runs


def test_history_from_accounting_outlives_the_window_of_recent_ends_and_ages_with_it() -> None:
    """A busy start's first ends are short: they fill the class's window but do not push out what
    accounting told of the class, until as many recent ends have gone by."""
    limit = 86400.0
    runs = RunTimes()
    for i in range(HISTORY_WINDOW):
        runs.learn(job(f"old-{i}", limit), 40000.0, from_accounting=True)
    for i in range(2 * CLASS_WINDOW):
        runs.learn(job(f"new-{i}", limit), 60.0)
    runs.refresh()
    told = RunTimes()
    for i in range(2 * CLASS_WINDOW):
        told.learn(job(f"new-{i}", limit), 60.0)
    told.refresh()
    waiting = job("w", limit)
    # CLASS_WINDOW recent ends went past a full window, aging as many of the history: a fresh ask
    # keys on the rest and the recent ends together, well above what the recent ends alone say.
    assert runs.key(waiting, 0.0) > 5 * told.key(waiting, 0.0)
    for i in range(HISTORY_WINDOW - CLASS_WINDOW):
        runs.learn(job(f"later-{i}", limit), 60.0)
    runs.refresh()
    assert runs.key(waiting, 0.0) == told.key(waiting, 0.0)  # aged out: the recent ends alone


def test_gittins_limit_keeps_what_the_first_view_read_from_accounting_apart() -> None:
    policy = GittinsLimit(FirstFit())
    ended = [job(f"e{i}", 3600.0) for i in range(3)]
    view = view_of("1x1x8", [], now=100.0)
    policy.prepare(
        replace(
            view,
            finished=[FinishedJob(j, 50.0, 600.0, from_accounting=i < 2) for i, j in enumerate(ended)],
        )
    )
    assert policy.runs._count(None) == 3 and len(policy.runs._pooled_history) == 2


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    ages=st.lists(st.floats(0.0, 3e6, allow_nan=False), min_size=1, max_size=30),
    limits=st.lists(
        st.sampled_from([60.0, 900.0, 3600.0, 43200.0, 604800.0, 7777.0]), min_size=1, max_size=30
    ),
)
def test_keys_of_many_jobs_equal_each_jobs_key_to_the_bit(
    seed: int, ages: list[float], limits: list[float]
) -> None:
    rng = np.random.default_rng(seed)
    runs = learned([(limit, limit * rng.random() ** 3 * 1.5) for limit in rng.choice(limits, 200)])
    jobs = [
        job(
            str(i),
            limits[i % len(limits)],
            gpus=int(rng.integers(1, 9)),
            start=2e6 - age,
            service=float(age % 977),
        )
        for i, age in enumerate(ages)
    ]
    assert runs.keys(jobs, 2e6).tolist() == [runs.key(j, 2e6) for j in jobs]
    assert [runs.key_and_step(j, 2e6) for j in jobs] == [
        (runs.key(j, 2e6), runs.next_step(j, 2e6)) for j in jobs
    ]


def test_a_long_limit_whose_class_ends_early_runs_before_a_tight_shorter_one() -> None:
    """7-day asks that end within minutes outrank 4-hour asks that run their 4 hours; srtf-limit ranks them the other way."""
    ended = [(604800.0, 300.0 + 10 * i) for i in range(MIN_SAMPLES)] + [
        (14400.0, 14000.0 + i) for i in range(MIN_SAMPLES)
    ]
    finished = [FinishedJob(job(f"done-{i}", limit), 1.0, ran) for i, (limit, ran) in enumerate(ended)]
    pending = [job("tight", 14400.0), job("loose", 604800.0)]
    view = view_of("1x1x8", [], now=0.0)
    view = ClusterView(0.0, view.cluster, view.pool, tuple(pending), (), tuple(finished))
    assert list(make_policy("gittins-limit").decide(view).order) == ["loose", "tight"]
    assert list(make_policy("srtf-limit").decide(view).order) == ["tight", "loose"]


def test_curves_change_only_once_a_refresh_period_has_passed() -> None:
    policy = GittinsLimit(FirstFit())
    first = [FinishedJob(job(f"a{i}", 3600.0), 1.0, 3000.0) for i in range(MIN_SAMPLES)]
    later = [FinishedJob(job(f"b{i}", 3600.0), 2.0, 60.0) for i in range(3 * MIN_SAMPLES)]
    waiting = job("w", 3600.0)
    base = view_of("1x1x8", [], now=0.0)

    def key_at(now: float, finished: list[FinishedJob]) -> float:
        policy.decide(ClusterView(now, base.cluster, base.pool, (waiting,), (), tuple(finished)))
        return policy.runs.key(waiting, now)

    slow = key_at(10.0, first)
    assert key_at(10.0 + REFRESH_PERIOD / 2, later) == slow  # learned, not yet used
    assert key_at(10.0 + REFRESH_PERIOD, []) < slow  # short runs now dominate the class


def test_a_running_jobs_key_holds_until_the_foreseen_step() -> None:
    runs = learned([(3600.0, 36.0 * (i + 1)) for i in range(100)])
    running = job("r", 3600.0, gpus=2, start=100.0, service=50.0)
    step = runs.next_step(running, 400.0)
    assert 400.0 < step < math.inf
    assert runs.key(running, step - 1e-3) == runs.key(running, 400.0)
    assert runs.key(running, step + 1e-3) != runs.key(running, 400.0)
