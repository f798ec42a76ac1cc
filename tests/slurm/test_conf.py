from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmrl.errors import SpecError
from slurmrl.slurm.conf import (
    GresSpec,
    compress_hostlist,
    expand_hostlist,
    parse_gres_conf,
    parse_gres_spec,
    parse_slurm_conf,
    parse_topology_conf,
    read_slurm_conf,
)

# --------------------------------------------------------------------------- hostlists


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("node[01-03,07],gpu5", ["node01", "node02", "node03", "node07", "gpu5"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("solo", ["solo"]),
        ("", []),
        ("a[1-2]-ib", ["a1-ib", "a2-ib"]),
    ],
)
def test_expand_hostlist(text: str, expected: list[str]) -> None:
    assert expand_hostlist(text) == expected


@pytest.mark.parametrize("text", ["n[3-1]", "n[1-2", "n1-2]", "n[a-b]", "n[1-2],,m", "n[1-99999999]"])
def test_expand_hostlist_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        expand_hostlist(text)


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["node01", "node02", "node03", "node07", "gpu5"], "node[01-03,07],gpu5"),
        (["n8", "n9", "n10"], "n[8-10]"),
        (["n09", "n10", "n011"], "n[09-10,011]"),
        (["login"], "login"),
        (["a1", "b1", "a2"], "a1,b1,a2"),
    ],
)
def test_compress_hostlist(names: list[str], expected: str) -> None:
    assert compress_hostlist(names) == expected


_name = st.builds(
    lambda prefix, digits: prefix + digits,
    st.sampled_from(["node", "gpu", "n", "rack1-n", "x_"]),
    st.one_of(st.just(""), st.integers(0, 120).map(str), st.integers(0, 120).map(lambda n: f"{n:03d}")),
).filter(bool)


@given(st.lists(_name, max_size=40))
def test_hostlist_round_trip(names: list[str]) -> None:
    text = compress_hostlist(names)
    assert expand_hostlist(text) == names
    assert len(text) <= len(",".join(names)) + 2 * len(names)


@given(st.lists(st.integers(0, 300), min_size=1, max_size=60, unique=True).map(sorted))
def test_compress_sorted_numbers_is_compact(numbers: list[int]) -> None:
    names = [f"node{n:03d}" for n in numbers]
    text = compress_hostlist(names)
    runs = 1 + sum(1 for a, b in zip(numbers, numbers[1:], strict=False) if b != a + 1)
    assert text.count(",") == runs - 1
    assert expand_hostlist(text) == names


# --------------------------------------------------------------------------- slurm.conf

CONF = """\
# comment line
ClusterName=Alpha   # trailing comment
clustername=alpha
SelectType=select/cons_tres SchedulerType=sched/builtin
SlurmctldPort=6817-6820
GresTypes=gpu,mps
PriorityType=priority/multifactor
SchedulerParameters=a=1,\\
b=2
Comment="has spaces \\# and a hash"
NodeName=DEFAULT CPUs=16 RealMemory=64000
NodeName=n[1-2] Gres=gpu:v100:4,mps:400 Weight=5
NodeName=n3 sockets=2 corespersocket=8 threadspercore=2 gres=gpu:2
NodeSet=ns1 Nodes=n[2-3]
PartitionName=p1 Nodes=n[1-2] Default=YES
PartitionName=p2 Nodes=ns1,n1 State=DOWN
"""


def test_parse_slurm_conf_settings_and_nodes() -> None:
    conf = parse_slurm_conf(CONF, "/etc/slurm/slurm.conf")
    assert conf.cluster_name == "alpha"
    assert conf.get("CLUSTERNAME") == "alpha"  # last one wins, keys case-insensitive
    assert conf.select_type == "select/cons_tres"
    assert conf.scheduler_type == "sched/builtin"
    assert conf.priority_type == "priority/multifactor"
    assert conf.topology_plugin is None
    assert conf.gres_types == ("gpu", "mps")
    assert conf.slurmctld_port == 6817
    assert conf.get("SchedulerParameters") == "a=1,b=2"
    assert conf.get("Comment") == "has spaces # and a hash"
    assert [n.name for n in conf.nodes] == ["n1", "n2", "n3"]
    n1 = conf.node("n1")
    assert (n1.cpus, n1.real_memory_mb, n1.weight) == (16, 64000, 5)
    assert n1.gres == (GresSpec("gpu", "v100", 4), GresSpec("mps", None, 400))
    assert n1.gpus() == ("v100", 4)
    n3 = conf.node("n3")
    assert n3.cpus == 16  # explicit CPUs from DEFAULT beats the sockets product
    assert n3.gpus() == (None, 2)
    p1, p2 = conf.partitions
    assert p1.default and p1.nodes == ("n1", "n2")
    assert p2.nodes == ("n2", "n3", "n1") and p2.state == "DOWN"


def test_cpus_from_sockets_when_not_given() -> None:
    conf = parse_slurm_conf("NodeName=a Sockets=2 CoresPerSocket=4 ThreadsPerCore=2\n")
    assert conf.node("a").cpus == 16
    assert conf.node("a").real_memory_mb == 1


def test_include_is_followed_through_callback() -> None:
    seen = []

    def read(target: str) -> tuple[str, str]:
        seen.append(target)
        return "NodeName=inc[1-2] CPUs=4\n", f"/conf/{target}"

    conf = parse_slurm_conf(
        "Include nodes.conf\nNodeName=main CPUs=8\n", "/conf/slurm.conf", read_include=read
    )
    assert seen == ["nodes.conf"]
    assert [n.name for n in conf.nodes] == ["inc1", "inc2", "main"]
    assert conf.node("inc1").file == "/conf/nodes.conf"
    assert parse_slurm_conf("include x.conf\n").includes == ("x.conf",)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("ClusterName=a\nNodeName=n1 CPUs=many\n", 2, "CPUs"),
        ("NodeName=n[1-\n", 1, "NodeName"),
        ("\n\nNodeName=n1\nNodeName=n1\n", 4, "NodeName"),
        ("ClusterName=a stray\n", 1, None),
        ("NodeName=n1 Gres=gpu:a:b:4\n", 1, "Gres"),
    ],
)
def test_slurm_conf_errors_name_line_and_key(text: str, line: int, column: str | None) -> None:
    with pytest.raises(SpecError) as info:
        parse_slurm_conf(text, "site.conf")
    err = info.value
    assert (err.file, err.line, err.column) == ("site.conf", line, column)


def test_gres_spec_forms() -> None:
    assert parse_gres_spec("gpu:v100:8(S:0-1),gpu:2,mps") == (
        GresSpec("gpu", "v100", 8),
        GresSpec("gpu", None, 2),
        GresSpec("mps", None, 1),
    )
    assert parse_gres_spec("gpu:a100:no_consume:4") == (GresSpec("gpu", "a100", 4),)
    assert parse_gres_spec("bandwidth:lustre:4G") == (GresSpec("bandwidth", "lustre", 4 * 1024**3),)


# --------------------------------------------------------------------------- gres.conf


def test_parse_gres_conf() -> None:
    text = """\
AutoDetect=off
Name=gpu Type=t4 File=/dev/nvidia[0-1]          # no NodeName: every node
NodeName=a[1-2] Name=gpu Type=v100 File=/dev/nvidia2 Links=-1,0,2
NodeName=zz9 Name=gpu File=/dev/nvidia0          # other cluster
NodeName=a2 Name=mps Count=4K
"""
    out = parse_gres_conf(text, "gres.conf", ["a1", "a2", "b1"])
    assert set(out) == {"a1", "a2", "b1"}
    assert [g.count for g in out["a1"]] == [2, 1]
    assert out["a1"][1].links == (-1, 0, 2) and out["a1"][1].line == 3
    assert out["a1"][0].files == ("/dev/nvidia0", "/dev/nvidia1")
    assert [g.name for g in out["a2"]] == ["gpu", "gpu", "mps"]
    assert out["a2"][2].count == 4096
    assert [g.type for g in out["b1"]] == ["t4"]


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("Name=gpu File=/dev/nvidia[0-1] Count=3\n", "Count"),
        ("Name=gpu File=/dev/nvidia0 Links=1,x\n", "Links"),
        ("Type=v100 File=/dev/nvidia0\n", None),
    ],
)
def test_gres_conf_errors(text: str, column: str | None) -> None:
    with pytest.raises(SpecError) as info:
        parse_gres_conf("\n" + text, "gres.conf", ["a"])
    assert (info.value.file, info.value.line, info.value.column) == ("gres.conf", 2, column)


# --------------------------------------------------------------------------- topology.conf


def test_parse_topology_tree_and_block() -> None:
    tree = parse_topology_conf(
        "SwitchName=s1 Nodes=n[1-2] LinkSpeed=100\nSwitchName=s2 Nodes=n3\nSwitchName=top Switches=s[1-2]\n"
    )
    assert tree.leaf_groups() == (("s1", ("n1", "n2")), ("s2", ("n3",)))
    assert tree.switches[2].switches == ("s1", "s2")
    assert tree.switches[0].link_speed == 100
    block = parse_topology_conf("BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-8]\nBlockSizes=4,8\n")
    assert block.leaf_groups() == (("b1", ("n1", "n2", "n3", "n4")), ("b2", ("n5", "n6", "n7", "n8")))
    assert block.block_sizes == (4, 8)


def test_topology_errors() -> None:
    with pytest.raises(SpecError) as info:
        parse_topology_conf("SwitchName=s1 Nodes=a\nSwitchName=s1 Nodes=b\n", "topology.conf")
    assert info.value.line == 2
    with pytest.raises(SpecError) as info:
        parse_topology_conf("RackName=r1 Nodes=a\n", "topology.conf")
    assert info.value.column == "RackName" and "SwitchName" in info.value.format()


def test_recorded_v22_conf_parses() -> None:
    folder = Path(__file__).resolve().parent / "fixtures" / "v22.05" / "conf"
    conf = read_slurm_conf(folder / "slurm.conf")
    assert (conf.select_type, conf.priority_type, conf.topology_plugin) == (
        "select/cons_tres",
        "priority/multifactor",
        "topology/tree",
    )
    assert [n.name for n in conf.nodes] == ["node01", "node02", "node03", "node04"]
    assert conf.node("node03").gpus() == ("v100", 8)
    gres = parse_gres_conf(
        (folder / "gres.conf").read_text(), folder / "gres.conf", [n.name for n in conf.nodes]
    )
    assert [len(gres[n.name]) for n in conf.nodes] == [8, 8, 8, 8]
    topo = parse_topology_conf((folder / "topology.conf").read_text(), folder / "topology.conf")
    assert [g for g, _ in topo.leaf_groups()] == ["rack1", "rack2"]
