"""compare and simulate --seeds on every core give what one process gives, run for run."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from slurmrl.cli import main
from slurmrl.grid.store import records_fingerprint
from slurmrl.sim.results import read_results

WORKLOAD = ["--cluster", "2x4x8:v100", "--limit", "80", "--no-progress"]


def _fingerprints(root: Path) -> dict[str, str]:
    return {
        str(p.parent.relative_to(root)): records_fingerprint(read_results(p.parent).records)
        for p in sorted(root.rglob("summary.json"))
    }


def _without_wall(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in rows]


def test_compare_on_two_processes_equals_one(tmp_path: Path) -> None:
    outs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        args = ["compare", *WORKLOAD, "--policies", "fifo,sjf-oracle,tiresias+topology", "--seeds", "2"]
        result = CliRunner().invoke(main, [*args, "--jobs", jobs, "--out", str(out)])
        assert result.exception is None, result.output
        outs[jobs] = out
    serial, pooled = _fingerprints(outs["1"]), _fingerprints(outs["2"])
    assert len(serial) == 6 and serial == pooled
    for seed in ("seed-0", "seed-1"):
        tables = [json.loads((outs[j] / seed / "comparison.json").read_text())["rows"] for j in ("1", "2")]
        assert _without_wall(tables[0]) == _without_wall(tables[1])


def test_simulate_seeds_on_two_processes_equals_one(tmp_path: Path) -> None:
    printed = []
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        args = ["simulate", *WORKLOAD, "--policy", "sjf-oracle", "--seeds", "3", "--json", "--jobs", jobs]
        result = CliRunner().invoke(main, [*args, "--out", str(out)])
        assert result.exception is None, result.output
        payload = json.loads(result.output)
        printed.append([{k: v for k, v in r.items() if k != "wall_seconds"} for r in payload["rows"]])
    assert printed[0] == printed[1]
    assert _fingerprints(tmp_path / "jobs1") == _fingerprints(tmp_path / "jobs2")
    assert sorted(_fingerprints(tmp_path / "jobs1")) == ["seed-0", "seed-1", "seed-2"]


def test_evaluate_seeds_on_two_processes_equal_one_and_simulate() -> None:
    printed = []
    for command, jobs in (("evaluate", "1"), ("evaluate", "2"), ("simulate", "2")):
        args = [command, *WORKLOAD, "--policy", "tiresias", "--seeds", "3", "--json", "--jobs", jobs]
        result = CliRunner().invoke(main, args)
        assert result.exception is None, result.output
        rows = json.loads(result.output)["rows"]
        printed.append(_without_wall(rows))
    assert len(printed[0]) == 1 and printed[0][0]["finished"] == {"mean": 80.0, "half_width": 0.0, "n": 3}
    assert printed[0] == printed[1] == printed[2]


def test_evaluate_seeds_refuses_an_unknown_policy_before_any_run() -> None:
    result = CliRunner().invoke(
        main, ["evaluate", *WORKLOAD, "--policy", "fifoo", "--seeds", "2", "--jobs", "2"]
    )
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "unknown policy 'fifoo'" in result.output and "Traceback" not in result.output
