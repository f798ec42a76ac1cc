"""Choosing the time-limit model, the limits a trace brings, and the Spearman the scenario list prints."""

from __future__ import annotations

import pytest

from slurmrl.errors import ConfigError
from slurmrl.sim.experiment import prepare
from slurmrl.sim.limit_models import FROM_TRACE, limit_source, limit_spearman, seed_time_limits
from slurmrl.sim.time_limits import with_time_limits
from slurmrl.traces.schema import Trace, TraceJob


def _trace(n: int = 300) -> Trace:
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


@pytest.mark.parametrize("model", ["user", "lognormal"])
def test_trace_limits_are_kept_and_the_rest_filled(model: str) -> None:
    out = seed_time_limits(_trace(), 7, model)
    for before, after in zip(_trace().jobs, out.jobs, strict=True):
        assert after.time_limit is not None
        if before.time_limit is not None:
            assert after.time_limit == before.time_limit
    assert out == seed_time_limits(_trace(), 7, model)


def test_lognormal_is_the_older_model_unchanged() -> None:
    assert seed_time_limits(_trace(), 3, "lognormal") == with_time_limits(_trace(), 3)


def test_user_limits_rank_philly_durations_far_worse_than_lognormal() -> None:
    def rho(model: str) -> float | None:
        workload = prepare(
            trace="embedded:philly-sample", cluster="10x8x8:v100", limit=3000, limit_model=model
        )
        return limit_spearman(workload.trace)

    user, lognormal = rho("user"), rho("lognormal")
    assert user is not None and lognormal is not None
    assert 0.3 <= user <= 0.6  # logs that record requests: 0.41-0.50
    assert lognormal > user + 0.2


def test_source_is_trace_when_no_job_lacks_a_limit() -> None:
    full = seed_time_limits(_trace(), 0, "user")
    assert limit_source(full, "user") == FROM_TRACE
    assert limit_source(_trace(), "lognormal") == "lognormal"


def test_spearman_is_none_without_pairs() -> None:
    assert limit_spearman(Trace((), "embedded:test", "test")) is None


def test_prepare_defaults_to_user_limits_and_rejects_unknown_models() -> None:
    workload = prepare(trace="embedded:philly-sample", cluster="1x2x8:v100", limit=200)
    assert workload.time_limits == "user"
    older = prepare(trace="embedded:philly-sample", cluster="1x2x8:v100", limit=200, limit_model="lognormal")
    assert older.time_limits == "lognormal"
    assert [j.time_limit for j in workload.trace.jobs] != [j.time_limit for j in older.trace.jobs]
    with pytest.raises(ConfigError, match="unknown time-limit model 'users'"):
        prepare(trace="embedded:philly-sample", cluster="1x2x8:v100", limit=10, limit_model="users")
