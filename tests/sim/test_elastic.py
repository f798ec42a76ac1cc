"""Elastic jobs in the simulator: the --elastic rule, starts on other counts, resizes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmrl.cli import main
from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import Placement
from slurmrl.errors import ConfigError, PolicyError
from slurmrl.policy import make_policy
from slurmrl.policy.view import ClusterView, Decisions, Start
from slurmrl.sim.elastic import ElasticRule, parse_elastic, power_of_two_range
from slurmrl.sim.experiment import SimSettings, prepare, run_policy, save_run
from slurmrl.sim.simulator import DEFAULT_RESTART_OVERHEAD_S, SimConfig, Simulator
from slurmrl.traces.schema import Trace, TraceJob

ELASTIC_ALL = SimConfig(speed_model="none", elastic="fraction:1")


def _trace(*jobs: TraceJob) -> Trace:
    return Trace(tuple(jobs), "test", "constructed")


class Script:
    """A policy that plays fixed decisions at given instants."""

    name = "script"
    deployable = True
    preemptive = False

    def __init__(self, plan: Mapping[float, Decisions]) -> None:
        self.plan = plan

    def bind_oracle(self, durations: Mapping[str, float]) -> None:
        pass

    def decide(self, view: ClusterView) -> Decisions:
        return self.plan.get(view.now, Decisions())


def _on(node: int, gpus: range) -> Placement:
    return Placement.of([(node, list(gpus))])


# -- the rule ---------------------------------------------------------------


def test_parse_accepts_off_and_fractions() -> None:
    assert parse_elastic("off") == ElasticRule() and not ElasticRule().on
    assert parse_elastic("fraction:0.5") == ElasticRule(0.5)
    assert str(parse_elastic("fraction:0.25")) == "fraction:0.25" and str(ElasticRule()) == "off"


@pytest.mark.parametrize("text", ["fraction:1.5", "fraction:-0.1", "fraction:x", "fraction", "on", "half"])
def test_parse_rejects_with_one_line_naming_the_field(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_elastic(text)
    assert "\n" not in str(err.value) and "elastic" in str(err.value) and text in str(err.value)


def test_the_rule_is_seeded_and_keeps_its_share() -> None:
    ids = [f"job-{i}" for i in range(4000)]
    rule = ElasticRule(0.3)
    chosen = {i for i in ids if rule.chosen(i, seed=1)}
    assert chosen == {i for i in ids if rule.chosen(i, seed=1)}  # same seed, same jobs
    assert chosen != {i for i in ids if rule.chosen(i, seed=2)}
    assert abs(len(chosen) / len(ids) - 0.3) < 0.03
    assert not any(ElasticRule(0.0).chosen(i, 1) for i in ids)
    assert all(ElasticRule(1.0).chosen(i, 1) for i in ids)


@pytest.mark.parametrize(
    "gpus, ceiling, expected",
    [
        (1, 64, (1, 2)),
        (2, 64, (1, 4)),
        (3, 64, (2, 4)),
        (6, 64, (4, 8)),
        (8, 64, (4, 16)),
        (8, 8, (4, 8)),
        (8, 4, (4, 8)),
        (1, 1, None),
        (16, 40, (8, 32)),
    ],
)
def test_ranges_span_powers_of_two_from_half_to_twice(gpus: int, ceiling: int, expected) -> None:
    assert power_of_two_range(gpus, ceiling) == expected


def test_views_carry_the_ranges_and_rigid_runs_carry_none() -> None:
    trace = _trace(TraceJob("a", 0.0, 100.0, 4, model="resnet50"), TraceJob("b", 0.0, 100.0, 1, model="ncf"))
    cluster = load_cluster("1x2x8:v100")
    elastic = Simulator(trace, cluster, config=ELASTIC_ALL)
    assert elastic.runs["a"].view.gpu_range == (2, 8)
    assert (
        elastic.runs["b"].view.gpu_range is None
    )  # NCF gains nothing from a second GPU (Pollux caps it at one)
    rigid = Simulator(trace, cluster, config=SimConfig(speed_model="none"))
    assert all(run.view.gpu_range is None for run in rigid.runs.values())


# -- starts and resizes -----------------------------------------------------


def test_a_rigid_job_refuses_another_count() -> None:
    sim = Simulator(_trace(TraceJob("a", 0.0, 100.0, 1)), load_cluster("1x1x8"), config=SimConfig())
    with pytest.raises(PolicyError, match="gave job a 2 GPUs; it asked for 1"):
        sim.run(Script({0.0: Decisions(starts=(Start("a", _on(0, range(2))),))}))


def test_an_elastic_job_refuses_a_count_outside_its_range() -> None:
    sim = Simulator(
        _trace(TraceJob("a", 0.0, 100.0, 4, model="bert")), load_cluster("1x2x8"), config=ELASTIC_ALL
    )
    with pytest.raises(PolicyError, match="gave job a 16 GPUs; it asked for 2-8"):
        sim.run(Script({0.0: Decisions(starts=(Start("a", Placement.of([(0, range(8)), (1, range(8))])),))}))


@pytest.mark.parametrize("gpus", [2, 4, 8])
def test_an_elastic_start_runs_for_duration_times_the_speed_ratio(gpus: int) -> None:
    sim = Simulator(
        _trace(TraceJob("a", 0.0, 10_000.0, 4, model="resnet50")),
        load_cluster("1x2x8:v100"),
        config=ELASTIC_ALL,
    )
    record = sim.run(Script({0.0: Decisions(starts=(Start("a", _on(0, range(gpus))),))})).records[0]
    ratio = sim.scaling.throughput("resnet50", 4) / sim.scaling.throughput("resnet50", gpus)
    assert record.end_time == pytest.approx(10_000.0 * ratio, rel=1e-12)
    assert (record.end_time < 10_000.0) == (gpus > 4)
    if gpus == 4:
        assert record.end_time == 10_000.0  # the traced count runs exactly its duration


def test_a_resize_charges_the_restart_delay_once() -> None:
    trace = _trace(
        TraceJob("a", 0.0, 10_000.0, 4, model="resnet50"), TraceJob("b", 1_000.0, 100.0, 8, model="bert")
    )
    sim = Simulator(trace, load_cluster("1x2x8:v100"), config=ELASTIC_ALL)
    plan = {
        0.0: Decisions(starts=(Start("a", _on(0, range(4))),)),
        1_000.0: Decisions(
            preempt=("a",), starts=(Start("a", _on(0, range(8))), Start("b", _on(1, range(8))))
        ),
    }
    records = {r.job_id: r for r in sim.run(Script(plan)).records}
    speedup = sim.scaling.count_factor("resnet50", 8, 4)
    expected = 1_000.0 + (9_000.0 + DEFAULT_RESTART_OVERHEAD_S) / speedup
    assert records["a"].end_time == pytest.approx(expected, rel=1e-12)
    assert records["a"].preemptions == 1
    assert records["b"].end_time == 1_100.0  # started on its traced count


def test_rigid_policies_stay_rigid_so_elastic_runs_replay_them_bit_for_bit() -> None:
    workload = prepare(trace="embedded:philly-sample", cluster="1x4x8:v100", limit=200)
    for policy in ("fifo", "fifo-backfill", "tiresias", "slurm"):
        off = Simulator(workload.trace, workload.cluster, config=SimConfig()).run(make_policy(policy))
        on = Simulator(workload.trace, workload.cluster, config=SimConfig(elastic="fraction:1")).run(
            make_policy(policy)
        )
        # The same schedule; only elastic jobs' processing times (best_time) know their ranges.
        assert [replace(r, best_time=0.0) for r in on.records] == [
            replace(r, best_time=0.0) for r in off.records
        ]
        assert any(a.best_time < b.best_time for a, b in zip(on.records, off.records, strict=True)), policy


def test_the_setting_is_recorded_in_meta_and_summary(tmp_path: Path) -> None:
    workload = prepare(trace="embedded:philly-sample", cluster="1x2x8:v100", limit=40)
    out = run_policy(workload, "afs", settings=SimSettings(elastic="fraction:0.5"))
    assert out.meta["elastic"] == "fraction:0.5"
    save_run(tmp_path, out)
    assert json.loads((tmp_path / "summary.json").read_text())["elastic"] == "fraction:0.5"
    assert run_policy(workload, "fifo").meta["elastic"] == "off"


def test_the_cli_error_for_a_bad_setting_is_one_line() -> None:
    result = CliRunner().invoke(
        main,
        [
            "simulate",
            "--trace",
            "embedded:philly-sample",
            "--cluster",
            "1x2x8",
            "--limit",
            "10",
            "--no-progress",
            "--elastic",
            "fraction:2",
        ],
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "--elastic" in errors[0] and "fraction:2" in errors[0], result.output


def test_the_cli_runs_elastic_and_prints_the_setting() -> None:
    result = CliRunner().invoke(
        main,
        [
            "simulate",
            "--trace",
            "embedded:philly-sample",
            "--cluster",
            "1x2x8",
            "--limit",
            "30",
            "--no-progress",
            "--policy",
            "afs",
            "--elastic",
            "fraction:0.5",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["meta"]["elastic"] == "fraction:0.5"


def test_an_elastic_jobs_processing_time_is_its_fastest_count() -> None:
    trace = _trace(TraceJob("a", 0.0, 10_000.0, 4, model="resnet50"))
    sim = Simulator(trace, load_cluster("1x2x8:v100"), config=ELASTIC_ALL)
    record = sim.run(Script({0.0: Decisions(starts=(Start("a", _on(0, range(4))),))})).records[0]
    assert record.best_time == pytest.approx(10_000.0 / sim.scaling.count_factor("resnet50", 8, 4), rel=1e-12)
    rigid = Simulator(trace, load_cluster("1x2x8:v100"), config=SimConfig(speed_model="none"))
    assert (
        rigid.run(Script({0.0: Decisions(starts=(Start("a", _on(0, range(4))),))})).records[0].best_time
        == 10_000.0
    )
