"""The scenario catalogue: honest timelines, sized clusters, the RL split, the listing."""

from __future__ import annotations

import csv
import math

import pytest
from click.testing import CliRunner

from slurmrl.cli import main
from slurmrl.cluster import load_cluster
from slurmrl.errors import SlurmrlError
from slurmrl.scenarios import SCENARIOS, get_scenario
from slurmrl.scenarios.catalog import PHILLY, may_share_jobs
from slurmrl.sim.experiment import Workload, prepare, run_policy
from slurmrl.traces import load_trace
from slurmrl.traces.store import locate

WEEK = 7 * 86400.0


@pytest.fixture(scope="module")
def workloads() -> dict[str, Workload]:
    return {name: prepare(scenario=name, time_limits=False) for name in SCENARIOS}


def test_every_scenario_builds_on_its_own_timeline(workloads: dict[str, Workload]) -> None:
    for name, wl in workloads.items():
        assert wl.label == name
        assert wl.arrival_scale == 1.0 and wl.target_load is None, name
        assert len(wl.trace.jobs) >= 100, name
        # Sized to the trace or contended by size: neither idle nor a queue that never drains.
        assert math.isfinite(wl.offered_load) and 0.2 < wl.offered_load < 1.6, (name, wl.offered_load)


def test_the_sample_is_the_first_week_on_640_gpus(workloads: dict[str, Workload]) -> None:
    wl = workloads["philly-sample"]
    assert len(wl.trace.jobs) == 11_386 and wl.cluster.total_gpus == 640
    assert wl.trace.jobs[-1].submit_time <= WEEK
    assert wl.offered_load == pytest.approx(0.895, abs=0.005)


def test_contended_variants_shrink_the_cluster_not_the_timeline(workloads: dict[str, Workload]) -> None:
    base = workloads["philly-sample"]
    for name, gpus in (("philly-sample-512", 512), ("philly-sample-448", 448)):
        wl = workloads[name]
        assert wl.cluster.total_gpus == gpus
        assert [j.submit_time for j in wl.trace.jobs] == [j.submit_time for j in base.trace.jobs]
        assert wl.offered_load == pytest.approx(base.offered_load * 640 / gpus)
    assert workloads["philly-4w-512"].offered_load > workloads["philly-4w"].offered_load


def test_rl_split_train_weeks_1_2_eval_weeks_3_4_on_one_cluster(workloads: dict[str, Workload]) -> None:
    roles = {n: sc.role for n, sc in SCENARIOS.items() if n.startswith("philly-512-week") and n[-1].isdigit()}
    assert roles == {
        "philly-512-week1": "train",
        "philly-512-week2": "train",
        "philly-512-week3": "eval",
        "philly-512-week4": "eval",
    }
    windows = [(SCENARIOS[n].start, SCENARIOS[n].end) for n in roles]
    assert windows == [(i * WEEK, (i + 1) * WEEK) for i in range(4)]
    assert {workloads[n].cluster.describe() for n in roles} == {workloads["philly-4w-512"].cluster.describe()}
    # Week 2's split for led training and validation stays inside week 2.
    for name in ("philly-512-week2-head", "philly-512-week2-val", "philly-448-week2-val"):
        sc = SCENARIOS[name]
        assert (
            sc.role == "train"
            and WEEK <= (sc.warmup_start or sc.start or 0.0)
            and (sc.end or 0.0) <= 2 * WEEK
        )
    # Every other Philly scenario with a role is held out, on weeks 3-4 only.
    held = [
        sc for sc in SCENARIOS.values() if sc.trace == PHILLY and sc.role == "eval" and sc.name not in roles
    ]
    assert held and all((sc.role, sc.start, sc.end) == ("eval", 2 * WEEK, 4 * WEEK) for sc in held)


def test_no_evaluation_scenario_shares_a_job_with_a_training_one() -> None:
    """Learned policies are judged on windows they never saw, whichever trace they train on."""
    train = [sc for sc in SCENARIOS.values() if sc.role == "train"]
    held_out = [sc for sc in SCENARIOS.values() if sc.role == "eval"]
    assert len({sc.trace for sc in held_out}) >= 3  # Philly weeks, Gavel VCs, Chronus VCs
    assert not [(t.name, e.name) for t in train for e in held_out if may_share_jobs(t, e)]


def test_the_shipped_rl_checkpoint_runs_on_the_rl_cluster() -> None:
    wl = prepare(scenario="philly-512-week3", limit=120)
    out = run_policy(wl, "topdrl")
    assert out.summary["finished"] == 120


def test_per_vc_scenarios_run_each_vc_on_its_quota(workloads: dict[str, Workload]) -> None:
    with locate("philly/philly_vc_nodes.csv").open() as fh:
        quota = {row["vc"]: int(row["num_nodes"]) for row in csv.DictReader(fh)}
    per_vc = [
        sc for sc in SCENARIOS.values() if sc.vcs and sc.trace == PHILLY
    ]  # Chronus VCs are sized by load
    assert per_vc
    for sc in per_vc:
        (vc,) = sc.vcs
        wl = workloads[sc.name]
        assert {j.vc for j in wl.trace.jobs} == {vc}
        assert len(wl.cluster.nodes) == quota[vc] and wl.cluster.max_gpus_per_node == 8


def test_openb_window_leaves_out_the_sparse_months(workloads: dict[str, Workload]) -> None:
    sc = get_scenario("alibaba-openb")
    full = load_trace(sc.trace_path())
    early = [j for j in full.jobs if j.submit_time < (sc.start or 0.0)]
    kept = workloads["alibaba-openb"].trace.jobs
    assert len(early) < 0.01 * len(full.jobs) and len(kept) + len(early) == len(full.jobs)
    span_days = (kept[-1].submit_time - kept[0].submit_time) / 86400
    assert 30 < span_days < 40
    assert max(j.duration for j in kept) < 40 * 86400  # the 3,500-hour tail is gone


def test_hetero_cluster_mixes_three_gpu_types(workloads: dict[str, Workload]) -> None:
    cluster = load_cluster(get_scenario("philly-hetero").cluster_spec())
    assert {n.gpu_type for n in cluster.nodes} == {"v100", "p100", "k80"}
    assert cluster.total_gpus == workloads["philly-4w"].cluster.total_gpus


@pytest.mark.parametrize("old", ["philly-64-week1", "philly-64-week3", "philly-512-l08", "philly-512-l10"])
def test_old_names_that_meant_compressed_time_are_gone(old: str) -> None:
    with pytest.raises(SlurmrlError, match="unknown scenario"):
        get_scenario(old)


def test_listing_shows_window_cluster_jobs_and_computed_load() -> None:
    result = CliRunner().invoke(main, ["scenarios"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    sample = lines[[i for i, line in enumerate(lines) if line.startswith("philly-sample ")][0] + 1]
    assert "10x8x8:v100" in sample and "640 GPUs" in sample and "11386 jobs" in sample
    assert "offered load 0.89" in sample
    assert "days 114-end" in result.output and "[eval]" in result.output
