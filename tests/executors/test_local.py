"""The local executor: every item's outcome, the same in a pool as in this process."""

from __future__ import annotations

import math

import pytest

from slurmrl.errors import ConfigError
from slurmrl.executors import make_executor
from slurmrl.executors.local import LocalExecutor, available_cores

ITEMS = [4.0, -1.0, 9.0, 16.0, 2.25]


def _outcomes(jobs: int) -> dict[int, tuple[object, str | None]]:
    # math.sqrt: a task importable in the workers that fails on one item.
    return {o.index: (o.value, o.error) for o in LocalExecutor(jobs).run(math.sqrt, ITEMS)}


def test_pool_gives_every_outcome_as_serial_does() -> None:
    serial = _outcomes(1)
    assert serial == _outcomes(2)
    assert serial[0] == (2.0, None) and serial[4] == (1.5, None)
    value, error = serial[1]
    assert value is None and error == "ValueError: math domain error"


def test_default_is_every_core_and_jobs_must_be_positive() -> None:
    assert LocalExecutor().jobs == available_cores() >= 1
    assert make_executor("local", jobs=3).describe(2) == "2 task(s) on 2 local process(es)"
    with pytest.raises(ConfigError, match="--jobs must be at least 1"):
        LocalExecutor(0)
    with pytest.raises(ConfigError, match="unknown executor 'ray'"):
        make_executor("ray")
