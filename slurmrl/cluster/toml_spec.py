"""TOML cluster specs: reading them with full validation, and writing them back.

The TOML format is shared with ``contrib/testcluster/testcluster``, which turns
the same file into a running Slurm cluster, so a simulated cluster and a test
cluster can be the same file. The rules therefore match that script: the same
built-in defaults (8 x V100, ``nvlink:4``, 64 CPUs, 256,000 MB), node counts
numbered ``nodeNN`` across the whole cluster, and an optional ``[slurm]``
table that only the test cluster reads. Node fields (``gpus``, ``gpu_type``,
``intra``, ``cpus``, ``memory_mb``) may be given in ``[defaults]``, in a
``[[racks]]`` table (for every node of that rack) and in ``[nodes.NAME]``, the
most specific winning. Names may start with a digit (machine ids in Alibaba
lists do), ``cpus``/``memory_mb`` may be 0 for "unknown" (trace machine lists
rarely give them), and a node may give ``islands = [...]`` when no ``intra``
string describes its NVLink layout; :func:`cluster_to_toml` only writes
``islands`` when it must. An optional ``[scheduler]`` table holds a Slurm
cluster's scheduling keys as slurm.conf spells them (``PriorityWeightAge``,
``SchedulerParameters``...); ``slurmrl cluster from-slurm`` writes it and the
simulator's ``slurm`` policy runs with it.

Validation collects every problem before failing, because fixing a spec one
error per run is slow.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from slurmrl.cluster.builders import NodeSpec, assemble, size_problem
from slurmrl.cluster.model import Cluster, islands_for
from slurmrl.errors import SpecError
from slurmrl.slurm.scheduler_conf import SchedulerSettings, settings_from_mapping

# Built-in defaults of contrib/testcluster/testcluster's load_spec; keep in step.
BUILTIN_DEFAULTS: dict[str, Any] = {
    "gpus": 8,
    "gpu_type": "v100",
    "intra": "nvlink:4",
    "cpus": 64,
    "memory_mb": 256000,
}
NODE_FIELDS = ("gpus", "gpu_type", "intra", "cpus", "memory_mb")
TOP_KEYS = ("name", "defaults", "racks", "nodes", "slurm", "scheduler")
RACK_KEYS = ("name", "nodes")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _did_you_mean(key: str, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"unknown key '{key}'; {hint}allowed: {', '.join(allowed)}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Checker:
    """Collects problems as ``key.path: message`` lines."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def fields(self, table: Any, where: str, *, allow_islands: bool) -> dict[str, Any]:
        """Valid node fields of a [defaults] or [nodes.X] table; bad ones are reported and dropped."""
        out: dict[str, Any] = {}
        if not isinstance(table, dict):
            self.add(where, f"must be a table, got {type(table).__name__}")
            return out
        allowed = NODE_FIELDS + (("islands",) if allow_islands else ())
        for key, value in table.items():
            at = f"{where}.{key}"
            if key not in allowed:
                self.add(where, _did_you_mean(key, allowed))
            elif key in ("gpus", "cpus", "memory_mb"):
                # 0 CPUs / 0 MB means "unknown" (trace machine lists rarely say).
                if not _is_int(value) or value < 0:
                    self.add(at, f"must be a non-negative integer, got {value!r}")
                elif key == "gpus" and (too_big := size_problem(0, value)) is not None:
                    self.add(at, too_big)
                else:
                    out[key] = value
            elif key == "islands":
                if not isinstance(value, list) or not all(_is_int(v) and v >= 0 for v in value):
                    self.add(at, f"must be a list of non-negative island ids, one per GPU, got {value!r}")
                else:
                    out[key] = tuple(value)
            elif not isinstance(value, str) or not value.strip():
                self.add(at, f"must be a non-empty string, got {value!r}")
            elif key == "intra":
                try:
                    islands_for(value, 1)
                    out[key] = value.strip().lower()
                except ValueError as exc:
                    self.add(at, str(exc))
            else:
                out[key] = value.strip()
        return out


def load_toml_spec(path: str | Path) -> Cluster:
    """Read and validate a TOML cluster spec file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise SpecError(f"cannot read cluster spec: {exc.strerror}", file=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"not valid TOML: {exc}", file=str(path)) from None
    return parse_toml_spec(raw, str(path), default_name=path.stem)


def parse_toml_spec(raw: dict[str, Any], where: str = "<spec>", default_name: str = "cluster") -> Cluster:
    """Validate an already-decoded TOML document; every problem is reported in one :class:`SpecError`."""
    check = _Checker()
    name = _top_level(raw, check, default_name)
    scheduler = _scheduler(raw.get("scheduler"), where, check)
    defaults = dict(BUILTIN_DEFAULTS)
    defaults.update(check.fields(raw.get("defaults", {}), "defaults", allow_islands=False))
    overrides = raw.get("nodes", {})
    if not isinstance(overrides, dict):
        check.add("nodes", "must be tables like [nodes.node04]")
        overrides = {}
    racks_raw = raw.get("racks")
    if not isinstance(racks_raw, list) or not racks_raw:
        check.add("racks", "needs at least one [[racks]] table with 'name' and 'nodes'")
        racks_raw = []
    layout = _Layout(racks_raw, check)
    too_big = size_problem(layout.planned, 0)
    if too_big is not None:  # stop before naming them: a typo here would name millions
        raise SpecError(f"racks: {too_big}", file=where)
    for i, rack in enumerate(racks_raw):
        layout.add(i, rack)
    layout.check_names()
    node_fields = _node_overrides(overrides, layout.owner, check)
    racks = [
        (rname, _node_specs(members, {**defaults, **rack_fields}, node_fields, check))
        for rname, members, rack_fields in layout.racks
    ]
    if check.problems:
        count = len(check.problems)
        listing = "\n".join(f"  - {p}" for p in check.problems)
        raise SpecError(f"{count} problem{'s' if count > 1 else ''} in cluster spec:\n{listing}", file=where)
    cluster = assemble(name.strip(), racks)
    return cluster if scheduler is None else replace(cluster, scheduler=scheduler)


def _top_level(raw: dict[str, Any], check: _Checker, default_name: str) -> str:
    """The cluster's name; unknown top-level keys and a ``slurm`` that is no table are problems."""
    for key in raw:
        if key not in TOP_KEYS:
            check.add("(top level)", _did_you_mean(key, TOP_KEYS))
    name = raw.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        check.add("name", f"must be a non-empty string, got {name!r}")
        name = default_name
    if "slurm" in raw and not isinstance(raw["slurm"], dict):
        check.add("slurm", "must be a table (options for contrib/testcluster only)")
    return name


class _Layout:
    """The ``[[racks]]`` tables read in order: each rack's name, node names and fields.

    Counted racks are numbered across the whole cluster, named racks
    included, with at least two digits: the same rule as the test cluster script.
    """

    def __init__(self, racks_raw: list[Any], check: _Checker) -> None:
        self.check = check
        counted = sum(r["nodes"] for r in racks_raw if isinstance(r, dict) and _is_int(r.get("nodes")))
        named = sum(
            len(r["nodes"]) for r in racks_raw if isinstance(r, dict) and isinstance(r.get("nodes"), list)
        )
        self.width = max(2, len(str(counted + named)))
        self.planned = counted + named  # nodes the racks ask for
        self.next_number = 1
        self.owner: dict[str, str] = {}  # node -> where it was listed
        self.rack_names: dict[str, str] = {}  # rack -> where it was defined
        self.racks: list[tuple[str, list[str], dict[str, Any]]] = []

    def add(self, i: int, rack: Any) -> None:
        check, at = self.check, f"racks[{i}]"
        if not isinstance(rack, dict):
            check.add(at, f"must be a table, got {type(rack).__name__}")
            return
        for key in rack:
            if key not in RACK_KEYS + NODE_FIELDS:
                check.add(at, _did_you_mean(key, RACK_KEYS + NODE_FIELDS))
        rack_fields = check.fields(
            {k: v for k, v in rack.items() if k in NODE_FIELDS}, at, allow_islands=False
        )
        rname = self._rack_name(i, rack.get("name", f"rack{i + 1}"))
        members = self._members(at, rack.get("nodes"))
        if members is not None:
            self.racks.append((rname, self._claim(at, members), rack_fields))

    def _rack_name(self, i: int, rname: Any) -> str:
        at = f"racks[{i}].name"
        if not isinstance(rname, str) or not NAME_RE.match(rname):
            self.check.add(at, f"must be a name of letters, digits, '_', '.', '-', got {rname!r}")
            rname = f"rack{i + 1}"
        elif rname in self.rack_names:
            self.check.add(at, f"rack '{rname}' is already defined at {self.rack_names[rname]}")
        self.rack_names.setdefault(rname, f"racks[{i}]")
        return rname

    def _members(self, at: str, members: Any) -> list[str] | None:
        """The rack's node names: a count numbered on, or the names given; None (a problem) otherwise."""
        if _is_int(members) and members > 0:
            names = [f"node{n:0{self.width}d}" for n in range(self.next_number, self.next_number + members)]
            self.next_number += len(names)
            return names
        if isinstance(members, list) and members and all(isinstance(m, str) for m in members):
            self.next_number += len(members)
            return members
        self.check.add(
            f"{at}.nodes", f"must be a positive count or a non-empty list of names, got {members!r}"
        )
        return None

    def _claim(self, at: str, members: list[str]) -> list[str]:
        """The members with good names that no earlier rack listed."""
        kept = []
        for node in members:
            if not NAME_RE.match(node):
                self.check.add(f"{at}.nodes", f"node name {node!r} must use letters, digits, '_', '.', '-'")
            elif node in self.owner:
                self.check.add(f"{at}.nodes", f"node '{node}' is already listed in {self.owner[node]}")
            else:
                self.owner[node] = f"{at}.nodes"
                kept.append(node)
        return kept

    def check_names(self) -> None:
        for node, at in self.owner.items():
            if node in self.rack_names:
                self.check.add(at, f"node '{node}' has the same name as a rack")


def _node_overrides(
    overrides: dict[str, Any], owner: dict[str, str], check: _Checker
) -> dict[str, dict[str, Any]]:
    """``[nodes.NAME]`` tables by node, each checked; one for a node in no rack is a problem."""
    node_fields: dict[str, dict[str, Any]] = {}
    for node, table in overrides.items():
        at = f"nodes.{node}"
        fields = check.fields(table, at, allow_islands=True)
        if node not in owner:
            close = difflib.get_close_matches(node, list(owner), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            check.add(at, f"override for node '{node}', which is in no rack{hint}")
        node_fields[node] = fields
    return node_fields


def _node_specs(
    members: list[str], base: dict[str, Any], node_fields: dict[str, dict[str, Any]], check: _Checker
) -> list[NodeSpec]:
    """A rack's nodes: defaults, then the rack's fields (``base``), then each node's own."""
    specs = []
    for node in members:
        f = {**base, **node_fields.get(node, {})}
        islands = f.get("islands")
        if islands is not None:
            if len(islands) != f["gpus"]:
                check.add(f"nodes.{node}.islands", f"has {len(islands)} entries for {f['gpus']} GPUs")
                continue
        else:
            islands = islands_for(f["intra"], f["gpus"])
        specs.append(NodeSpec(node, f["gpus"], f["gpu_type"], tuple(islands), f["cpus"], f["memory_mb"]))
    return specs


def _scheduler(table: Any, where: str, check: _Checker) -> SchedulerSettings | None:
    """The optional ``[scheduler]`` table: slurm.conf scheduling keys (see slurmrl.slurm.scheduler_conf)."""
    if table is None:
        return None
    if not isinstance(table, dict):
        check.add("scheduler", "must be a table of slurm.conf keys, e.g. PriorityWeightAge = 1000")
        return None
    try:
        return settings_from_mapping(table, where)
    except SpecError as exc:
        check.add(exc.column or "scheduler", exc.message)
        return None


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def intra_of(islands: tuple[int, ...]) -> str | None:
    """An ``intra`` string whose :func:`islands_for` gives exactly ``islands``, or None."""
    n = len(islands)
    if n == 0 or len(set(islands)) == 1:
        return "nvswitch"
    if len(set(islands)) == n and islands_for("pcie", n) == islands:
        return "pcie"
    size = islands.count(islands[0])
    if islands_for(f"nvlink:{size}", n) == islands:
        return f"nvlink:{size}"
    return None


def _str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _key(value: str) -> str:
    return value if _BARE_KEY.match(value) else _str(value)


def _value(value: Any) -> str:
    if isinstance(value, str):
        return _str(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def cluster_to_toml(cluster: Cluster) -> str:
    """The TOML spec of ``cluster``; loading it gives an equal :class:`Cluster`.

    The most common value of each node field goes to ``[defaults]`` and only
    differing nodes get a ``[nodes.X]`` table, so homogeneous clusters stay short.
    """
    nodes = cluster.nodes

    def common(values: list[Any], fallback: Any) -> Any:
        return Counter(values).most_common(1)[0][0] if values else fallback

    defaults = {
        "gpus": common([n.gpus for n in nodes], BUILTIN_DEFAULTS["gpus"]),
        "gpu_type": common([n.gpu_type for n in nodes if n.gpus], BUILTIN_DEFAULTS["gpu_type"]),
        "intra": common([i for n in nodes if n.gpus > 1 and (i := intra_of(n.islands))], "pcie"),
        "cpus": common([n.cpus for n in nodes], BUILTIN_DEFAULTS["cpus"]),
        "memory_mb": common([n.memory_mb for n in nodes], BUILTIN_DEFAULTS["memory_mb"]),
    }
    lines = [f"name = {_str(cluster.name)}", "", "[defaults]"]
    lines += [f"{k} = {_value(v)}" for k, v in defaults.items()]
    for rack in cluster.racks:
        names = [nodes[i].name for i in rack.nodes]
        lines += ["", "[[racks]]", f"name = {_str(rack.name)}"]
        if len(names) <= 8:
            lines.append(f"nodes = {_value(names)}")
        else:
            lines.append("nodes = [")
            lines += [
                "    " + ", ".join(_str(x) for x in names[i : i + 8]) + "," for i in range(0, len(names), 8)
            ]
            lines.append("]")
    for node in nodes:
        diff: dict[str, Any] = {}
        for k in ("gpus", "gpu_type", "cpus", "memory_mb"):
            if k == "gpu_type" and node.gpus == 0:
                continue  # GPU-less nodes get the same placeholder type whatever is written
            if getattr(node, k) != defaults[k]:
                diff[k] = getattr(node, k)
        if islands_for(defaults["intra"], node.gpus) != node.islands:
            intra = intra_of(node.islands)
            if intra is None:
                diff["islands"] = list(node.islands)
            else:
                diff["intra"] = intra
        if diff:
            lines += ["", f"[nodes.{_key(node.name)}]"] + [f"{k} = {_value(v)}" for k, v in diff.items()]
    if cluster.scheduler is not None:
        lines += [
            "",
            "# The cluster's Slurm scheduler settings (slurm.conf keys); the slurm policy runs with them.",
            "[scheduler]",
        ]
        lines += [f"{k} = {_str(v)}" for k, v in cluster.scheduler.as_conf().items()]
    return "\n".join(lines) + "\n"
