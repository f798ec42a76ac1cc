"""The held-out suite: every entry resolves, on ground no training scenario shares a job with."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from slurmrl.errors import ConfigError
from slurmrl.scenarios import SCENARIOS, get_scenario
from slurmrl.scenarios.catalog import may_share_jobs
from slurmrl.scenarios.suite import SHIPPED_SUITES, load_suite
from slurmrl.sim.experiment import prepare, run_policy


@pytest.mark.parametrize("name", sorted(SHIPPED_SUITES))
def test_every_suite_entry_resolves_and_builds(name: str) -> None:
    suite = load_suite(name)
    assert suite.seeds and len(suite.seeds) >= 3
    for run in suite.runs:
        warm = get_scenario(run.scenario).warmup_start is not None
        wl = prepare(scenario=run.scenario, seed=suite.seeds[0], limit=None if warm else 60)
        assert wl.label == run.scenario and wl.trace.jobs


def test_suite_asks_for_the_ground_each_family_needs() -> None:
    suite = load_suite()
    assert set(suite.families()) == {"topdrl", "harmony", "maifs", "meta-rl"}
    names = {r.scenario for r in suite.runs}
    assert {"philly-448-weeks3-4", "philly-448-weeks3-4-warm", "philly-hetero-weeks3-4"} <= names
    assert any(n.startswith("chronus-mix2-") for n in names) and any(
        n.startswith("chronus-slo-") for n in names
    )
    assert any(r.elastic != "off" for r in suite.for_family("maifs"))
    assert all(r.speed_model == "full" for r in suite.for_family("harmony") if r.scenario.startswith("gavel"))


@pytest.mark.parametrize("name", sorted(SHIPPED_SUITES))
def test_no_suite_scenario_shares_a_job_with_a_training_scenario(name: str) -> None:
    train = [sc for sc in SCENARIOS.values() if sc.role == "train"]
    for run in load_suite(name).runs:
        held = get_scenario(run.scenario)
        assert not [t.name for t in train if may_share_jobs(t, held)], run.scenario


def test_the_second_suite_is_on_weeks_no_scenario_of_the_first_reads() -> None:
    """Its ground is the embedded late weeks only, measured and warmed up, so it shares no job with any other scenario."""
    late = {get_scenario(r.scenario) for r in load_suite("heldout-late").runs}
    assert {sc.trace for sc in late} == {"embedded:philly-late"}
    assert set(load_suite("heldout-late").families()) == {"topdrl", "harmony", "maifs"}
    others = [sc for sc in SCENARIOS.values() if sc not in late]
    assert not [sc.name for sc in others if sc.trace == "embedded:philly-late"]
    for sc in late:
        assert (
            4 * 7 * 86400
            <= min(sc.start or 0.0, sc.warmup_start or math.inf)
            < (sc.end or 0.0)
            <= 8 * 7 * 86400
        )


def test_the_third_suite_measures_only_weeks_no_other_scenario_reads() -> None:
    """Weeks 9-10 of the embedded tail, warmed up on weeks 7-8 at most; no other scenario measures the tail."""
    tail = {get_scenario(r.scenario) for r in load_suite("heldout-tail").runs}
    assert {sc.trace for sc in tail} == {"embedded:philly-tail"}
    assert set(load_suite("heldout-tail").families()) == {"topdrl", "harmony", "maifs"}
    assert not [sc.name for sc in SCENARIOS.values() if sc not in tail and sc.trace == "embedded:philly-tail"]
    week = 7 * 86400
    for sc in tail:
        assert (sc.start, sc.end) == (8 * week, 10 * week)
        assert sc.warmup_start in (None, 6 * week)


def test_a_suite_is_named_or_given_by_path() -> None:
    assert load_suite("heldout-late").source.endswith("heldout-late.toml")
    with pytest.raises(ConfigError, match="cannot read the suite"):
        load_suite("heldout-later")


def test_suite_gavel_vcs_were_used_by_no_earlier_scenario() -> None:
    earlier = {"6c71a0", "b436b2", "ee9e8c", "0e4a51"}
    gavel = {
        r.scenario.removeprefix("gavel-msr-") for r in load_suite().runs if r.scenario.startswith("gavel")
    }
    assert gavel and not gavel & earlier


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version = 2\nseeds = [1]\n", "'version' must be 1"),
        ("version = 1\nseeds = []\n", "'seeds'"),
        ('version = 1\nseeds = [1]\n[[topdrl]]\nscenario = "philly-512-week1"\n', "role 'train'"),
        ('version = 1\nseeds = [1]\n[[fifo]]\nscenario = "philly-448-weeks3-4"\n', "not a learned policy"),
        ('version = 1\nseeds = [1]\n[[topdrl]]\nscenario = "nope"\n', "unknown scenario"),
        (
            'version = 1\nseeds = [1]\n[[topdrl]]\nscenario = "philly-448-weeks3-4"\nspeed = "x"\n',
            "unknown key",
        ),
        ('version = 1\nseeds = [1]\n[[maifs]]\nscenario = "philly-448-weeks3-4"\nelastic = "x"\n', "elastic"),
        ("version = 1\nseeds = [1\n", "not valid TOML"),
    ],
)
def test_a_bad_suite_is_one_error_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load_suite(path)
    assert str(path) in str(info.value)


def test_warm_start_measures_only_the_jobs_after_the_hand_over() -> None:
    """The heuristic replays weeks 1-2; the policy under test takes over; weeks 3-4 are measured."""
    wl = prepare(scenario="philly-448-weeks3-4-warm", seed=0)
    cold = prepare(scenario="philly-448-weeks3-4", seed=0)
    assert wl.handover is not None and wl.warm_policy == "slurm"
    measured = [j for j in wl.trace.jobs if j.submit_time >= wl.handover]
    assert [j.job_id for j in measured] == [j.job_id for j in cold.trace.jobs]
    assert len(wl.trace.jobs) > len(measured) and wl.trace.jobs[0].submit_time < 7 * 86400


def test_hand_over_runs_the_heuristic_first_and_reports_the_measured_jobs() -> None:
    from dataclasses import replace

    wl = prepare(scenario="philly-448-weeks3-4-warm", seed=0)
    at = wl.handover
    assert at is not None
    # A short slice around the hand-over: 300 warm-up jobs, 200 measured ones.
    first = next(i for i, j in enumerate(wl.trace.jobs) if j.submit_time >= at)
    jobs = wl.trace.jobs[first - 300 : first + 200]
    small = replace(wl, trace=replace(wl.trace, jobs=jobs))
    out = run_policy(small, "fifo-backfill")
    assert out.summary["jobs"] == 200 and {r.job_id for r in out.records} == {j.job_id for j in jobs[300:]}
    assert out.meta["warm_policy"] == "slurm" and out.meta["handover"] == at


def test_a_limit_that_keeps_only_warm_up_jobs_is_one_clear_error() -> None:
    from click.testing import CliRunner

    from slurmrl.cli import main

    result = CliRunner().invoke(main, ["simulate", "--scenario", "philly-448-weeks3-4-warm", "--limit", "50"])
    assert result.exit_code != 0 and "keeps no job after its warm-up window" in result.output
    assert "Traceback" not in result.output


def test_a_warm_start_inside_the_trace_hands_over_on_the_rebased_timeline() -> None:
    """Week 2's validation days: days 7-11 under slurm, then days 11-14 measured."""
    wl = prepare(scenario="philly-512-week2-val", seed=0)
    week2 = prepare(scenario="philly-512-week2", seed=0)
    assert wl.handover is not None and wl.warm_policy == "slurm"
    assert [j.job_id for j in wl.trace.jobs] == [j.job_id for j in week2.trace.jobs]
    measured = [j for j in wl.trace.jobs if j.submit_time >= wl.handover]
    assert 0 < len(measured) < len(wl.trace.jobs)
    assert min(j.submit_time for j in measured) >= 4 * 86400
