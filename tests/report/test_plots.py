"""Plots stay readable when one run is far off the others: the value axis is cut, with a note."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from slurmrl.report import plots
from slurmrl.report.plots import CUT_HEADROOM, axis_cut
from slurmrl.report.runs import Scenario, load_scenarios
from tests.report import sitedata


def test_comparable_runs_keep_the_whole_axis() -> None:
    assert axis_cut({"fifo-backfill": 27.0, "qssf": 29.0, "slurm": 17.0, "tiresias": 6.0}) is None
    assert axis_cut({"a": 10.0, "b": 2.5}) is None  # 4x apart: the smaller still fills a quarter
    assert axis_cut({"only": 100.0}) is None


def test_one_outlier_cuts_the_axis_above_the_others() -> None:
    cut = axis_cut({"fifo": 160.0, "qssf": 29.0, "slurm": 17.0})
    assert cut is not None
    assert cut.top == pytest.approx(29.0 * CUT_HEADROOM)
    assert cut.outliers == (("fifo", 160.0),)
    assert cut.note(" h") == "axis cut at 33 h, above: fifo up to 160 h"


def test_at_least_half_the_runs_are_drawn_whole() -> None:
    cut = axis_cut({"a": 1000.0, "b": 100.0, "c": 10.0, "d": 9.0})
    assert cut is not None and [label for label, _ in cut.outliers] == ["a", "b"]
    cut = axis_cut({"a": 1000.0, "b": 100.0, "c": 10.0})  # b would be half of three: kept whole
    assert cut is not None and [label for label, _ in cut.outliers] == ["a"]


def test_no_cut_when_the_others_are_all_zero_or_unknown() -> None:
    assert axis_cut({"fifo": 50.0, "tiresias": 0.0, "srtf": 0.0}) is None
    assert axis_cut({"fifo": math.nan, "a": 1.0, "b": 1.2}) is None


def _scenario(root: Path, outlier: bool) -> Scenario:
    """fifo-backfill and sjf-oracle on four jobs, and fifo made to wait 500,000 s more per job."""
    runs = root / "runs"
    late = 500_000.0 if outlier else 0.0
    fifo_jobs = []
    for line in sitedata.FOUR_JOBS_SJF:
        cells = line.split(",")
        cells[6], cells[7] = str(float(cells[6]) + late), str(float(cells[7]) + late)
        fifo_jobs.append(",".join(cells))
    fifo = sitedata.write_run(runs / "fifo", policy="fifo", workload="w", jobs=fifo_jobs)
    if outlier:
        rows = ["0.0,8,900,1,0.0", "600.0,16,800,2,0.0", "4000.0,4,700,1,0.5", "12000.0,0,0,0,0.0"]
        (fifo / "timeline.csv").write_text("\n".join([sitedata.TIMELINE_HEADER, *rows]) + "\n")
    for policy in ("fifo-backfill", "sjf-oracle"):
        sitedata.write_run(runs / policy, policy=policy, workload="w", jobs=sitedata.FOUR_JOBS_SJF)
    (scenario,) = load_scenarios([runs])
    return scenario


def test_an_outlier_run_cuts_every_linear_value_axis_and_says_so(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, outlier=True)
    colors = plots.colors_for(scenario.runs)
    wait = plots.wait_by_gpus(scenario, colors)
    assert "axis cut at" in wait and "above: fifo+first-fit up to 140 h" in wait  # 503,900 s
    fairness, _ = plots.fairness(scenario, colors)
    assert "axis cut at" in fairness and "above: fifo+first-fit up to" in fairness
    over_time = plots.over_time(scenario, colors)
    assert "above: fifo+first-fit up to" in over_time and " jobs" in over_time


def test_runs_alike_draw_whole_axes_without_a_note(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, outlier=False)
    colors = plots.colors_for(scenario.runs)
    svgs = [plots.wait_by_gpus(scenario, colors), plots.fairness(scenario, colors)[0]]
    svgs.append(plots.over_time(scenario, colors))
    assert not any("axis cut" in svg for svg in svgs)
