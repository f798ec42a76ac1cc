"""The Python API: the same runs as the command line, as dicts and DataFrames."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import slurmrl
from slurmrl.cli import main
from slurmrl.errors import ConfigError, PolicyError, SlurmrlError
from slurmrl.sim.records import JobRecord
from slurmrl.traces.schema import TraceJob

SMALL = {"cluster": "1x2x8", "limit": 200}


@pytest.fixture(scope="module")
def fifo() -> slurmrl.SimulationResult:
    return slurmrl.simulate(policy="fifo", **SMALL)


@pytest.fixture(scope="module")
def pair() -> slurmrl.Comparison:
    return slurmrl.compare(["fifo", "sjf-oracle+topology"], **SMALL)


def test_import_is_cheap() -> None:
    code = "import sys, slurmrl\nprint(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pandas', 'click'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_simulate_matches_the_command_line(fifo) -> None:
    cli = CliRunner().invoke(
        main,
        ["simulate", "--policy", "fifo", "--cluster", "1x2x8", "--limit", "200", "--json", "--no-progress"],
    )
    assert cli.exit_code == 0, cli.output
    printed = json.loads(cli.output)
    shared = (set(fifo.summary) & set(printed)) - {"wall_seconds"}
    assert {"jobs", "avg_jct", "p95_jct", "makespan", "avg_jct_lower_bound"} <= shared
    for key in shared:
        assert fifo.summary[key] == printed[key], key
    assert fifo.meta["policy"] == "fifo" and fifo.label == f"fifo+{fifo.meta['placement']}"


def test_jobs_frame_has_every_record_field_and_derived_times(fifo) -> None:
    jobs = fifo.jobs
    assert isinstance(jobs, pd.DataFrame) and len(jobs) == 200
    assert list(jobs.columns[: len(JobRecord.__dataclass_fields__)]) == list(JobRecord.__dataclass_fields__)
    assert math.isclose(jobs["jct"].mean(), fifo.summary["avg_jct"], rel_tol=1e-12)
    assert (jobs["wait"] >= 0).all()
    assert fifo.timeline["busy_gpus"].max() <= 16


def test_options_reach_the_workload_and_the_simulator() -> None:
    run = slurmrl.simulate(policy="fifo", arrival_scale=2.0, speed_model="none", seed=3, **SMALL)
    assert run.meta["arrival_scale"] == 2.0 and run.meta["speed_model"] == "none" and run.meta["seed"] == 3
    first = slurmrl.traces.load("embedded:philly-sample").head(200)
    assert run.jobs["submit_time"].max() == pytest.approx(first["submit_time"].max() / 2)


def test_an_unknown_option_is_one_line_naming_the_close_ones() -> None:
    with pytest.raises(ConfigError) as info:
        slurmrl.simulate(limt=5)
    text = info.value.format()
    assert "\n" not in text and "'limt'" in text and "did you mean 'limit'" in text
    with pytest.raises(ConfigError, match="'speed'"):
        slurmrl.compare(["fifo"], speed="none")


def test_a_value_of_the_wrong_type_is_one_line_naming_the_option() -> None:
    with pytest.raises(ConfigError) as info:
        slurmrl.simulate(limit="200")  # before: a TypeError from inside the trace selection
    assert info.value.format().startswith("simulate() option 'limit' takes an integer, not '200'")


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("start", math.nan, "start must be a number of seconds"),
        ("end", -math.inf, "end must be a number of seconds"),
        ("arrival_scale", math.inf, "must be a positive number"),
        ("target_load", math.nan, "must be a positive number"),
        ("handover_history", math.inf, "handover_history must be a number of days"),
    ],
)
def test_a_number_that_is_no_number_is_refused(option: str, value: float, words: str) -> None:
    """start=nan kept no job and never ended the replay; arrival_scale=inf put every job at one instant."""
    with pytest.raises(SlurmrlError, match=words):
        slurmrl.simulate(policy="fifo", **SMALL, **{option: value})


def test_compare_gives_one_result_per_policy_and_a_table(pair) -> None:
    assert list(pair) == ["fifo+first-fit", "sjf-oracle+topology"] and len(pair) == 2
    table = pair.table
    assert list(table.index) == list(pair)
    assert table.loc["sjf-oracle+topology", "placement"] == "topology"
    assert not table.loc["sjf-oracle+topology", "deployable"]
    for label in pair:
        assert table.loc[label, "avg_jct"] == pair[label].summary["avg_jct"]
    assert pair["fifo"] is pair["fifo+first-fit"]  # a policy name alone, when it is unambiguous
    with pytest.raises(KeyError):
        pair["tiresias"]


def test_compare_checks_names_before_running() -> None:
    with pytest.raises(PolicyError, match="did you mean 'fifo'"):
        slurmrl.compare("fifo,fifoo", **SMALL)
    with pytest.raises(ConfigError, match="listed twice"):
        slurmrl.compare(["fifo", "fifo+first-fit"], **SMALL)


def test_results_round_trip_through_folders(tmp_path: Path, fifo, pair) -> None:
    back = slurmrl.load_results(fifo.save(tmp_path / "one"))
    assert isinstance(back, slurmrl.SimulationResult)
    assert back.summary["avg_jct"] == fifo.summary["avg_jct"]
    pd.testing.assert_frame_equal(back.jobs, fifo.jobs)
    again = slurmrl.load_results(pair.save(tmp_path / "cmp"))
    assert isinstance(again, slurmrl.Comparison) and list(again) == sorted(pair)
    pd.testing.assert_frame_equal(again.table.sort_index(), pair.table.sort_index())


def test_load_results_reads_what_compare_out_writes(tmp_path: Path) -> None:
    cli = CliRunner().invoke(
        main,
        [
            "compare",
            "--policies",
            "fifo",
            "--cluster",
            "1x2x8",
            "--limit",
            "50",
            "--out",
            str(tmp_path),
            "--no-progress",
        ],
    )
    assert cli.exit_code == 0, cli.output
    loaded = slurmrl.load_results(tmp_path)
    assert list(loaded) == ["fifo+first-fit"] and loaded["fifo"].summary["jobs"] == 50


def test_load_results_of_an_empty_folder_says_what_it_wants(tmp_path: Path) -> None:
    with pytest.raises(SlurmrlError, match="summary.json"):
        slurmrl.load_results(tmp_path)


def test_traces_load_gives_a_frame(tmp_path: Path) -> None:
    sample = slurmrl.traces.load("embedded:philly-sample")
    assert len(sample) == 11386 and list(sample.columns) == list(TraceJob.__dataclass_fields__)
    assert (
        sample["submit_time"].is_monotonic_increasing and sample.attrs["source"] == "embedded:philly-sample"
    )
    path = tmp_path / "t.csv"
    path.write_text(
        "job_id,user,vc,submit_time,duration_s,num_gpus,num_nodes,status,job_type\n"
        "a,u,vc1,5,100,2,,,\nb,u,vc1,0,50,1,1,,\n"
    )
    frame = slurmrl.traces.load(path)
    assert frame["job_id"].tolist() == ["b", "a"] and frame["num_gpus"].tolist() == [1, 2]
    assert frame["num_nodes"].tolist()[0] == 1.0 and math.isnan(frame["num_nodes"].tolist()[1])


def test_sweep_returns_the_table_and_resumes(tmp_path: Path) -> None:
    frame = slurmrl.sweep(
        "fifo,sjf-oracle", "embedded:philly-sample", "2x4x8:v100", out=tmp_path, seeds=2, limit=60,
        target_load=[0.8, 1.2], jobs=1,
    )  # fmt: skip
    assert len(frame) == 2 * 2 * 2
    assert set(frame["target_load"]) == {0.8, 1.2} and set(frame["seed"]) == {0, 1}
    assert frame["avg_jct"].gt(0).all() and frame["fingerprint"].str.len().eq(16).all()
    on_disk = pd.read_csv(tmp_path / "results.csv")
    assert list(on_disk["id"]) == list(frame["id"])
    again = slurmrl.sweep(
        ["fifo", "sjf-oracle"], ["embedded:philly-sample"], ["2x4x8:v100"], out=tmp_path, seeds=2,
        limit=60, target_load=[0.8, 1.2],
    )  # fmt: skip
    assert again.equals(frame)
    with pytest.raises(ConfigError, match="unknown option 'limt'"):
        slurmrl.sweep("fifo", out=tmp_path, limt=5)
