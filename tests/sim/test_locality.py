"""Node counts for jobs whose trace records none: pack, relax (delay scheduling) and any."""

from __future__ import annotations

import math

import pytest

from slurmrl.cluster import load_cluster
from slurmrl.errors import ConfigError
from slurmrl.policy import make_policy
from slurmrl.sim.locality import Locality, parse_locality
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.traces.schema import Trace, TraceJob

CLUSTER = load_cluster("1x2x4:v100")  # two nodes of four GPUs


def fragmented(nodes: int | None = None) -> Trace:
    """Two jobs leave 2 + 1 GPUs free on the two nodes; a 3-GPU job then arrives."""
    jobs = (
        TraceJob("a", 0.0, 1000.0, 2),
        TraceJob("b", 0.0, 5000.0, 3),
        TraceJob("c", 1.0, 100.0, 3, num_nodes=nodes),
    )
    return Trace(jobs, "t", "constructed")


def start_of_c(locality: str, nodes: int | None = None) -> float:
    sim = Simulator(fragmented(nodes), CLUSTER, config=SimConfig(locality=locality, speed_model="none"))
    records = {r.job_id: r for r in sim.run(make_policy("fifo")).records}
    return records["c"].start_time


def test_pack_waits_for_one_node() -> None:
    assert start_of_c("pack") == 1000.0


def test_any_spreads_at_once() -> None:
    assert start_of_c("any") == 1.0


def test_relax_spreads_after_the_wait() -> None:
    assert start_of_c("relax:60") == 61.0
    assert start_of_c("relax:5000") == 1000.0  # a node frees before the wait is over


def test_a_node_count_in_the_trace_always_binds() -> None:
    assert start_of_c("any", nodes=1) == 1000.0


@pytest.mark.parametrize(
    ("gpus", "trace_nodes", "expected"),
    [(1, None, 1), (4, None, 1), (5, None, 2), (16, None, 4), (4, 2, 2)],
)
def test_pack_asks_for_the_fewest_nodes(gpus: int, trace_nodes: int | None, expected: int) -> None:
    assert Locality("pack").request(gpus, trace_nodes, CLUSTER) == (expected, math.inf)


def test_parse() -> None:
    assert parse_locality("relax:3600") == Locality("relax", 3600.0)
    assert str(parse_locality("relax:3600")) == "relax:3600"
    assert parse_locality("any") == Locality("any")
    for bad in ("relax:abc", "relax:-1", "spread", "pack:3"):
        with pytest.raises(ConfigError, match="locality"):
            parse_locality(bad)
