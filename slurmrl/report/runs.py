"""Find result folders and group them into scenarios.

A report compares policies on *the same* workload, so runs are grouped by the
workload label in their metadata, and a group whose runs disagree on cluster
or trace is refused: putting them in one table would compare apples with
oranges while looking authoritative.

A run is either *simulated* (``meta.source`` absent or ``"simulator"``) or
*live*, replayed on a real Slurm cluster by ``slurmrl replay``
(``meta.source = "slurm"``). Both write the same files, so a replay and its
simulated twin share a workload label and land in one scenario; live labels
carry a ``(Slurm)`` marker so the two never collide, and a live run without
the slurmrl daemon in the loop (``meta.daemon = false``: stock Slurm on its
own) is labelled ``stock Slurm``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from slurmrl.errors import SlurmrlError
from slurmrl.sim.results import JOBS_FILE, SUMMARY_FILE, TIMELINE_FILE, Results, read_results

_RUN_FILES = (SUMMARY_FILE, JOBS_FILE, TIMELINE_FILE)
# How far below an input folder run folders are looked for: DIR/runs/<run> is depth 2.
MAX_DEPTH = 2

Source = Literal["simulator", "slurm"]
SOURCES: tuple[Source, ...] = ("simulator", "slurm")
LIVE_MARK = "Slurm"  # appended to live labels: "fifo+first-fit (Slurm)"
STOCK_LABEL = "stock Slurm"  # a live run with no slurmrl daemon in the loop


@dataclass(frozen=True)
class Run:
    """One run, simulated or live on Slurm, as shown in the report."""

    label: str  # unique within its scenario, e.g. "fifo+first-fit"
    policy: str
    placement: str
    deployable: bool
    results: Results
    source: Source = "simulator"
    daemon: bool = True  # live runs only: False = stock Slurm scheduled on its own

    @property
    def path(self) -> Path:
        return self.results.path

    @property
    def live(self) -> bool:
        return self.source == "slurm"

    @property
    def name(self) -> str:
        """The label without live marker or folder name, e.g. ``fifo+first-fit`` or ``stock Slurm``."""
        return base_label(self.policy, self.placement, self.source, self.daemon)

    @property
    def stock(self) -> bool:
        """A live run of stock Slurm alone, whose simulated counterpart is the ``slurm`` policy."""
        return self.live and not self.daemon


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
            missing.append(
                f"{root} ({'a file: pass the folder that holds it' if root.exists() else 'does not exist'})"
            )
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
            "not a result folder: " + ", ".join(missing),
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


def run_source(meta: dict[str, object], path: Path) -> Source:
    """``meta.source`` checked: absent means a simulated run (files written before replays existed)."""
    raw = meta.get("source", "simulator")
    if raw is None or raw == "":
        return "simulator"
    if raw not in SOURCES:
        raise SlurmrlError(
            f"field 'meta.source' should be one of {', '.join(SOURCES)}, found {raw!r}",
            file=str(path / SUMMARY_FILE),
            hint="result folders are written by `slurmrl simulate --out` or `slurmrl replay`",
        )
    return raw  # type: ignore[return-value]


def _daemon(meta: dict[str, object], policy: str) -> bool:
    """Whether slurmrl's daemon drove a live run; without the key, stock Slurm reads as policy ``slurm``."""
    value = meta.get("daemon")
    return value if isinstance(value, bool) else policy != "slurm"


def base_label(policy: str, placement: str, source: Source, daemon: bool) -> str:
    if source == "slurm" and not daemon:
        return STOCK_LABEL
    return f"{policy}+{placement}" if placement else policy


def _shown_label(base: str, source: Source, daemon: bool, folder: str | None) -> str:
    """``base`` with what tells it apart: the live marker and, for a repeated label, the folder name."""
    notes = [LIVE_MARK] if source == "slurm" and daemon else []
    if folder is not None:
        notes.append(folder)
    return f"{base} ({', '.join(notes)})" if notes else base


def _label_runs(members: Sequence[Results]) -> tuple[Run, ...]:
    """Runs labelled ``policy+placement`` (live: ``... (Slurm)`` or ``stock Slurm``).

    A label used twice gets its folder name appended.
    """
    base: list[tuple[str, str, str, bool, Source, bool]] = []
    for res in members:
        meta = dict(res.meta)
        policy = _text(meta, "policy", res.path.name)
        placement = _text(meta, "placement", "")
        source = run_source(meta, res.path)
        daemon = _daemon(meta, policy) if source == "slurm" else True
        label = _shown_label(base_label(policy, placement, source, daemon), source, daemon, None)
        deployable = meta.get("deployable", True) is not False
        base.append((label, policy, placement, deployable, source, daemon))
    counts: dict[str, int] = {}
    for label, *_ in base:
        counts[label] = counts.get(label, 0) + 1
    runs = []
    for res, (label, policy, placement, deployable, source, daemon) in zip(members, base, strict=True):
        if counts[label] > 1:
            plain = base_label(policy, placement, source, daemon)
            label = _shown_label(plain, source, daemon, res.path.name)
        runs.append(Run(label, policy, placement, deployable, res, source, daemon))
    runs.sort(key=lambda r: (not r.deployable, r.label))
    return tuple(runs)
