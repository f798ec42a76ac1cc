from __future__ import annotations

import pytest

from slurmrl.cluster.shorthand import parse_shorthand
from slurmrl.cluster.spec import load_cluster
from slurmrl.errors import SpecError


def test_shorthand_layout_and_defaults() -> None:
    c = load_cluster("2x3x8")
    assert [r.name for r in c.racks] == ["rack01", "rack02"]
    assert [n.name for n in c.nodes] == ["node001", "node002", "node003", "node004", "node005", "node006"]
    assert c.racks[1].nodes == (3, 4, 5) and c.nodes[4].rack == 1
    node = c.nodes[0]
    assert (node.gpu_type, node.islands, node.cpus, node.memory_mb) == (
        "v100",
        (0, 0, 0, 0, 1, 1, 1, 1),
        64,
        256000,
    )
    assert c.total_gpus == 48


@pytest.mark.parametrize(
    ("spec", "gpu_type", "islands"),
    [
        ("1x1x8:a100", "a100", (0,) * 8),
        ("1x1x4:h100", "h100", (0,) * 4),
        ("1x1x4:v100", "v100", (0, 1, 2, 3)),
        ("1x1x2:a100", "a100", (0, 1)),
        ("1x1x8:K80", "k80", tuple(range(8))),
        ("1x1x8:v100:nvlink:2", "v100", (0, 0, 1, 1, 2, 2, 3, 3)),
        ("1x1x4:t4:nvswitch", "t4", (0,) * 4),
    ],
)
def test_shorthand_intra_defaults(spec: str, gpu_type: str, islands: tuple[int, ...]) -> None:
    node = parse_shorthand(spec).nodes[0]
    assert (node.gpu_type, node.islands) == (gpu_type, islands)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("8x8", "needs three numbers"),
        ("8x8x8x8", "needs three numbers"),
        ("0x1x1", "RACKS must be at least 1"),
        ("1x0x1", "NODES must be at least 1"),
        ("1x1x0", "GPUS must be at least 1"),
        ("8x8x8:", "GPU type after ':' is empty"),
        ("8x8x8:v100:", "intra-node layout"),
        ("8x8x8:v100:ring", "unknown intra-node link layout"),
        ("8x-1x8", "NODES must be a whole number"),
        ("-1x2x2", "RACKS must be a whole number"),
        ("1000x1000x8", "1,000,000 nodes is more than the 100,000"),
        ("1x1x1000", "1,000 GPUs on a node is more than the 256"),
        ("8x8x8:v 100", "may use only"),
    ],
)
def test_shorthand_errors(spec: str, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        load_cluster(spec)
    text = info.value.format()
    assert fragment in text and spec in text and "RACKSxNODESxGPUS" in text


def test_big_shorthand_builds_every_node() -> None:
    c = load_cluster("64x16x8")
    assert c.total_gpus == 8192 and len(c.nodes) == 1024 and c.nodes[-1].name == "node1024"


@pytest.mark.parametrize("spec", ["2x4x8:nosuchgpu", "2x4x8:t400", "1x1x8:v10"])
def test_shorthand_unknown_gpu_type_names_the_known_ones(spec: str) -> None:
    with pytest.raises(SpecError) as info:
        load_cluster(spec)
    text = info.value.format()
    assert f"unknown GPU type '{spec.partition(':')[2]}'; known: k80, p40, p100, t4, v100, a100" in text
    assert "h100" in text and "TOML cluster spec" in text


@pytest.mark.parametrize(
    "spec", ["1x1x8:V100M16", "1x1x8:tesla-v100", "1x1x8:a800", "1x1x8:h200", "1x1x4:T4"]
)
def test_shorthand_takes_the_spellings_the_throughput_table_reads(spec: str) -> None:
    assert parse_shorthand(spec).total_gpus in (4, 8)


def test_unknown_gpu_type_on_the_command_line_is_one_line_naming_known_types() -> None:
    from click.testing import CliRunner

    from slurmrl.cli import main

    result = CliRunner().invoke(main, ["simulate", "--cluster", "2x4x8:nosuchgpu", "--limit", "5"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    assert "'nosuchgpu'" in errors[0] and "v100" in errors[0] and "h100" in errors[0]
    assert "TOML cluster spec" in errors[0]
