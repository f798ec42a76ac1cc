from dataclasses import fields, replace

from slurmrl.traces.schema import TraceJob


def test_with_time_limit_keeps_every_other_field() -> None:
    """Every field set away from its default (a field added later too) survives the spelled-out copy."""
    values = {"str": "x", "float": 7.5, "int": 3, "int | None": 2, "float | None": 9.0}
    job = TraceJob(**{f.name: values[str(f.type)] for f in fields(TraceJob)})
    assert job.with_time_limit(60.0) == replace(job, time_limit=60.0)
