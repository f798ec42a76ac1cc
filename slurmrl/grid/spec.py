"""A sweep's axes and their cross product into cells.

Workloads are scenarios (each fixes its trace and cluster) and traces
crossed with clusters; every workload is crossed with every (policy,
placement) pair, every seed and every combination of the varied options.
An option with one value applies to every cell.
"""

from __future__ import annotations

import difflib
import itertools
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurmrl.errors import ConfigError
from slurmrl.grid.cells import SETTING_DEFAULTS, WORKLOAD_DEFAULTS, Cell, normal_options

# Keys of a sweep file that name axes; any other key is an option (see normal_options).
AXES = ("scenarios", "traces", "clusters", "policies", "placements", "seeds", "seed")


@dataclass(frozen=True)
class Grid:
    """The axes of a sweep; :meth:`cells` crosses them."""

    policies: tuple[tuple[str, str | None], ...]
    scenarios: tuple[str, ...] = ()
    traces: tuple[str, ...] = ()
    clusters: tuple[str | None, ...] = (None,)  # None: the default cluster
    seeds: tuple[int, ...] = (0,)
    options: tuple[tuple[str, tuple[Any, ...]], ...] = ()  # option -> the values it takes

    def workloads(self) -> list[tuple[str | None, str | None, str | None]]:
        """(scenario, trace, cluster) of every workload, scenarios first."""
        if self.scenarios and not self.traces and self.clusters != (None,):
            raise ConfigError(
                "clusters are crossed with traces, and a scenario fixes its own cluster",
                column="clusters",
                hint="drop the clusters, or give traces to run on them",
            )
        named = [(s, None, None) for s in self.scenarios]
        traced = [(None, t, c) for t in self.traces for c in self.clusters]
        return named + traced or [(None, None, c) for c in self.clusters]

    def cells(self) -> list[Cell]:
        """Every cell, workload-major (so a worker reuses a loaded trace), then options, policy, seed."""
        keys = [k for k, _ in self.options]
        combos = list(itertools.product(*(values for _, values in self.options)))
        cells: list[Cell] = []
        for scenario, trace, cluster in self.workloads():
            for combo in combos:
                options = normal_options(dict(zip(keys, combo, strict=True)))
                for seed in self.seeds:
                    for policy, placement in self.policies:
                        cells.append(Cell(policy, placement, seed, trace, cluster, scenario, options))
        ids = [c.id for c in cells]
        if len(set(ids)) != len(ids):
            raise ConfigError("the sweep lists the same cell twice; drop repeated values from its axes")
        return cells

    def varied(self) -> list[str]:
        """Options that take more than one value."""
        return [k for k, values in self.options if len(values) > 1]

    def describe(self) -> dict[str, Any]:
        return {
            "scenarios": list(self.scenarios),
            "traces": list(self.traces),
            "clusters": list(self.clusters),
            "policies": [f"{p}+{q}" if q else p for p, q in self.policies],
            "seeds": list(self.seeds),
            "options": {k: list(v) for k, v in self.options},
        }


def as_list(value: Any) -> list[Any]:
    """A TOML value or a flag as a list: a list as is, a comma-separated string split, a scalar alone."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [value]


def seeds_of(value: Any, first: int = 0) -> tuple[int, ...]:
    """``seeds = 3`` (a count, from ``first``) or ``seeds = [0, 4, 7]`` (the seeds themselves)."""
    if isinstance(value, bool) or value is None:
        raise ConfigError("seeds must be a count or a list of seeds", column="seeds")
    if isinstance(value, int):
        if value < 1:
            raise ConfigError(f"seeds must be at least 1, got {value}", column="seeds")
        return tuple(range(first, first + value))
    seeds = as_list(value)
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise ConfigError(f"seeds must be a count or a list of whole numbers, got {value!r}", column="seeds")
    return tuple(seeds)


def read_sweep_file(path: Path) -> dict[str, Any]:
    """A TOML sweep file as a table (axes and options); a bad file is one line naming it."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read sweep file: {exc.strerror or exc}", file=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", file=str(path)) from None
    options = data.pop("options", {})
    if not isinstance(options, dict):
        raise ConfigError("[options] must be a table of option = value or [values]", file=str(path))
    clash = sorted(set(options) & set(data))
    if clash:
        raise ConfigError(f"{', '.join(clash)} given both at top level and in [options]", file=str(path))
    table = {k.replace("-", "_"): v for k, v in {**data, **options}.items()}
    for key, value in table.items():
        _check_key(path, key, value)
    return table


def _check_key(path: Path, key: str, value: Any) -> None:
    """A key the sweep file may have: an axis or an option, never a table but ``[options]``."""
    if isinstance(value, dict):
        raise ConfigError(
            f"[{key}] is not a table a sweep file has: axes and options go at top level, options also in [options]",
            file=str(path),
        )
    names = sorted({*AXES, *WORKLOAD_DEFAULTS, *SETTING_DEFAULTS})
    if key not in names:
        close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
        raise ConfigError(
            f"unknown key '{key}'; known: {', '.join(names)}",
            file=str(path),
            hint=f"did you mean {', '.join(repr(c) for c in close)}?" if close else None,
        )


def option_axes(values: Mapping[str, Sequence[Any]]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """Options as sorted (name, values) pairs; an empty list of values is an error naming the option."""
    axes = []
    for key, options in sorted(values.items()):
        if not options:
            raise ConfigError(f"option '{key}' has no values", column=key)
        axes.append((key, tuple(options)))
    return tuple(axes)
