"""Against the local Slurm test cluster (contrib/testcluster).

Run with ``eval "$(contrib/testcluster/testcluster env)"; pytest -m slurm tests/slurm``.
Skipped only when no cluster is reachable and ``CI`` is unset: in CI they must run.
Every job submitted here is cancelled at the end, so the cluster is left idle.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from live_slurm import node_gpus  # loaded by tests/conftest.py

from slurmrl.cli import main
from slurmrl.slurm.cli_backend import CliBackend
from slurmrl.slurm.conf import expand_hostlist
from slurmrl.slurm.parse_gres import parse_index_list

pytestmark = pytest.mark.slurm
QUOTED = 'a "b" |c $(x)'


def _sbatch(*args: str) -> str:
    out = subprocess.run(
        ["sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().split(";")[0]


@pytest.fixture(scope="module")
def jobs():
    heal = Path(__file__).resolve().parents[2] / "contrib" / "testcluster" / "testcluster"
    subprocess.run([str(heal), "heal"], capture_output=True, timeout=120)
    tag = f"slurmrl-live-{os.getpid()}"
    ids: dict[str, str] = {}
    try:
        ids["gres2"] = _sbatch(f"--job-name={tag}-gres2", "--gres=gpu:2", "--wrap", "sleep 300")
        ids["gpn2"] = _sbatch(f"--job-name={tag}-gpn2", "--gpus-per-node=2", "--wrap", "sleep 300")
        ids["gpus4"] = _sbatch(f"--job-name={tag}-gpus4", "--gpus=4", "-N1", "--wrap", "sleep 300")
        ids["array"] = _sbatch(
            f"--job-name={tag}-array", "--array=0-1", "--gres=gpu:1", "--wrap", "sleep 300"
        )
        ids["held"] = _sbatch(f"--job-name={tag}-held", "-H", "--gpus=2", "--wrap", "sleep 300")
        ids["dep"] = _sbatch(
            f"--job-name={tag}-dep",
            f"--dependency=afterok:{ids['gres2']}",
            "--gres=gpu:1",
            "--wrap",
            "sleep 300",
        )
        ids["quoted"] = _sbatch(
            f"--job-name={QUOTED}", "--gres=gpu:1", "--comment=model=bert", "--wrap", "sleep 300"
        )
        running = {ids["gres2"], ids["gpn2"], ids["gpus4"], f"{ids['array']}_0", f"{ids['array']}_1"}
        deadline = time.time() + 90
        while time.time() < deadline:
            out = subprocess.run(["squeue", "-h", "-o", "%i %T"], capture_output=True, text=True).stdout
            states = dict(line.split() for line in out.splitlines() if line.strip())
            if all(states.get(j) == "RUNNING" for j in running):
                break
            time.sleep(2)
        else:
            pytest.fail(f"jobs did not start within 90 s: {states}")
        # Submitted last: with PriorityWeightJobSize it would otherwise take the whole cluster first.
        # Every node, whole: it waits for the jobs above wherever they run.
        nodes = len(node_gpus())
        ids["big"] = _sbatch(
            f"--job-name={tag}-big", f"-N{nodes}", "--gpus-per-node=8", "--wrap", "sleep 300"
        )
        time.sleep(3)
        yield ids
    finally:
        all_ids = list(ids.values())
        if all_ids:
            subprocess.run(["scancel", *all_ids], capture_output=True, timeout=30)


def _scontrol_indices(job_id: str) -> dict[str, tuple[int, ...]]:
    out = subprocess.run(["scontrol", "show", "job", "-d", job_id], capture_output=True, text=True).stdout
    held: dict[str, tuple[int, ...]] = {}
    for nodes, idx in re.findall(r"Nodes=(\S+) .*?GRES=\S*?\(IDX:([^)]*)\)", out):
        for node in expand_hostlist(nodes):
            held[node] = parse_index_list(idx)
    return held


@pytest.mark.parametrize("mode", ["json", "text"])
def test_snapshot_matches_scontrol(jobs: dict[str, str], mode: str) -> None:
    snap = CliBackend(mode=mode).snapshot()
    by_id = {j.job_id: j for j in snap.jobs}
    for key in ("gres2", "gpn2", "gpus4"):
        job = by_id[jobs[key]]
        assert job.state == "RUNNING"
        assert job.gpu_indices() == _scontrol_indices(jobs[key]), key
    for task in (0, 1):
        tid = f"{jobs['array']}_{task}"
        assert by_id[tid].gpu_indices() == _scontrol_indices(tid)
    assert by_id[jobs["gres2"]].gpus.total == 2 and by_id[jobs["gpn2"]].gpus.total == 2
    assert by_id[jobs["gpus4"]].held_gpus == 4
    held, dep, big = by_id[jobs["held"]], by_id[jobs["dep"]], by_id[jobs["big"]]
    assert held.held and held.gpus.total == 2 and not held.eligible
    assert dep.reason == "Dependency" and dep.gpus.total == 1
    nodes = len(node_gpus())
    assert big.is_pending and (big.gpus.total, big.gpus.per_node, big.num_nodes) == (8 * nodes, 8, nodes)
    assert by_id[jobs["quoted"]].name == QUOTED and by_id[jobs["quoted"]].model == "bert"
    view = snap.to_view()
    pending_ids = [j.job_id for j in view.pending]
    assert jobs["big"] in pending_ids and jobs["held"] not in pending_ids and jobs["dep"] not in pending_ids
    busy = {
        (n.name, g)
        for j in snap.running
        for n_name, item in j.gpu_alloc
        for n in [snap.cluster.node(n_name)]
        for g in (item.indices or ())
    }
    for name, gpu in busy:
        assert not view.pool.free[snap.cluster.node_index[name], gpu]


def test_topology_from_config_files(jobs: dict[str, str]) -> None:
    snap = CliBackend().snapshot()
    etc = Path(os.environ["SLURM_CONF"]).parent
    racks = {}
    for line in (etc / "topology.conf").read_text().splitlines():
        m = re.match(r"SwitchName=(\S+) Nodes=(\S+)", line)
        if m:
            racks[m.group(1)] = expand_hostlist(m.group(2))
    assert {r.name: [snap.cluster.nodes[i].name for i in r.nodes] for r in snap.cluster.racks} == racks
    links: dict[str, list[list[int]]] = {}
    for line in (etc / "gres.conf").read_text().splitlines():
        m = re.match(r"NodeName=(\S+) .*Links=(\S+)", line)
        if m:
            links.setdefault(m.group(1), []).append([int(x) for x in m.group(2).split(",")])
    for node in snap.cluster.nodes:
        rows = links.get(node.name)
        if not rows:
            continue
        for a, row in enumerate(rows):
            for b, weight in enumerate(row):
                if a != b:
                    assert (node.islands[a] == node.islands[b]) == (weight > 0), (node.name, a, b)


def test_cli_snapshot_json(jobs: dict[str, str]) -> None:
    result = CliRunner().invoke(main, ["slurm", "snapshot", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert {j["job_id"] for j in doc["jobs"]} >= {jobs["gres2"], jobs["gpus4"]}
    assert doc["version"].startswith(("2", "3"))
