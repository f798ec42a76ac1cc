from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from slurmrl.cluster.spec import cluster_to_toml, load_cluster
from slurmrl.errors import SpecError

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
REPO = HERE.parents[1]
SHARED_CONF = REPO / "tests" / "slurm" / "fixtures" / "v22.05" / "conf"


def _write(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".")).write_text(text)
    return folder


def test_slurm_fixture_equals_toml_fixture() -> None:
    from_toml = load_cluster(str(FIXTURES / "site.toml"))
    for spec in (FIXTURES / "site", FIXTURES / "site" / "slurm.conf", f"slurm:{FIXTURES / 'site'}"):
        from_slurm = load_cluster(str(spec))
        assert from_slurm == from_toml
        assert from_slurm.racks == from_toml.racks and from_slurm.nodes == from_toml.nodes


def test_slurm_prefix_reads_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_CONF", str(FIXTURES / "site" / "slurm.conf"))
    assert load_cluster("slurm").name == "fixturesite"
    monkeypatch.setenv("SLURM_CONF", str(FIXTURES / "nowhere" / "slurm.conf"))
    with pytest.raises(SpecError, match="no slurm.conf"):
        load_cluster("slurm:")


def _testcluster_module():
    script = REPO / "contrib" / "testcluster" / "testcluster"
    loader = importlib.machinery.SourceFileLoader("testcluster_script", str(script))
    spec = importlib.util.spec_from_loader("testcluster_script", loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules["testcluster_script"] = module
    try:
        loader.exec_module(module)
    finally:
        sys.modules.pop("testcluster_script", None)
    return module


TESTCLUSTER_SPEC = """\
name = "mixed"
[defaults]
gpus = 8
gpu_type = "v100"
intra = "nvlink:4"
[[racks]]
name = "ra"
nodes = 3
[[racks]]
name = "rb"
nodes = ["big1", "tiny1", "cpu1"]
[nodes.node02]
intra = "nvlink:2"
[nodes.big1]
gpu_type = "a100"
intra = "nvswitch"
memory_mb = 512000
[nodes.tiny1]
gpus = 2
gpu_type = "t4"
intra = "pcie"
cpus = 8
[nodes.cpu1]
gpus = 0
"""


@pytest.mark.parametrize("spec_text", [None, TESTCLUSTER_SPEC])
def test_same_cluster_as_testcluster_configs(tmp_path: Path, spec_text: str | None) -> None:
    """The test cluster's renderer turns our TOML into Slurm files; reading them back gives the same cluster."""
    tc = _testcluster_module()
    spec_path = REPO / "contrib" / "testcluster" / "cluster.toml"
    if spec_text is not None:
        spec_path = tmp_path / "spec.toml"
        spec_path.write_text(spec_text)
    files = tc.render(tc.load_spec(spec_path), tc.Paths(tmp_path / "state"))
    _write(tmp_path / "etc", **{k.replace(".", "_"): v for k, v in files.items()})
    assert load_cluster(str(tmp_path / "etc")) == load_cluster(str(spec_path))


def test_shared_v22_fixtures_load() -> None:
    cluster = load_cluster(str(SHARED_CONF))
    # Recorded from the test cluster's 4-node spec of the time (tests/slurm/fixtures/README.md).
    assert cluster.describe() == "testcluster: 2 racks, 4 nodes, 32 GPUs (v100)"
    assert [(r.name, r.nodes) for r in cluster.racks] == [("rack1", (0, 1)), ("rack2", (2, 3))]
    assert all(n.islands == (0, 0, 0, 0, 1, 1, 1, 1) for n in cluster.nodes)
    # The default spec grew to 2 racks x 4 nodes; its nodes are the recorded ones, twice over.
    spec = load_cluster(str(REPO / "contrib" / "testcluster" / "cluster.toml"))
    assert spec.describe() == "testcluster: 2 racks, 8 nodes, 64 GPUs (v100)"
    assert [(r.name, r.nodes) for r in spec.racks] == [("rack1", (0, 1, 2, 3)), ("rack2", (4, 5, 6, 7))]
    assert [n.name for n in spec.nodes] == [f"node{i:02d}" for i in range(1, 9)]
    recorded = cluster.nodes[0]
    assert all(replace(n, name="node01", index=0, rack=0) == recorded for n in spec.nodes)


def test_no_topology_puts_nodes_in_unassigned(tmp_path: Path) -> None:
    folder = _write(tmp_path / "c", slurm_conf="ClusterName=x\nNodeName=a[1-2] Gres=gpu:a100:4 CPUs=8\n")
    cluster = load_cluster(str(folder))
    assert [r.name for r in cluster.racks] == ["unassigned"]
    assert cluster.nodes[0].islands == (0, 0, 0, 0)  # no gres.conf: a100 default layout


def test_block_topology_and_link_islands(tmp_path: Path) -> None:
    links = ["-1,1,0,0", "1,-1,0,0", "0,0,-1,0", "0,0,0,-1"]
    gres = "".join(
        f"NodeName=b[1-4] Name=gpu File=/dev/nvidia{g} Links={row}\n" for g, row in enumerate(links)
    )
    folder = _write(
        tmp_path / "c",
        slurm_conf="ClusterName=blk\nTopologyPlugin=topology/block\nNodeName=b[1-4] Gres=gpu:h100:4\n",
        gres_conf=gres,
        topology_conf="BlockName=blk1 Nodes=b[3-4]\nBlockName=blk2 Nodes=b[1-2]\nBlockSizes=2\n",
    )
    cluster = load_cluster(str(folder / "slurm.conf"))
    assert [(r.name, [cluster.nodes[i].name for i in r.nodes]) for r in cluster.racks] == [
        ("blk1", ["b3", "b4"]),
        ("blk2", ["b1", "b2"]),
    ]
    assert cluster.nodes[0].islands == (0, 0, 1, 2)


def test_irregular_islands_survive_toml_round_trip(tmp_path: Path) -> None:
    links = ["-1,0,1,0", "0,-1,0,1", "1,0,-1,0", "0,1,0,-1"]
    gres = "".join(f"Name=gpu Type=v100 File=/dev/nvidia{g} Links={row}\n" for g, row in enumerate(links))
    folder = _write(tmp_path / "c", slurm_conf="NodeName=z1 Gres=gpu:v100:4\n", gres_conf=gres)
    cluster = load_cluster(str(folder))
    assert cluster.name == "c" and cluster.nodes[0].islands == (0, 1, 0, 1)
    out = tmp_path / "back.toml"
    out.write_text(cluster_to_toml(cluster))
    assert "islands = [0, 1, 0, 1]" in out.read_text()
    assert load_cluster(str(out)) == cluster


def test_problems_are_listed_together(tmp_path: Path) -> None:
    folder = _write(
        tmp_path / "c",
        slurm_conf="NodeName=n1 Gres=gpu:v100:2,gpu:a100:2\nNodeName=n2 Gres=gpu:v100:4\nNodeName=n3\n",
        gres_conf="NodeName=n2 Name=gpu File=/dev/nvidia[0-2]\n",
        topology_conf="SwitchName=s1 Nodes=n[2-3]\nSwitchName=s2 Nodes=n3,ghost\n",
    )
    with pytest.raises(SpecError) as info:
        load_cluster(str(folder))
    message = info.value.format()
    assert "3 problem(s)" in message
    assert "node n1: mixes GPU types ['a100', 'v100']" in message
    assert "slurm.conf Gres= has 4 GPUs but" in message and "lists 3" in message
    assert "node n3 is under both s1 and s2" in message
    assert "ghost" not in message


def test_slurm_conf_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    folder = _write(tmp_path / "c", slurm_conf="ClusterName=x\nNodeName=n1 CPUs=lots\n")
    with pytest.raises(SpecError) as info:
        load_cluster(str(folder))
    assert (info.value.file, info.value.line, info.value.column) == (str(folder / "slurm.conf"), 2, "CPUs")
