"""One replay of a grid as a frozen value, and the function that runs it anywhere.

A :class:`Cell` names its workload the way a user does (a scenario, or a
trace and a cluster spec, plus options) rather than carrying the loaded
jobs: it pickles in bytes, so a pool worker or a Slurm array task builds the
workload itself, through the same :func:`~slurmrl.sim.experiment.prepare`
as ``simulate``, and gets the same jobs. A worker keeps the last few
workloads it built, so the cells of one workload under many policies load
the trace once per process.
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import json
import numbers
import re
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from slurmrl.errors import ConfigError
from slurmrl.sim.experiment import ROW_FLAGS, RunOutput, SimSettings, Workload, prepare, run_policy

# prepare()'s keywords that a cell names in its own fields, not among its options.
_CELL_FIELDS = ("trace", "cluster", "scenario", "seed")


def _workload_defaults() -> dict[str, Any]:
    params = inspect.signature(prepare).parameters
    return {n: p.default for n, p in params.items() if n not in _CELL_FIELDS}


WORKLOAD_DEFAULTS = _workload_defaults()
SETTING_DEFAULTS: dict[str, Any] = SimSettings().as_meta()
_PLAIN = (bool, int, float, str)


def _plain_kinds() -> dict[str, tuple[tuple[type, ...], bool]]:
    """Each option's plain value types from its annotation (and whether None is allowed);
    options of richer types (locality and elastic rules, VC lists) are not listed."""
    hints = {**typing.get_type_hints(prepare), **typing.get_type_hints(SimSettings)}
    kinds = {}
    for name in (*WORKLOAD_DEFAULTS, *SETTING_DEFAULTS):
        args = typing.get_args(hints[name]) or (hints[name],)
        plain = tuple(a for a in args if a in _PLAIN)
        if plain and all(a in _PLAIN or a is type(None) for a in args):
            kinds[name] = (plain, type(None) in args)
    return kinds


_KINDS = _plain_kinds()


def _check_kind(key: str, value: Any, caller: str) -> None:
    """A value of the wrong type is one clear error here, not a TypeError deep in a replay."""
    kind = _KINDS.get(key)
    if kind is None or (value is None and kind[1]):
        return
    plain, _ = kind
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):  # numpy's too
        ok = bool in plain
    elif isinstance(value, numbers.Integral):
        ok = int in plain or float in plain
    elif isinstance(value, numbers.Real):
        ok = float in plain
    else:
        ok = isinstance(value, str) and str in plain
    if not ok:
        names = " or ".join(
            {bool: "true/false", int: "an integer", float: "a number", str: "text"}[t] for t in plain
        )
        raise ConfigError(f"{caller}() option '{key}' takes {names}, not {value!r}")


def _normal_value(key: str, value: Any) -> Any:
    """An option's value as plain JSON-able data (locality and elastic rules as their text)."""
    if key == "vcs":
        return (value,) if isinstance(value, str) else tuple(str(v) for v in value or ())
    if key in ("locality", "elastic"):
        return str(value)
    return value


def normal_options(
    options: Mapping[str, Any], caller: str = "sweep", also: Iterable[str] = ()
) -> tuple[tuple[str, Any], ...]:
    """Options checked against the workload and simulator keywords, defaults dropped, sorted.

    Dropping defaults makes ``speed_model="placement"`` (the default) and no
    option at all the same cell, so a re-run finds its finished folder.
    ``also`` names keywords the caller takes itself, for the error's list.
    """
    known = {**WORKLOAD_DEFAULTS, **SETTING_DEFAULTS}
    kept = []
    for key, value in options.items():
        if key not in known:
            names = sorted({*known, *also})
            close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
            raise ConfigError(
                f"{caller}() got an unknown option '{key}'; known: {', '.join(names)}",
                hint=f"did you mean {', '.join(repr(c) for c in close)}?" if close else None,
            )
        _check_kind(key, value, caller)
        value = _normal_value(key, value)
        if value != _normal_value(key, known[key]) and value is not None:
            kept.append((key, value))
    return tuple(sorted(kept))


def split_options(
    options: Mapping[str, Any], caller: str = "sweep", also: Iterable[str] = ()
) -> tuple[dict[str, Any], SimSettings]:
    """Options as ``prepare`` keywords and a :class:`SimSettings` (unknown keys are an error)."""
    from slurmrl.sim.locality import parse_locality

    normal = dict(normal_options(options, caller, also))
    workload = {k: v for k, v in normal.items() if k in WORKLOAD_DEFAULTS}
    chosen = {k: v for k, v in normal.items() if k in SETTING_DEFAULTS}
    if "locality" in chosen:
        chosen["locality"] = parse_locality(chosen["locality"])
    return workload, SimSettings(**chosen)


@dataclass(frozen=True)
class Cell:
    """One replay: a workload (scenario, or trace on cluster), a policy and placement, a seed, options."""

    policy: str
    placement: str | None = None
    seed: int = 0
    trace: str | None = None
    cluster: str | None = None
    scenario: str | None = None
    options: tuple[tuple[str, Any], ...] = ()  # as normal_options gives them

    def key(self) -> dict[str, Any]:
        """Everything that decides the cell's result, as JSON-able data."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}

    @property
    def workload_name(self) -> str:
        return self.scenario or Path(str(self.trace or "embedded:philly-sample")).name

    @property
    def cost(self) -> float:
        """The replay's cost relative to other policies' on the same workload (``Entry.cost``)."""
        from slurmrl.policy.registry import policy_cost

        return policy_cost(self.policy)

    @property
    def id(self) -> str:
        """A folder name: readable (workload, policy, seed) and unique (a hash of the whole key)."""
        digest = hashlib.blake2b(json.dumps(self.key(), sort_keys=True).encode(), digest_size=5).hexdigest()
        label = f"{self.workload_name}_{Path(self.policy).name}+{self.placement or ''}_s{self.seed}"
        return f"{re.sub(r'[^A-Za-z0-9_.+-]+', '-', label)}_{digest}"


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


@lru_cache(maxsize=4)
def _workload(
    trace: str | None, cluster: str | None, scenario: str | None, seed: int, options: tuple
) -> Workload:
    workload_kwargs, _ = split_options(dict(options))
    return prepare(trace=trace, cluster=cluster, scenario=scenario, seed=seed, **workload_kwargs)


def cell_workload(cell: Cell) -> Workload:
    """The cell's jobs and cluster; the last few built in this process are reused."""
    workload_keys = tuple((k, v) for k, v in cell.options if k in WORKLOAD_DEFAULTS)
    return _workload(cell.trace, cell.cluster, cell.scenario, cell.seed, workload_keys)


def policy_target(policy: str, placement: str | None) -> Any:
    """A registered policy's name as is, or a fresh policy loaded from a checkpoint folder."""
    if not Path(policy).is_dir():
        return policy
    from slurmrl.policy.registry import make_placement
    from slurmrl.rl.checkpoints import policy_from_dir

    return policy_from_dir(policy, make_placement(placement) if placement else None)


def simulate_cell(cell: Cell, progress: Any = None) -> RunOutput:
    """Replay one cell: the same path as ``slurmrl simulate`` with the cell's choices."""
    _, settings = split_options(dict(cell.options))
    return run_policy(
        cell_workload(cell),
        policy_target(cell.policy, cell.placement),
        placement=cell.placement,
        settings=settings,
        progress=progress,
    )


def summary_row(policy: str, result: RunOutput) -> dict[str, Any]:
    """A comparison table's row: the policy as asked for (a name or a checkpoint folder), its kind and the summary.

    ``learned`` and ``preemptive`` travel with the row so that the gap
    closure picks the right clairvoyant reference (a learned policy led by a
    preemptive heuristic preempts too).
    """
    meta = result.meta
    return {
        "policy": policy,
        "placement": meta["placement"],
        **{flag: bool(meta.get(flag, flag == "deployable")) for flag in ROW_FLAGS},
        **result.summary,
    }


@dataclass(frozen=True)
class Replay:
    """A cell of ``compare`` or ``simulate --seeds`` and where its run folder goes, if anywhere."""

    cell: Cell
    folder: str | None = None  # the run folder; with ``runs`` the folder of runs/POLICY+PLACEMENT
    runs: bool = False


def replay(task: Replay) -> dict[str, Any]:
    """Run one :class:`Replay` (in any process) and return its table row."""
    from slurmrl.sim.experiment import save_run
    from slurmrl.sim.results import run_folder

    result = simulate_cell(task.cell)
    if task.folder is not None:
        folder = Path(task.folder)
        if task.runs:
            folder = folder / "runs" / run_folder(f"{task.cell.policy}+{result.meta['placement']}")
        save_run(folder, result)
    return summary_row(task.cell.policy, result)
