from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmrl.cli import main
from slurmrl.cluster import cluster_to_toml, load_cluster
from slurmrl.cluster.shorthand import parse_shorthand
from slurmrl.errors import SpecError
from slurmrl.policy.ordering.multifactor import make_slurm
from slurmrl.policy.placement.first_fit import FirstFit
from slurmrl.sim.experiment import SimSettings, prepare, run_policy
from slurmrl.slurm.scheduler_conf import SchedulerSettings

SITE = Path(__file__).parent / "fixtures" / "site"
SMALL_FIRST = SchedulerSettings(
    priority_type="priority/multifactor",
    weight_job_size=100000,
    favor_small=True,
    weight_age=10,
    scheduler_type="sched/backfill",
    bf_interval=60.0,
)


def test_a_cluster_read_from_slurm_conf_carries_its_scheduler() -> None:
    cluster = load_cluster(str(SITE))
    s = cluster.scheduler
    assert s is not None and s.source.endswith("slurm.conf")
    assert (s.priority_type, s.weight_fairshare, s.weight_age, s.bf_interval, s.bf_max_job_test) == (
        "priority/multifactor",
        10000,
        1000,
        30.0,
        500,
    )
    assert load_cluster("1x2x8").scheduler is None


def test_toml_spec_keeps_the_scheduler_section(tmp_path: Path) -> None:
    cluster = replace(parse_shorthand("1x2x8"), scheduler=SMALL_FIRST)
    text = cluster_to_toml(cluster)
    assert "[scheduler]" in text and 'PriorityWeightJobSize = "100000"' in text
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    back = load_cluster(str(spec))
    assert back == cluster and back.scheduler == SMALL_FIRST
    assert "[scheduler]" not in cluster_to_toml(parse_shorthand("1x2x8"))


def test_bad_scheduler_values_are_reported_with_the_spec(tmp_path: Path) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(cluster_to_toml(parse_shorthand("1x2x8")) + '\n[scheduler]\nPriorityMaxAge = "soon"\n')
    with pytest.raises(
        SpecError, match=r"scheduler\.PriorityMaxAge: PriorityMaxAge=soon is not a time"
    ) as err:
        load_cluster(str(spec))
    assert str(spec) in err.value.format()
    spec.write_text("scheduler = 3\n" + cluster_to_toml(parse_shorthand("1x2x8")))
    with pytest.raises(SpecError, match="scheduler: must be a table"):
        load_cluster(str(spec))


def test_from_slurm_writes_and_shows_the_scheduler(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["cluster", "from-slurm", "--conf", str(SITE)])
    assert result.exit_code == 0, result.output
    assert "[scheduler]" in result.output and 'PriorityWeightFairshare = "10000"' in result.output
    assert "scheduler: priority multifactor (age 1000, size 0, fair-share 10000 fair tree" in result.output
    out = tmp_path / "site.toml"
    result = CliRunner().invoke(main, ["cluster", "from-slurm", "--conf", str(SITE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "scheduler: priority multifactor" in result.output
    assert load_cluster(str(out)).scheduler == load_cluster(str(SITE)).scheduler


def test_simulate_slurm_runs_with_the_specs_scheduler(tmp_path: Path) -> None:
    spec = tmp_path / "small-first.toml"
    spec.write_text(cluster_to_toml(replace(parse_shorthand("1x2x8"), scheduler=SMALL_FIRST)))

    def avg_jct(cluster: str) -> float:
        result = CliRunner().invoke(
            main,
            [
                "simulate",
                "--limit",
                "300",
                "--cluster",
                cluster,
                "--policy",
                "slurm",
                "--json",
                "--no-progress",
            ],
        )
        assert result.exit_code == 0, result.output
        return float(json.loads(result.output)["avg_jct"])

    site = avg_jct(str(spec))
    assert site != avg_jct("1x2x8")  # the same hardware under the default weights
    # The run used exactly the spec's settings.
    workload = prepare(cluster="1x2x8", limit=300)
    explicit = run_policy(workload, make_slurm(FirstFit(), settings=SMALL_FIRST), settings=SimSettings())
    assert explicit.summary["avg_jct"] == pytest.approx(site)
