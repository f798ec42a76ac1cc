"""Checkpoints are chosen on the training side: a validation window may never be a held-out scenario."""

from __future__ import annotations

import pytest

from slurmrl.errors import ConfigError
from slurmrl.rl.yardstick import validation_workload


def test_validation_refuses_a_held_out_scenario() -> None:
    with pytest.raises(ConfigError, match="not on the training side"):
        validation_workload("philly-448-weeks3-4", 0)


def test_no_validation_window_is_none() -> None:
    assert validation_workload("", 0) is None
