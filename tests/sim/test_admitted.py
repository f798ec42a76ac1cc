"""Kept admissions: a replay of a trace admitted before in the process starts from what was kept,
and decides exactly as a first replay does."""

from __future__ import annotations

import pytest

from slurmrl.policy import make_policy
from slurmrl.sim.admitted import ADMISSIONS, Admissions
from slurmrl.sim.elastic import ElasticRule
from slurmrl.sim.experiment import prepare
from slurmrl.sim.simulator import SimConfig, Simulator


@pytest.fixture(autouse=True)
def empty() -> None:
    ADMISSIONS._kept.clear()


def _first_view(sim: Simulator) -> object:
    return next(iter(sim.runs.values())).view


def _records(sim: Simulator, policy: str) -> list[tuple[object, ...]]:
    result = sim.run(make_policy(policy))
    return sorted((r.job_id, r.start_time, r.end_time, r.nodes, r.preemptions) for r in result.records)


@pytest.mark.parametrize("policy", ["fifo-backfill", "tiresias"])
def test_a_kept_admission_replays_as_a_first_one(policy: str) -> None:
    workload = prepare(cluster="2x4x8", target_load=2.0, limit=300)
    config = SimConfig(seed=3, speed_model="placement")
    first = _records(Simulator(workload.trace, workload.cluster, config=config), policy)
    again = [Simulator(workload.trace, workload.cluster, config=config) for _ in range(2)]
    assert _first_view(again[0]) is _first_view(again[1])  # shared, not admitted again
    # Replays leave the kept queue as it was.
    assert [_records(sim, policy) for sim in again] == [first, first]


def test_other_settings_admit_afresh() -> None:
    workload = prepare(cluster="2x4x8", limit=50)
    base = _first_view(Simulator(workload.trace, workload.cluster, config=SimConfig(seed=0)))
    for config in (SimConfig(seed=1), SimConfig(reveal_models=True), SimConfig(locality="any")):
        assert _first_view(Simulator(workload.trace, workload.cluster, config=config)) is not base


def test_elastic_admissions_are_not_kept() -> None:
    workload = prepare(cluster="2x4x8", limit=50)
    Simulator(workload.trace, workload.cluster, config=SimConfig(elastic=ElasticRule(0.5)))
    assert not ADMISSIONS._kept


def test_only_the_last_few_and_only_for_the_same_jobs() -> None:
    kept = Admissions(keep=2)
    settings = ("any settings",)
    workloads = [prepare(cluster="2x4x8", limit=20 + k) for k in range(3)]
    for w in workloads:
        Simulator(w.trace, w.cluster, config=SimConfig())
        admitted = next(iter(ADMISSIONS._kept.values()))
        ADMISSIONS._kept.clear()
        kept.put(admitted, settings)
    assert kept.get(workloads[0].trace.jobs, workloads[0].cluster, settings) is None  # the oldest left
    for w in workloads[1:]:
        assert kept.get(w.trace.jobs, w.cluster, settings) is not None
        assert (
            kept.get(tuple(w.trace.jobs[:-1]) + w.trace.jobs[-1:], w.cluster, settings) is None
        )  # equal jobs


def test_large_traces_are_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    import slurmrl.sim.admitted as admitted

    workload = prepare(cluster="2x4x8", limit=50)
    monkeypatch.setattr(admitted, "KEEP_JOBS", 49)
    Simulator(workload.trace, workload.cluster, config=SimConfig())
    assert not ADMISSIONS._kept
    monkeypatch.setattr(admitted, "KEEP_JOBS", 50)
    Simulator(workload.trace, workload.cluster, config=SimConfig())
    assert len(ADMISSIONS._kept) == 1
