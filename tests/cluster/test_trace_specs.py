from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from slurmrl.cluster.builders import synthesize_racks
from slurmrl.cluster.spec import load_cluster
from slurmrl.errors import SlurmrlError, SpecError
from slurmrl.traces.store import locate


def _shared(relative: str) -> Path:
    """A public trace file wherever slurmrl finds it; the test is skipped when it was not fetched."""
    try:
        return locate(relative)
    except SlurmrlError:
        pytest.skip(f"public trace file {relative} not fetched (slurmrl traces fetch)")


def test_tiresias_spec(tmp_path: Path) -> None:
    path = tmp_path / "n4g2.csv"
    path.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n2,2,4,40,256")
    c = load_cluster(str(path))
    assert c.name == "n4g2"
    assert [(r.name, r.nodes) for r in c.racks] == [("rack01", (0, 1)), ("rack02", (2, 3))]
    node = c.nodes[3]
    assert (node.name, node.gpus, node.gpu_type, node.cpus, node.memory_mb) == (
        "node004",
        4,
        "p100",
        40,
        262144,
    )
    assert node.islands == (0, 1, 2, 3)


def test_philly_rack_synthesis(tmp_path: Path) -> None:
    rows = [f"m{i},2,12GB,2" for i in range(20)] + [f"big{i},8,24GB,8" for i in range(3)] + ["m99,2,12GB,0"]
    path = tmp_path / "machines.csv"
    path.write_text("machine_id,num_gpus,gpu_mem,num_gpus_revised\n" + "\n".join(rows) + "\n")
    c = load_cluster(str(path))
    sizes = [(r.name, len(r.nodes), c.nodes[r.nodes[0]].gpu_type) for r in c.racks]
    assert sizes == [("rack01", 16, "k80"), ("rack02", 5, "k80"), ("rack03", 3, "p40")]
    assert c.nodes[20].name == "m99"  # listed order kept inside a group
    assert c.node("big0").islands == tuple(range(8))


def test_synthesize_racks_is_deterministic() -> None:
    from slurmrl.cluster.builders import NodeSpec

    nodes = [NodeSpec(f"n{i}", 8 if i % 3 else 4, "v100", ()) for i in range(40)]
    a, b = synthesize_racks(nodes), synthesize_racks(list(nodes))
    assert a == b
    assert all(len(m) <= 16 for _, m in a)
    assert sorted(n.name for _, m in a for n in m) == sorted(n.name for n in nodes)


def test_alibaba_lists_drop_cpu_only_nodes(tmp_path: Path) -> None:
    openb = tmp_path / "openb.csv"
    openb.write_text(
        "node_id,cpu_milli,memory_mib,num_gpus,gpu_model\n"
        "cpu-0,32000,262144,0,\nnode-1,96000,786432,8,V100M32\nnode-2,64000,262144,2,T4\n"
    )
    c = load_cluster(str(openb))
    assert [n.name for n in c.nodes] == ["node-1", "node-2"]
    assert (c.nodes[0].gpu_type, c.nodes[0].islands[4], c.nodes[0].cpus) == ("v100m32", 1, 96)
    pai = tmp_path / "pai.csv.gz"
    pai.write_bytes(
        gzip.compress(b"machine,gpu_type,cap_cpu,cap_mem,cap_gpu\nm1,CPU,96,512,0\n0abc,P100,64,512,2\n")
    )
    c = load_cluster(str(pai))
    assert [(n.name, n.gpu_type, n.memory_mb) for n in c.nodes] == [("0abc", "p100", 512 * 1024)]


def test_machine_list_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("machine_id,num_gpus,gpu_mem\nm0,2,12GB\n\nm1,two,12GB\n")
    with pytest.raises(SpecError) as info:
        load_cluster(str(bad))
    assert (info.value.line, info.value.column) == (4, "num_gpus")  # the blank line counts, as in an editor
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("host,gpus\na,1\n")
    with pytest.raises(SpecError, match="unrecognized machine list header host,gpus"):
        load_cluster(str(unknown))


def test_shared_philly_machine_list() -> None:
    c = load_cluster(str(_shared("philly/philly_machine_list.csv")))
    # README: 321 machines with 2 GPUs and 231 with 8.
    assert len(c.nodes) == 552 and c.total_gpus == 321 * 2 + 231 * 8
    assert c.gpu_types == ("k80", "p40")
    assert len(c.racks) == -(-321 // 16) + -(-231 // 16)


@pytest.mark.parametrize(
    ("name", "gpus"), [("cluster_spec", 64), ("n1g4", 4), ("n32g4", 128), ("n160g8", 1280), ("n256g8", 2048)]
)
def test_shared_tiresias_specs(name: str, gpus: int) -> None:
    c = load_cluster(str(_shared(f"benchmarks/tiresias/{name}.csv")))
    assert c.total_gpus == gpus


def test_shared_alibaba_lists() -> None:
    openb = load_cluster(str(_shared("alibaba/openb_nodes_v2023.csv")))
    assert len(openb.nodes) == 1523 - 310  # README: 310 nodes have no GPU
    pai = load_cluster(str(_shared("alibaba/pai_machine_spec_v2020.csv.gz")))
    assert min(n.gpus for n in pai.nodes) > 0 and "v100m32" in pai.gpu_types


def test_a_stray_quote_in_a_machine_list_is_named_where_it_opens(tmp_path: Path) -> None:
    path = tmp_path / "machines.csv"
    path.write_text(
        'machine_id,num_gpus,gpu_mem\nm1,8,24GB\nm2,"8,24GB\n'
        + "".join(f"m{i},8,24GB\n" for i in range(3, 9))
    )
    with pytest.raises(SpecError) as info:
        load_cluster(str(path))
    assert info.value.line == 3 and "lines 3-9" in info.value.message and "\n" not in info.value.format()


def test_a_tiresias_spec_past_any_site_is_refused_before_its_nodes_are_named(tmp_path: Path) -> None:
    path = tmp_path / "cluster_spec.csv"
    path.write_text(
        "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n99999999,16,4,128,254\n"
    )
    with pytest.raises(SpecError, match="1,599,999,984 nodes is more than the 100,000"):
        load_cluster(str(path))
