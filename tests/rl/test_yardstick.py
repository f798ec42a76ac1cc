"""Checkpoints are chosen on the training side: a validation window may never be a held-out scenario."""

from __future__ import annotations

import math

import pytest

from slurmrl.errors import ConfigError
from slurmrl.rl.yardstick import mean_jct, validation_workload, validation_workloads
from slurmrl.sim.cutoff import JctCutoff, ReplayAbandoned


def test_validation_refuses_a_held_out_scenario() -> None:
    with pytest.raises(ConfigError, match="not on the training side"):
        validation_workload("philly-448-weeks3-4", 0)


def test_no_validation_window_is_none() -> None:
    assert validation_workload("", 0) is None


def test_the_mean_of_whole_replays_without_a_figure_to_beat() -> None:
    given: list[JctCutoff | None] = []

    def replay(window, cutoff):
        given.append(cutoff)
        return window

    assert mean_jct([100.0, 300.0], replay) == 200.0
    assert given == [None, None]


def test_each_window_is_cut_at_what_the_mean_leaves_it() -> None:
    given: list[float] = []

    def replay(window, cutoff):
        given.append(cutoff.beat)
        if window > cutoff.beat:
            raise ReplayAbandoned(window, cutoff.beat, 0.0)
        return window

    assert mean_jct([100.0, 300.0], replay, beat=250.0) == 200.0
    assert given == [500.0, 400.0]
    given.clear()
    assert mean_jct([100.0, 500.0, 1.0], replay, beat=150.0) == math.inf
    assert given == [450.0, 350.0]  # the third window is never replayed


def test_validation_seeds_must_be_one_or_more() -> None:
    with pytest.raises(ConfigError, match="validate_seeds must be at least 1"):
        validation_workloads(["philly-448-week2-val"], 0, 0)
    assert validation_workloads([], 0, 3) == []
