"""Snapshot -> policy view, on the recorded 22.05 cluster."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from slurmrl.slurm.parse_gres import GresItem

FIX = Path(__file__).resolve().parent / "fixtures" / "v22.05"


def test_cluster_from_recorded_conf(recorded_snapshot) -> None:
    cluster = recorded_snapshot().cluster
    assert [r.name for r in cluster.racks] == ["rack1", "rack2"]
    assert cluster.nodes[0].islands == (0, 0, 0, 0, 1, 1, 1, 1)


def test_view_marks_held_gpus_busy(recorded_snapshot) -> None:
    view = recorded_snapshot().to_view()
    pool = view.pool
    idx = view.cluster.node_index
    assert pool.free_gpus(idx["node01"]) == [7]
    assert pool.free_gpus(idx["node02"]) == [5, 6, 7]
    assert pool.free_gpus(idx["node03"]) == [] and pool.free_gpus(idx["node04"]) == []
    assert pool.total_free == 4
    running = {j.job_id: j for j in view.running}
    assert set(running) == {"3", "4", "5", "6", "7_0", "7_1", "7_2"}
    p = running["3"].placement
    assert [(a.node, a.gpus) for a in p.allocs] == [(idx["node01"], (0,)), (idx["node02"], (0,))]
    assert running["6"].gpus == 8 and running["6"].start_time == 1795321699


def test_pending_order_and_eligibility(recorded_snapshot) -> None:
    view = recorded_snapshot().to_view()
    ids = [j.job_id for j in view.pending]
    assert ids == ["7_3", "7_4", "7_5", "13", "14"]  # held 11 and dependency-blocked 12 left out
    by_id = {j.job_id: j for j in view.pending}
    assert (by_id["14"].gpus, by_id["14"].num_nodes, by_id["14"].group) == (16, 2, "gpu")
    assert by_id["13"].name == """it's "quoted" | $(x) name"""
    every = [j.job_id for j in recorded_snapshot().to_view(include_ineligible=True).pending]
    assert every == ["7_3", "7_4", "7_5", "11", "12", "13", "14"]


def test_drained_node_has_no_free_gpus(recorded_snapshot) -> None:
    snap = recorded_snapshot()
    nodes = tuple(
        replace(n, states=n.states | {"DRAIN"}, gpus_used=()) if n.name == "node02" else n for n in snap.nodes
    )
    snap = replace(snap, nodes=nodes)
    view = snap.to_view()
    assert view.pool.free_gpus(view.cluster.node_index["node02"]) == []
    assert [n.name for n in snap.unavailable_nodes] == ["node02"]


def test_unknown_indices_take_lowest_free(recorded_snapshot) -> None:
    snap = recorded_snapshot()
    jobs = tuple(
        replace(j, gpu_alloc=(("node01", GresItem("v100", 2, None)),)) if j.job_id == "4" else j
        for j in snap.jobs
    )
    nodes = tuple(
        replace(n, gpus_used=(GresItem("v100", 7, None),)) if n.name == "node01" else n for n in snap.nodes
    )
    view = replace(snap, jobs=jobs, nodes=nodes).to_view()
    running = {j.job_id: j for j in view.running}
    # job 3 holds GPU 0 (known), job 4's two GPUs become the lowest free ones (1, 2).
    assert running["4"].placement.allocs[0].gpus == (1, 2)
    assert view.pool.free_count[view.cluster.node_index["node01"]] == 1


def test_model_token_and_filter_and_dict(recorded_snapshot) -> None:
    snap = recorded_snapshot()
    jobs = tuple(
        replace(j, comment="run model=resnet50 lr=0.1") if j.job_id == "14" else j for j in snap.jobs
    )
    snap = replace(snap, jobs=jobs)
    assert {j.job_id: j for j in snap.to_view().pending}["14"].model == "resnet50"
    assert {j.job_id for j in snap.filter(partitions=["debug"]).jobs} == {"13"}
    assert snap.filter(states=["running"]).running == snap.running
    doc = json.loads(json.dumps(snap.to_dict()))
    assert doc["jobs"][2]["gpu_alloc"]["node01"]["indices"] == [0]
    assert doc["cluster"]["racks"][0]["nodes"] == ["node01", "node02"]
