"""The scenario catalogue and how a scenario becomes a workload."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from slurmrl.errors import SlurmrlError

DAY = 86400.0
PHILLY = "philly/philly_jobs_2017-10-02_to_2017-10-30.csv.gz"
OPENB = "alibaba/openb_pods_v2023.csv.gz"


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    trace: str  # "embedded:NAME" or a path relative to the shared traces folder
    cluster: str  # a cluster spec as --cluster takes it; "data:FILE" = shipped spec
    target_load: float  # offered load by GPU-time after arrival compression
    start: float | None = None  # window on submit time, seconds
    end: float | None = None
    role: str = "benchmark"  # "train" or "eval" for the RL split, else "benchmark"

    def cluster_spec(self) -> str:
        if self.cluster.startswith("data:"):
            name = self.cluster.removeprefix("data:")
            return str(resources.files("slurmrl.scenarios") / "data" / name)
        return self.cluster

    def trace_path(self) -> str:
        if self.trace.startswith("embedded:"):
            return self.trace
        return str(shared_traces_dir() / self.trace)


def shared_traces_dir() -> Path:
    """Where the public traces live: ``$SLURMRL_TRACES`` or ``../shared/traces``.

    The default is looked up beside the current directory and beside the
    source checkout, the two places a clone of this repository sits next to.
    """
    env = os.environ.get("SLURMRL_TRACES")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[2]
    for base in (Path.cwd(), here):
        candidate = (base / ".." / "shared" / "traces").resolve()
        if candidate.is_dir():
            return candidate
    raise SlurmrlError(
        "the shared traces folder was not found",
        hint="set SLURMRL_TRACES to the folder holding philly/ and alibaba/, or use an embedded scenario",
    )


_LIST = [
    Scenario(
        "philly-sample",
        "embedded Philly week (2017-10-02..09) on 64 V100 GPUs at offered load 0.9",
        "embedded:philly-sample", "2x4x8:v100", 0.9,
    ),
    Scenario(
        "philly-512-l08",
        "4 Philly weeks (46,070 jobs) on 8x8x8 V100 at offered load 0.8",
        PHILLY, "8x8x8:v100", 0.8,
    ),
    Scenario(
        "philly-512-l10",
        "4 Philly weeks (46,070 jobs) on 8x8x8 V100 at offered load 1.0",
        PHILLY, "8x8x8:v100", 1.0,
    ),
    Scenario(
        "philly-hetero",
        "4 Philly weeks on a 512-GPU mix of V100/P100/K80 nodes at offered load 0.9",
        PHILLY, "data:hetero-512.toml", 0.9,
    ),
    Scenario(
        "philly-64-week1",
        "Philly week 1 on 64 V100 GPUs at offered load 0.9 (RL training)",
        PHILLY, "2x4x8:v100", 0.9, 0.0, 7 * DAY, role="train",
    ),
    Scenario(
        "philly-64-week2",
        "Philly week 2 on 64 V100 GPUs at offered load 0.9 (RL training)",
        PHILLY, "2x4x8:v100", 0.9, 7 * DAY, 14 * DAY, role="train",
    ),
    Scenario(
        "philly-64-week3",
        "Philly week 3 on 64 V100 GPUs at offered load 0.9 (RL evaluation, unseen in training)",
        PHILLY, "2x4x8:v100", 0.9, 14 * DAY, 21 * DAY, role="eval",
    ),
    Scenario(
        "philly-64-week4",
        "Philly week 4 on 64 V100 GPUs at offered load 1.0 (RL evaluation, unseen in training)",
        PHILLY, "2x4x8:v100", 1.0, 21 * DAY, 28 * DAY, role="eval",
    ),
    Scenario(
        "alibaba-openb",
        "Alibaba 2023 openb GPU pods on 256 T4-class GPUs at offered load 0.9",
        OPENB, "4x8x8:t4", 0.9,
    ),
]
SCENARIOS: dict[str, Scenario] = {s.name: s for s in _LIST}


def scenario_names() -> list[str]:
    return list(SCENARIOS)


def get_scenario(name: str) -> Scenario:
    if name in SCENARIOS:
        return SCENARIOS[name]
    close = difflib.get_close_matches(name, list(SCENARIOS), n=3, cutoff=0.5)
    raise SlurmrlError(
        f"unknown scenario '{name}'; known: {', '.join(SCENARIOS)}",
        hint=f"did you mean {', '.join(repr(c) for c in close)}?" if close else "see `slurmrl scenarios`",
    )
