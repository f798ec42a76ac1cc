from __future__ import annotations

import statistics

from slurmrl.sim.time_limits import DAY, MAX_LIMIT, ROUND_VALUES, time_limit_for, with_time_limits
from slurmrl.traces.schema import Trace, TraceJob


def trace(n: int = 400) -> Trace:
    jobs = tuple(
        TraceJob(
            f"j{i}",
            float(i),
            duration=30.0 * (1.7 ** (i % 23)),
            num_gpus=1,
            time_limit=1234.0 if i % 50 == 0 else None,
        )
        for i in range(n)
    )
    return Trace(jobs, "embedded:test", "test")


def test_limits_cover_durations_and_are_round() -> None:
    out = with_time_limits(trace(), seed=7)
    for before, after in zip(trace().jobs, out.jobs, strict=True):
        if before.time_limit is not None:
            assert after.time_limit == before.time_limit  # kept as given
            continue
        assert after.time_limit is not None and after.time_limit >= before.duration
        listed = after.time_limit in ROUND_VALUES
        assert listed or (after.time_limit > MAX_LIMIT and after.time_limit % DAY == 0)


def test_limits_are_deterministic_per_seed_and_job() -> None:
    a = with_time_limits(trace(), seed=1)
    assert a == with_time_limits(trace(), seed=1)
    assert a != with_time_limits(trace(), seed=2)
    # A job's limit does not depend on which other jobs are in the trace.
    job = trace().jobs[5]
    assert time_limit_for(job, 1) == a.jobs[5].time_limit
    small = Trace(trace().jobs[3:8], "embedded:test", "test")
    assert with_time_limits(small, seed=1).jobs[2].time_limit == a.jobs[5].time_limit


def test_users_mostly_over_estimate() -> None:
    jobs = [TraceJob(f"j{i}", 0.0, duration=1000.0, num_gpus=1) for i in range(2000)]
    ratios = [time_limit_for(j, 3) / j.duration for j in jobs]
    assert 2.0 <= statistics.median(ratios) <= 8.0
    assert sum(r >= 2 for r in ratios) / len(ratios) > 0.6
    week_long = TraceJob("w", 0.0, duration=9 * DAY, num_gpus=8)
    assert time_limit_for(week_long, 0) == 9 * DAY  # beyond the maximum: whole days, still not killed
