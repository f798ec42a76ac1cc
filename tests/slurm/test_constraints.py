"""Placement limits: parsed for every version, reduced to usable nodes, honoured by placements."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from slurmrl.cluster.from_slurm import load_slurm_cluster
from slurmrl.daemon.config import ScopeConfig
from slurmrl.daemon.scope import build_view, scoped_pending
from slurmrl.policy import make_placement
from slurmrl.slurm.constraints import FeatureRule, UnsupportedConstraint, parse_constraint
from slurmrl.slurm.parse_json import parse_nodes_json, parse_squeue_json
from slurmrl.slurm.parse_text import parse_megabytes, parse_scontrol_jobs, parse_scontrol_nodes
from slurmrl.slurm.snapshot import SlurmJob, SlurmNode, Snapshot

FIX = Path(__file__).resolve().parent / "fixtures"
VERSIONS = ["v22.05", "v23.02", "v23.11", "v24.05", "v24.11", "v25.11", "v26.05"]
FEATURES = {
    "node01": {"fast", "node01"},
    "node02": {"fast", "node02"},
    "node03": {"big", "node03"},
    "node04": {"big", "fast", "node04"},
}
# name: (partitions, excluded, constraint, prefer, cpus/node, MB/node, exclusive, min, max, required, GPUs)
EXPECTED = {
    "lim_all": (("gpu", "debug"), ("node02",), "fast&big", "fast", 4, 8192, True, 1, 2, (), 2),
    "lim_or": (("gpu",), (), "fast|big", "", 3, 6144, False, 1, None, (), 1),
    "lim_counts": (("gpu",), (), "[fast*1&big*1]", "", 1, 1024, False, 2, 2, ("node01",), 2),
}
RECORDED = ["v22.05", "v24.11"]  # real recordings, with text outputs beside the JSON


def expected(version: str) -> dict[str, tuple]:
    """EXPECTED as the release records it: 24.11 stores lim_or (-n 3, no -N) with at most 1 node
    (NumNodes=1-1; 22.05 leaves the maximum unset)."""
    if version != "v24.11":
        return EXPECTED
    return {**EXPECTED, "lim_or": EXPECTED["lim_or"][:8] + (1,) + EXPECTED["lim_or"][9:]}


def _limits(job: SlurmJob) -> tuple:
    return (
        job.partitions,
        job.excluded_nodes,
        job.constraint,
        job.prefer,
        job.cpus_per_node,
        job.memory_per_node_mb,
        job.exclusive,
        job.num_nodes,
        job.max_nodes,
        job.required_nodes,
        job.gpus.total,
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_job_limits_every_json_version(version: str) -> None:
    jobs = {j.name: j for j in parse_squeue_json((FIX / version / "limits_squeue.json").read_text())}
    assert {name: _limits(job) for name, job in jobs.items()} == expected(version)


@pytest.mark.parametrize("version", RECORDED)
def test_job_limits_text(version: str) -> None:
    jobs = {
        j.name: j for j in parse_scontrol_jobs((FIX / version / "limits_scontrol_show_job.txt").read_text())
    }
    assert {name: _limits(job) for name, job in jobs.items()} == expected(version)


@pytest.mark.parametrize("version", VERSIONS)
def test_node_features_every_json_version(version: str) -> None:
    name = "limits_sinfo.json" if version == "v22.05" else "limits_scontrol_show_nodes.json"
    nodes = parse_nodes_json((FIX / version / name).read_text())
    assert {n.name: set(n.features) for n in nodes} == FEATURES
    assert all(n.cpus == 64 and n.cpus_alloc == 0 and n.memory_alloc_mb == 0 for n in nodes)
    if version >= "v23.11":  # node groups of sinfo --json
        groups = parse_nodes_json((FIX / version / "limits_sinfo.json").read_text())
        if version in RECORDED:
            # Real 24.11 groups a partition's nodes into one record with the first node's
            # features, whatever the others have: why slurmrl reads scontrol show nodes there.
            assert {n.name: set(n.features) for n in groups} == {n: FEATURES["node01"] for n in FEATURES}
        else:
            assert {n.name: set(n.features) for n in groups} == FEATURES


@pytest.mark.parametrize("version", RECORDED)
def test_node_features_text_and_allocation(version: str) -> None:
    nodes = {
        n.name: n for n in parse_scontrol_nodes((FIX / version / "limits_scontrol_show_node.txt").read_text())
    }
    assert {name: set(n.features) for name, n in nodes.items()} == FEATURES
    multi_line = (FIX / version / "scontrol_show_node.txt").read_text()
    one_line = "\n".join(" ".join(rec.split()) for rec in multi_line.split("\n\n") if rec.strip())
    recorded = {n.name: n for n in parse_scontrol_nodes(one_line)}
    assert (recorded["node01"].cpus_alloc, recorded["node01"].memory_alloc_mb) == (6, 10240)


def test_megabytes() -> None:
    assert [parse_megabytes(t) for t in ("8G", "1024M", "512", "0", "", "1.5G", "2T")] == [
        8192,
        1024,
        512,
        None,
        None,
        1536,
        2097152,
    ]


def test_constraint_syntax() -> None:
    assert parse_constraint("") is None and parse_constraint("(null)") is None
    assert parse_constraint("a") == FeatureRule((frozenset({"a"}),))
    assert parse_constraint("a&b") == FeatureRule((frozenset({"a", "b"}),))
    assert parse_constraint("a|b") == FeatureRule((frozenset({"a"}), frozenset({"b"})))
    assert parse_constraint("a&b").allows(frozenset({"a", "b", "c"}))
    assert not parse_constraint("a&b").allows(frozenset({"a"}))
    assert parse_constraint("a|b").allows(frozenset({"b"}))
    for text in ("a&b|c", "[a|b]", "a*2", "(a&b)", "a,b", "!a"):
        with pytest.raises(UnsupportedConstraint):
            parse_constraint(text)


def _snapshot(version: str = "22.05.8", nodes: tuple[SlurmNode, ...] | None = None, extra=()) -> Snapshot:
    cluster = load_slurm_cluster(FIX / "v22.05" / "conf" / "slurm.conf")
    if nodes is None:
        nodes = parse_nodes_json((FIX / "v22.05" / "limits_sinfo.json").read_text())
    jobs = parse_squeue_json((FIX / "v22.05" / "limits_squeue.json").read_text())
    return Snapshot(0.0, version, tuple(nodes), (*jobs, *extra), cluster, "cli-json")


def _allowed(snap: Snapshot) -> dict[str, set[str] | None]:
    usable = snap.allowed_nodes()
    names = [n.name for n in snap.cluster.nodes]
    out = {}
    for job in snap.pending:
        got = usable.of(job)
        out[job.name] = None if got is None else {names[i] for i in got}
    return out


def test_allowed_nodes_from_partition_exclude_features() -> None:
    assert _allowed(_snapshot()) == {
        "lim_all": {"node04"},  # not node02 (-x); fast&big only on node04
        "lim_or": None,  # fast|big: every node
        "lim_counts": set(),  # counted constraint: not interpreted, never pinned
    }


def test_allowed_nodes_partitions() -> None:
    nodes = [replace(n, partitions=("debug",)) if n.name == "node01" else n for n in _snapshot().nodes]
    assert _allowed(_snapshot(nodes=tuple(nodes)))["lim_or"] == {"node02", "node03", "node04"}


def test_allowed_nodes_cpus_memory_exclusive() -> None:
    base = {n.name: n for n in _snapshot().nodes}
    both = {"fast", "big"}
    nodes = {name: replace(n, features=frozenset(both)) for name, n in base.items()}
    nodes["node01"] = replace(nodes["node01"], cpus_alloc=61)  # 3 CPUs free: lim_all asks 4
    nodes["node03"] = replace(nodes["node03"], memory_alloc_mb=256000 - 4096)  # 4 GB free: asks 8
    nodes["node04"] = replace(nodes["node04"], cpus_alloc=1)  # busy: not for --exclusive
    snap = _snapshot(nodes=tuple(nodes.values()))
    assert _allowed(snap)["lim_all"] == set()
    nodes["node04"] = replace(nodes["node04"], cpus_alloc=0)
    assert _allowed(_snapshot(nodes=tuple(nodes.values())))["lim_all"] == {"node04"}
    running = SlurmJob("99", state="RUNNING", nodes=("node04",))  # a job there, whatever its CPUs
    assert _allowed(_snapshot(nodes=tuple(nodes.values()), extra=(running,)))["lim_all"] == set()
    # lim_or (3 CPUs, 6 GB, not exclusive) still fits node01 (3 free) and node04.
    assert _allowed(snap)["lim_or"] == {"node01", "node02", "node04"}


def test_pin_support_by_version_and_features() -> None:
    snap = _snapshot()
    pins = snap.pin_support
    assert pins.prefer and pins.node_name_features and pins.soft and not pins.exact_count
    assert _snapshot("23.02.7").pin_support.exact_count
    jobs = {j.name: j for j in snap.jobs}
    assert pins.prefer_value(jobs["lim_or"], ["node03", "node01"]) == "node01|node03"
    assert pins.prefer_value(jobs["lim_all"], ["node04"]) is None  # the user's own --prefer stays
    plain = _snapshot(nodes=tuple(replace(n, features=frozenset({"fast"})) for n in snap.nodes))
    assert not plain.pin_support.soft and plain.pin_support.prefer_value(jobs["lim_or"], ["node01"]) is None
    assert snap.to_dict()["pin_support"] == {
        "prefer": True,
        "node_name_features": True,
        "exact_count": False,
        "soft": True,
    }


def test_views_carry_limits_and_placements_obey_them() -> None:
    snap = _snapshot()
    idx = snap.cluster.node_index
    released = replace(snap, jobs=tuple(replace(j, held=False, reason="") for j in snap.jobs))
    view = released.to_view()
    by_name = {j.name: j for j in view.pending}
    assert by_name["lim_all"].allowed_nodes == frozenset({idx["node04"]})
    assert by_name["lim_all"].exclusive and by_name["lim_all"].max_node_count == 2
    assert by_name["lim_counts"].required_nodes == ("node01",)
    scoped = scoped_pending(released, ScopeConfig())
    daemon_view = build_view(released, scoped, ScopeConfig())
    assert {j.name: j.allowed_nodes for j in daemon_view.pending} == {
        j.name: j.allowed_nodes for j in view.pending
    }
    for name in ("consolidate", "first-fit", "interference-aware", "topology"):
        placement = make_placement(name)
        for job in view.pending:
            got = placement.place(job, view.pool.copy(), view)
            if job.allowed_nodes is not None:
                assert got is None or set(got.nodes) <= job.allowed_nodes, (name, job.name)
        assert placement.place(by_name["lim_counts"], view.pool.copy(), view) is None
        assert placement.place(by_name["lim_all"], view.pool.copy(), view).nodes == (idx["node04"],)


def test_unsupported_constraint_logged_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slurmrl.slurm import constraints

    monkeypatch.setattr(constraints, "_WARNED", set())
    with caplog.at_level("WARNING", logger="slurmrl.slurm.constraints"):
        for _ in range(3):
            usable = _snapshot().allowed_nodes()
            assert [usable.of(j) for j in _snapshot().pending if j.name == "lim_counts"] == [frozenset()]
    assert "[fast*1&big*1]" in usable.unsupported
    assert sum("[fast*1&big*1]" in r.getMessage() for r in caplog.records) == 1


def test_a_restricted_failure_dooms_no_other_job() -> None:
    from slurmrl.policy.ordering.preemptive import Failures
    from slurmrl.policy.view import JobView

    failures = Failures(0.0)
    failures.add(JobView("a", 2, 0.0, allowed_nodes=frozenset({0})))
    assert not failures.doomed(JobView("b", 4, 0.0))
    failures.add(JobView("c", 2, 0.0))
    assert failures.doomed(JobView("d", 4, 0.0)) and failures.doomed(
        JobView("e", 4, 0.0, allowed_nodes=frozenset())
    )
