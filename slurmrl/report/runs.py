"""Find result folders and group them into scenarios.

A report compares policies on *the same* workload, so runs are grouped by the
workload label in their metadata, and a group whose runs disagree on cluster
or trace is refused: putting them in one table would compare apples with
oranges while looking authoritative.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from slurmrl.errors import SlurmrlError
from slurmrl.sim.results import JOBS_FILE, SUMMARY_FILE, TIMELINE_FILE, Results, read_results

_RUN_FILES = (SUMMARY_FILE, JOBS_FILE, TIMELINE_FILE)
# How far below an input folder run folders are looked for: DIR/runs/<run> is depth 2.
MAX_DEPTH = 2


@dataclass(frozen=True)
class Run:
    """One simulation run as shown in the report."""

    label: str  # unique within its scenario, e.g. "fifo+first-fit"
    policy: str
    placement: str
    deployable: bool
    results: Results

    @property
    def path(self) -> Path:
        return self.results.path


@dataclass(frozen=True)
class Scenario:
    """Runs that replayed one workload on one cluster."""

    name: str
    slug: str
    cluster: str
    trace: str
    runs: tuple[Run, ...]

    @property
    def jobs(self) -> int:
        return max(run.results.summary.jobs for run in self.runs)


def _is_run_dir(path: Path) -> bool:
    return any((path / name).is_file() for name in _RUN_FILES)


def find_run_dirs(inputs: Sequence[Path]) -> list[Path]:
    """Run folders at or below each input (depth at most :data:`MAX_DEPTH`), sorted, deduplicated."""
    found: dict[Path, None] = {}
    missing: list[str] = []
    for raw in inputs:
        root = Path(raw)
        if not root.is_dir():
            missing.append(str(root))
            continue
        level = [root]
        for _ in range(MAX_DEPTH + 1):
            nxt: list[Path] = []
            for folder in level:
                if _is_run_dir(folder):
                    found[folder.resolve()] = None
                else:
                    nxt.extend(sorted(p for p in folder.iterdir() if p.is_dir()))
            level = nxt
    if missing:
        raise SlurmrlError(
            "result folder does not exist: " + ", ".join(missing),
            hint="pass folders written by `slurmrl simulate --out` or `slurmrl compare --out`",
        )
    if not found:
        raise SlurmrlError(
            "no simulation results found in " + ", ".join(str(p) for p in inputs),
            hint=f"a run folder holds {SUMMARY_FILE}, {JOBS_FILE} and {TIMELINE_FILE}; "
            "looked up to two levels down (e.g. DIR/runs/*)",
        )
    return sorted(found)


def slugify(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug or "scenario"


def _text(meta: dict[str, object], key: str, default: str) -> str:
    value = meta.get(key)
    return default if value is None or value == "" else str(value)


def load_scenarios(inputs: Sequence[Path]) -> tuple[Scenario, ...]:
    """Read every run below ``inputs`` and group them by ``meta.workload``, in name order."""
    groups: dict[str, list[Results]] = {}
    for folder in find_run_dirs(inputs):
        res = read_results(folder)
        meta = dict(res.meta)
        name = _text(meta, "workload", _text(meta, "trace", "unnamed workload"))
        groups.setdefault(name, []).append(res)

    scenarios: list[Scenario] = []
    slugs: set[str] = set()
    for name in sorted(groups):
        members = groups[name]
        first = members[0]
        cluster = _text(dict(first.meta), "cluster", "unknown cluster")
        trace = _text(dict(first.meta), "trace", "unknown trace")
        for other in members[1:]:
            for key, expected in (("cluster", cluster), ("trace", trace)):
                got = _text(dict(other.meta), key, f"unknown {key}")
                if got != expected:
                    raise SlurmrlError(
                        f"runs of scenario '{name}' used different {key}s: '{expected}' in {first.path} "
                        f"but '{got}' in {other.path}",
                        file=str(other.path / SUMMARY_FILE),
                        hint="only runs of one workload on one cluster can be compared; "
                        "render them from separate folders",
                    )
        slug = slugify(name)
        base, n = slug, 2
        while slug in slugs:
            slug, n = f"{base}-{n}", n + 1
        slugs.add(slug)
        scenarios.append(Scenario(name, slug, cluster, trace, _label_runs(members)))
    return tuple(scenarios)


def _label_runs(members: Sequence[Results]) -> tuple[Run, ...]:
    """Runs labelled ``policy+placement``; a label used twice gets its folder name appended."""
    base: list[tuple[str, str, str, bool]] = []
    for res in members:
        meta = dict(res.meta)
        policy = _text(meta, "policy", res.path.name)
        placement = _text(meta, "placement", "")
        label = f"{policy}+{placement}" if placement else policy
        base.append((label, policy, placement, meta.get("deployable", True) is not False))
    counts: dict[str, int] = {}
    for label, *_ in base:
        counts[label] = counts.get(label, 0) + 1
    runs = []
    for res, (label, policy, placement, deployable) in zip(members, base, strict=True):
        shown = f"{label} ({res.path.name})" if counts[label] > 1 else label
        runs.append(Run(shown, policy, placement, deployable, res))
    runs.sort(key=lambda r: (not r.deployable, r.label))
    return tuple(runs)
