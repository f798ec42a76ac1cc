"""Which model invents time limits for jobs a trace gives none, and how well they predict durations.

``user`` (the default, :mod:`slurmrl.sim.user_limits`) follows what users
write in logs that record both request and run time; ``lognormal``
(:mod:`slurmrl.sim.time_limits`) is the older duration x log-normal factor,
a far better hint than real users give, kept to reproduce earlier results
and to study what better estimates are worth. Limits a trace records are
always kept.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from slurmrl.errors import ConfigError
from slurmrl.traces.schema import Trace

LIMIT_MODELS: tuple[str, ...] = ("user", "lognormal")
DEFAULT_LIMIT_MODEL = "user"
FROM_TRACE = "trace"  # what a workload records when every job came with its own limit


def check_limit_model(name: str) -> str:
    if name not in LIMIT_MODELS:
        raise ConfigError(
            f"unknown time-limit model '{name}'; known: {', '.join(LIMIT_MODELS)}", column="limits"
        )
    return name


def seed_time_limits(trace: Trace, seed: int, model: str = DEFAULT_LIMIT_MODEL) -> Trace:
    """``trace`` with a modelled limit for every job that has none."""
    check_limit_model(model)
    if model == "lognormal":
        from slurmrl.sim.time_limits import with_time_limits

        return with_time_limits(trace, seed)
    from slurmrl.sim.user_limits import user_time_limits

    missing = [i for i, job in enumerate(trace.jobs) if job.time_limit is None]
    if not missing:
        return trace
    limits = user_time_limits(
        np.array([trace.jobs[i].duration for i in missing]),
        np.array([trace.jobs[i].job_id for i in missing], dtype=object),
        seed,
    )
    jobs = list(trace.jobs)
    for i, limit in zip(missing, limits.tolist(), strict=True):
        jobs[i] = jobs[i].with_time_limit(limit)
    return replace(trace, jobs=tuple(jobs))


def limit_source(trace: Trace, model: str) -> str:
    """What a workload's limits come from: the model, or ``trace`` when no job lacked one."""
    return model if any(job.time_limit is None for job in trace.jobs) else FROM_TRACE


def limit_spearman(trace: Trace) -> float | None:
    """Spearman rank correlation of time limits with true durations (jobs with a limit); None if undefined."""
    pairs = [(j.time_limit, j.duration) for j in trace.jobs if j.time_limit is not None]
    if len(pairs) < 2:
        return None
    import pandas as pd  # the scenario list's column only: a replay never imports pandas

    frame = pd.DataFrame(pairs, columns=["limit", "duration"])
    rho = frame["limit"].rank().corr(frame["duration"].rank())
    return None if pd.isna(rho) else float(rho)
