from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster.builders import NodeSpec, assemble, normalize_islands
from slurmrl.cluster.spec import cluster_to_toml, load_cluster
from slurmrl.cluster.toml_spec import intra_of, parse_toml_spec
from slurmrl.errors import SpecError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]


def _load_text(tmp_path: Path, text: str, name: str = "spec.toml"):
    path = tmp_path / name
    path.write_text(text)
    return load_cluster(str(path))


def test_fixture_spec(tmp_path: Path) -> None:
    c = load_cluster(str(FIXTURES / "site.toml"))
    assert c.name == "fixturesite"
    assert [r.name for r in c.racks] == ["leaf1", "leaf2", "leaf3", "unassigned"]
    node04 = c.node("node04")
    assert (node04.gpu_type, node04.islands, node04.cpus, node04.memory_mb) == (
        "a100",
        (0,) * 8,
        128,
        1000000,
    )
    assert c.node("gpu1").islands == (0, 1, 2, 3)
    cpu = c.node("cpu01")
    assert (cpu.gpus, cpu.islands, cpu.cpus, cpu.memory_mb) == (0, (), 32, 256000)


def test_testcluster_default_spec_loads() -> None:
    spec = REPO / "contrib" / "testcluster" / "cluster.toml"
    c = load_cluster(str(spec))
    assert c.describe() == "testcluster: 2 racks, 8 nodes, 64 GPUs (v100)"


def test_counted_nodes_are_numbered_across_racks(tmp_path: Path) -> None:
    c = _load_text(
        tmp_path,
        '[[racks]]\nname = "a"\nnodes = 2\n[[racks]]\nname = "b"\nnodes = ["x1"]\n'
        '[[racks]]\nname = "c"\nnodes = 1\n'
        "[slurm]\nport = 17000\n",
        name="counted.toml",
    )
    assert [n.name for n in c.nodes] == ["node01", "node02", "x1", "node04"]
    assert c.name == "counted"  # file stem when no name is given
    assert c.nodes[0].islands == (0, 0, 0, 0, 1, 1, 1, 1)  # built-in defaults, as the test cluster uses


def test_every_problem_is_reported(tmp_path: Path) -> None:
    text = """
name = "bad"
colour = "red"
[defaults]
gpu = 8
intra = "nvlink:0"
[[racks]]
name = "r1"
nodes = ["n1", "n2"]
[[racks]]
name = "r2"
nodes = ["n2", "n3"]
extra = 1
[[racks]]
name = "r1"
nodes = 0
[nodes.n3]
gpus = -1
cpus = "many"
[nodes.n9]
gpus = 1
"""
    with pytest.raises(SpecError) as info:
        _load_text(tmp_path, text)
    err = info.value
    assert err.file == str(tmp_path / "spec.toml")
    message = err.format()
    expected = [
        "(top level): unknown key 'colour'",
        "defaults: unknown key 'gpu'; did you mean 'gpus'?",
        "defaults.intra: island size in 'nvlink:0' must be at least 1",
        "racks[1]: unknown key 'extra'",
        "racks[1].nodes: node 'n2' is already listed in racks[0].nodes",
        "racks[2].name: rack 'r1' is already defined at racks[0]",
        "racks[2].nodes: must be a positive count or a non-empty list of names, got 0",
        "nodes.n3.gpus: must be a non-negative integer, got -1",
        "nodes.n3.cpus: must be a non-negative integer, got 'many'",
        "nodes.n9: override for node 'n9', which is in no rack",
    ]
    for fragment in expected:
        assert fragment in message, fragment
    assert message.startswith(f"{tmp_path / 'spec.toml'}: {len(expected)} problems in cluster spec")


def test_bad_toml_syntax(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        _load_text(tmp_path, "name = \n")
    assert "not valid TOML" in info.value.format()


def test_islands_length_is_checked(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        _load_text(tmp_path, '[[racks]]\nname="r"\nnodes=["a"]\n[nodes.a]\ngpus=4\nislands=[0,0,1]\n')
    assert "nodes.a.islands: has 3 entries for 4 GPUs" in info.value.format()


@pytest.mark.parametrize(
    ("islands", "intra"),
    [
        ((0, 0, 0, 0), "nvswitch"),
        ((0, 1, 2), "pcie"),
        ((0, 0, 1, 1, 2), "nvlink:2"),
        ((0, 1, 0, 1), None),
        ((), "nvswitch"),
    ],
)
def test_intra_of(islands: tuple[int, ...], intra: str | None) -> None:
    assert intra_of(islands) == intra


_node = st.builds(
    lambda gpus, gpu_type, raw, cpus, mem: (gpus, gpu_type, normalize_islands(raw[:gpus]), cpus, mem),
    st.integers(0, 8),
    st.sampled_from(["v100", "a100", "t4", "k80"]),
    st.one_of(
        st.lists(st.integers(0, 3), min_size=8, max_size=8),
        st.integers(1, 8).map(lambda k: [g // k for g in range(8)]),
    ),
    st.sampled_from([0, 32, 64]),
    st.sampled_from([0, 128000, 256000]),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(_node, min_size=1, max_size=5), min_size=1, max_size=4),
    st.sampled_from(["c", "my site"]),
)
def test_toml_round_trip(racks: list[list[tuple]], name: str) -> None:
    layout = []
    count = 0
    for r, members in enumerate(racks):
        specs = []
        for gpus, gpu_type, islands, cpus, mem in members:
            count += 1
            specs.append(NodeSpec(f"n{count}", gpus, gpu_type, islands, cpus, mem))
        layout.append((f"r{r}", specs))
    cluster = assemble(name, layout)
    text = cluster_to_toml(cluster)
    assert parse_toml_spec(tomllib.loads(text)) == cluster


def test_round_trip_is_compact_for_homogeneous_clusters() -> None:
    cluster = load_cluster("4x8x8:a100")
    text = cluster_to_toml(cluster)
    assert "[nodes." not in text and 'intra = "nvswitch"' in text
    assert parse_toml_spec(tomllib.loads(text)) == cluster


def test_a_cluster_past_any_site_is_refused_before_its_nodes_are_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        _load_text(tmp_path, "[[racks]]\nname = 'r1'\nnodes = 10_000_000\n")
    assert "10,000,000 nodes is more than the 100,000" in info.value.format()
    with pytest.raises(SpecError) as info:
        _load_text(tmp_path, "[defaults]\ngpus = 4096\n[[racks]]\nname = 'r1'\nnodes = 2\n")
    assert "defaults.gpus: 4,096 GPUs on a node is more than the 256" in info.value.format()
