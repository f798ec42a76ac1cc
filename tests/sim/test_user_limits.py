"""The user time-limit model: determinism per (seed, job), and the shape real requests have."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.sim.user_limits import (
    DAY,
    MAX_LIMIT,
    ROUND_VALUES,
    UserLimitModel,
    job_uniforms,
    user_time_limits,
)


def _jobs(n: int = 20_000, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Durations spread like DL jobs (log-normal, median about 20 min, a long tail)."""
    rng = np.random.default_rng(seed)
    return rng.lognormal(np.log(1200.0), 2.0, n), np.array([f"job-{i}" for i in range(n)], dtype=object)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(pd.Series(a).rank().corr(pd.Series(b).rank()))


def test_same_seed_same_limits_other_seed_other_limits() -> None:
    d, ids = _jobs(2000)
    a = user_time_limits(d, ids, seed=3)
    assert np.array_equal(a, user_time_limits(d, ids, seed=3))
    assert np.mean(a != user_time_limits(d, ids, seed=4)) > 0.3


def test_a_jobs_limit_does_not_depend_on_the_other_jobs() -> None:
    d, ids = _jobs(500)
    whole = user_time_limits(d, ids, seed=1)
    order = np.random.default_rng(0).permutation(500)[:120]
    part = user_time_limits(d[order], ids[order], seed=1)
    assert np.array_equal(part, whole[order])


def test_uniforms_are_uniform_and_streams_independent() -> None:
    u = job_uniforms(np.array([f"x{i}" for i in range(50_000)], dtype=object), 9, 2)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    assert abs(np.corrcoef(u[0], u[1])[0, 1]) < 0.02


def test_shares_follow_the_logs() -> None:
    d, ids = _jobs()
    limits = user_time_limits(d, ids, seed=0)
    model = UserLimitModel()
    at_max = np.mean(limits == MAX_LIMIT)
    assert model.at_max <= at_max <= model.at_max + 0.1  # plus the jobs whose only cover is the maximum
    round_share = np.mean(np.isin(limits, ROUND_VALUES))
    assert 0.8 <= round_share <= 0.97  # modal, with the tight users' minutes and long-job exceptions besides
    under = np.mean(limits < d)
    assert 0.02 <= under <= model.under  # short jobs have no round value below them
    ratio = limits / d
    assert 4.0 <= np.median(ratio) <= 20.0  # heavy over-estimates (logs: 2.2x and 13.5x)
    assert np.percentile(ratio, 90) > 100.0
    assert 0.3 <= _spearman(limits, d) <= 0.7  # logs: 0.41-0.50; the lognormal model: 0.88


def test_limits_are_whole_minutes_and_long_jobs_get_whole_day_exceptions() -> None:
    d, ids = _jobs()
    limits = user_time_limits(d, ids, seed=2)
    assert np.all(limits % 60 == 0) and np.all(limits >= 60)
    long = d > MAX_LIMIT
    assert long.any()
    covered = long & (limits >= d)
    assert np.all(limits[covered] % DAY == 0)
    assert np.all(limits[long & ~covered] == MAX_LIMIT)  # the under-estimating users of long jobs


def test_shares_are_parameters() -> None:
    d, ids = _jobs(5000)
    none = UserLimitModel(at_max=0.0, under=0.0, tight=0.0, popular=0.0)
    limits = user_time_limits(d, ids, seed=0, model=none)
    assert np.all(limits >= d)
    assert np.mean(limits == MAX_LIMIT) < 0.05
    with pytest.raises(ValueError, match="sum to at most 1"):
        UserLimitModel(at_max=0.6, popular=0.5)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(min_value=0.0, max_value=60 * DAY, allow_nan=False), min_size=1, max_size=40),
    st.integers(min_value=0, max_value=2**63),
)
def test_every_limit_is_positive_and_only_under_estimates_fall_short(
    durations: list[float], seed: int
) -> None:
    d = np.array(durations)
    ids = np.array([f"h{i}" for i in range(len(d))], dtype=object)
    limits = user_time_limits(d, ids, seed)
    assert np.all(np.isfinite(limits)) and np.all(limits >= 60)
    short = limits < d
    # A limit short of the duration is a round value below it (or the maximum, for jobs beyond it).
    assert np.all(np.isin(limits[short], ROUND_VALUES))
