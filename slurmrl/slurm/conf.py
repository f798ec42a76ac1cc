"""Parsers for ``slurm.conf``, ``gres.conf``, ``topology.conf`` and hostlists.

A site's Slurm configuration is the ground truth for which nodes exist, how
many GPUs each has, which GPUs share NVLink and which nodes share a switch.
These parsers read that truth from text alone (no Slurm install, no running
controller), so a cluster can be modelled from a copied ``/etc/slurm`` and the
daemon can cross-check a live controller against its files.

The syntax follows the Slurm man pages: ``Key=Value`` pairs separated by
blanks, keys case-insensitive, ``#`` starts a comment (``\\#`` is a literal
``#``), a trailing ``\\`` continues the line, ``NodeName=DEFAULT`` and
``PartitionName=DEFAULT`` lines set defaults for the lines after them, and node
lists use hostlist syntax (``node[01-04,07]``). Parsing is pure: ``Include``
lines are followed only through the ``read_include`` callback, so callers
decide what touching the file system means.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from slurmrl.errors import SpecError

# Slurm itself refuses larger hostlist ranges (its MAX_RANGE is 64K entries in
# slurm/src/common/hostlist.c); a bigger one is a typo, not a cluster.
MAX_HOSTLIST = 1 << 16

# ---------------------------------------------------------------------------
# Hostlists
# ---------------------------------------------------------------------------

_TRAILING_DIGITS = re.compile(r"^(.*?)(\d+)$")


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside brackets and parentheses."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced '{ch}' in '{text}'")
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"unclosed bracket in '{text}'")
    parts.append(text[start:])
    return parts


def _expand_range_list(body: str, whole: str) -> list[str]:
    """``01-03,07`` -> ``['01', '02', '03', '07']``; width comes from each low bound."""
    out: list[str] = []
    for part in body.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise ValueError(f"bad range '{part}' in '{whole}'; use forms like [1-4,7] or [01-16]")
        if not dash:
            out.append(lo)
            continue
        first, last = int(lo), int(hi)
        if last < first:
            raise ValueError(f"range '{part}' in '{whole}' runs backwards")
        if last - first + 1 > MAX_HOSTLIST:
            raise ValueError(f"range '{part}' in '{whole}' has more than {MAX_HOSTLIST} entries")
        width = len(lo)
        out.extend(f"{n:0{width}d}" for n in range(first, last + 1))
    return out


def expand_hostlist(text: str) -> list[str]:
    """Expand Slurm hostlist syntax, keeping order and zero padding.

    ``node[01-03,07],gpu5`` -> ``node01 node02 node03 node07 gpu5``; several
    bracket groups in one name expand as their product
    (``r[1-2]n[1-2]`` -> ``r1n1 r1n2 r2n1 r2n2``). Raises ``ValueError`` on
    malformed input; callers add the file and line.
    """
    names: list[str] = []
    for token in _split_top(text.strip()):
        token = token.strip()
        if not token:
            if text.strip():
                raise ValueError(f"empty name in hostlist '{text}'")
            continue
        pieces = re.split(r"(\[[^\]]*\])", token)
        if any(("[" in p or "]" in p) and not (p.startswith("[") and p.endswith("]")) for p in pieces):
            raise ValueError(f"misplaced bracket in '{token}'")
        choices = [_expand_range_list(p[1:-1], token) if p.startswith("[") else [p] for p in pieces]
        total = 1
        for c in choices:
            total *= len(c)
        if len(names) + total > MAX_HOSTLIST:
            raise ValueError(f"hostlist '{text}' names more than {MAX_HOSTLIST} hosts")
        names.extend("".join(combo) for combo in itertools.product(*choices))
    return names


def compress_hostlist(names: Iterable[str]) -> str:
    """Inverse of :func:`expand_hostlist`, order-preserving.

    Neighbouring names with the same prefix share one bracket; consecutive
    numbers become ranges only while zero padding stays the same, so
    ``expand_hostlist(compress_hostlist(x)) == x`` for any list of plain names.
    """
    out: list[str] = []
    group_prefix: str | None = None
    group: list[str] = []  # digit strings under group_prefix

    def flush() -> None:
        if group_prefix is None:
            return
        if len(group) == 1:
            out.append(group_prefix + group[0])
            return
        out.append(f"{group_prefix}[{','.join(_ranges(group))}]")

    for name in names:
        if not name or any(c in name for c in "[],") or name != name.strip():
            raise ValueError(f"'{name}' cannot appear in a hostlist")
        m = _TRAILING_DIGITS.match(name)
        if m is None:
            flush()
            group_prefix, group = None, []
            out.append(name)
            continue
        prefix, digits = m.group(1), m.group(2)
        if prefix != group_prefix:
            flush()
            group_prefix, group = prefix, []
        group.append(digits)
    flush()
    return ",".join(out)


def _ranges(digits: list[str]) -> Iterator[str]:
    """Runs of consecutive numbers whose padding follows their first member."""
    i = 0
    while i < len(digits):
        lo = digits[i]
        width = len(lo)
        j = i
        while j + 1 < len(digits):
            nxt = digits[j + 1]
            if int(nxt) != int(digits[j]) + 1 or nxt != f"{int(nxt):0{width}d}":
                break
            j += 1
        yield lo if j == i else f"{lo}-{digits[j]}"
        i = j + 1


# ---------------------------------------------------------------------------
# Line reading shared by the three files
# ---------------------------------------------------------------------------

_PAIR = re.compile(r'([A-Za-z][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)')


@dataclass(frozen=True, slots=True)
class _Line:
    number: int
    pairs: tuple[tuple[str, str], ...]
    text: str


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Comment-free logical lines with the number of the line they start on."""
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw)
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1]  # joined as is, like Slurm: no blank is added
            continue
        line = pending + line
        pending = ""
        if line.strip():
            yield start, line.strip()
    if pending.strip():
        yield start, pending.strip()


def _strip_comment(raw: str) -> str:
    out = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw) and raw[i + 1] == "#":
            out.append("#")
            i += 2
            continue
        if ch == "#":
            break
        out.append(ch)
        i += 1
    return "".join(out)


def _pairs(number: int, line: str, path: str) -> _Line:
    pairs: list[tuple[str, str]] = []
    pos = 0
    for m in _PAIR.finditer(line):
        gap = line[pos : m.start()]
        if gap.strip():
            raise SpecError(
                f"cannot read '{gap.strip()}': expected Key=Value",
                file=path,
                line=number,
                hint="values with spaces need double quotes",
            )
        value = m.group(2)
        if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        pairs.append((m.group(1), value))
        pos = m.end()
    rest = line[pos:].strip()
    if rest:
        raise SpecError(f"cannot read '{rest}': expected Key=Value", file=path, line=number)
    return _Line(number, tuple(pairs), line)


def _hosts(value: str, path: str, line: int, key: str) -> list[str]:
    try:
        return expand_hostlist(value)
    except ValueError as exc:
        raise SpecError(str(exc), file=path, line=line, column=key) from None


def _int(value: str, path: str, line: int, key: str, *, minimum: int = 0) -> int:
    """Integers as Slurm writes them, including K/M/G multipliers (``Count=4K``)."""
    text = value.strip()
    scale = 1
    if text[-1:].upper() in ("K", "M", "G", "T"):
        scale = 1024 ** ("KMGT".index(text[-1].upper()) + 1)
        text = text[:-1]
    if not text.isdigit() or int(text) * scale < minimum:
        raise SpecError(f"{key}={value} must be an integer >= {minimum}", file=path, line=line, column=key)
    return int(text) * scale


# ---------------------------------------------------------------------------
# slurm.conf
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    value: str
    file: str
    line: int


@dataclass(frozen=True, slots=True)
class GresSpec:
    """One ``Gres=`` item of a node: ``gpu:v100:8`` -> name gpu, type v100, count 8."""

    name: str
    type: str | None
    count: int


@dataclass(frozen=True, slots=True)
class NodeConf:
    name: str
    cpus: int
    real_memory_mb: int
    gres: tuple[GresSpec, ...]
    features: tuple[str, ...]
    state: str | None
    weight: int | None
    options: tuple[tuple[str, str], ...]  # every key as written, DEFAULT values merged in
    file: str
    line: int

    def option(self, key: str, default: str | None = None) -> str | None:
        return _lookup(self.options, key, default)

    def gpus(self) -> tuple[str | None, int]:
        """GPU type and count; the type is None when unnamed or when types are mixed."""
        items = [g for g in self.gres if g.name.lower() == "gpu"]
        types = {g.type for g in items}
        return (types.pop() if len(types) == 1 else None, sum(g.count for g in items))


@dataclass(frozen=True, slots=True)
class PartitionConf:
    name: str
    nodes: tuple[str, ...]
    default: bool
    state: str | None
    options: tuple[tuple[str, str], ...]
    file: str
    line: int

    def option(self, key: str, default: str | None = None) -> str | None:
        return _lookup(self.options, key, default)


@dataclass(frozen=True, slots=True)
class SlurmConf:
    path: str
    settings: tuple[Setting, ...]
    nodes: tuple[NodeConf, ...]
    partitions: tuple[PartitionConf, ...]
    includes: tuple[str, ...]  # Include targets as written, in order

    def get(self, key: str, default: str | None = None) -> str | None:
        """A global setting by case-insensitive key; the last one wins, as in Slurm."""
        low = key.lower()
        for s in reversed(self.settings):
            if s.key.lower() == low:
                return s.value
        return default

    @property
    def cluster_name(self) -> str | None:
        name = self.get("ClusterName")
        return name.lower() if name else None  # slurmctld lowercases it too

    @property
    def priority_type(self) -> str:
        return self.get("PriorityType", "priority/basic") or "priority/basic"

    @property
    def select_type(self) -> str | None:
        return self.get("SelectType")

    @property
    def scheduler_type(self) -> str:
        return self.get("SchedulerType", "sched/backfill") or "sched/backfill"

    @property
    def topology_plugin(self) -> str | None:
        return self.get("TopologyPlugin")

    @property
    def gres_types(self) -> tuple[str, ...]:
        value = self.get("GresTypes") or ""
        return tuple(t.strip() for t in value.split(",") if t.strip())

    @property
    def slurmctld_port(self) -> int | None:
        value = self.get("SlurmctldPort")
        if value is None:
            return None
        first = value.split("-")[0].split(",")[0]
        return int(first) if first.isdigit() else None

    def node(self, name: str) -> NodeConf:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)


def _lookup(options: tuple[tuple[str, str], ...], key: str, default: str | None) -> str | None:
    low = key.lower()
    for k, v in reversed(options):
        if k.lower() == low:
            return v
    return default


def parse_gres_spec(value: str, path: str = "<string>", line: int = 0) -> tuple[GresSpec, ...]:
    """``gpu:v100:8,gpu:2(S:0-1),mps:100`` -> one :class:`GresSpec` per item."""
    out: list[GresSpec] = []
    try:
        items = _split_top(value)
    except ValueError as exc:
        raise SpecError(str(exc), file=path, line=line, column="Gres") from None
    for item in items:
        item = re.sub(r"\(.*\)$", "", item.strip())
        if not item or item.lower() == "(null)":
            continue
        fields = item.split(":")
        name = fields[0]
        count = 1
        rest = fields[1:]
        if rest and re.fullmatch(r"\d+[KMGTkmgt]?", rest[-1]):
            count = _int(rest[-1], path, line, "Gres")
            rest = rest[:-1]
        rest = [r for r in rest if r.lower() not in ("no_consume",)]
        if len(rest) > 1 or not name:
            raise SpecError(
                f"cannot read Gres item '{item}'",
                file=path,
                line=line,
                column="Gres",
                hint="use name[:type][:count], e.g. gpu:v100:8",
            )
        out.append(GresSpec(name, rest[0] if rest else None, count))
    return tuple(out)


def parse_slurm_conf(
    text: str,
    path: str | Path = "slurm.conf",
    *,
    read_include: Callable[[str], tuple[str, str]] | None = None,
) -> SlurmConf:
    """Parse slurm.conf text.

    ``read_include(target)`` returns ``(text, path)`` of an ``Include`` target;
    without it, includes are only recorded. Raises :class:`SpecError` naming
    file, line and key for malformed lines.
    """
    settings: list[Setting] = []
    nodes: list[NodeConf] = []
    partitions: list[PartitionConf] = []
    includes: list[str] = []
    state = {"node_default": (), "part_default": (), "nodesets": {}, "seen": set()}
    _parse_into(str(path), text, settings, nodes, partitions, includes, state, read_include, depth=0)
    return SlurmConf(str(path), tuple(settings), tuple(nodes), tuple(partitions), tuple(includes))


def _parse_into(
    path: str,
    text: str,
    settings: list[Setting],
    nodes: list[NodeConf],
    partitions: list[PartitionConf],
    includes: list[str],
    state: dict,
    read_include: Callable[[str], tuple[str, str]] | None,
    depth: int,
) -> None:
    for number, line in _logical_lines(text):
        head = line.split(None, 1)
        if head[0].lower() == "include" and "=" not in head[0]:
            target = head[1].strip() if len(head) > 1 else ""
            if not target:
                raise SpecError("Include without a file name", file=path, line=number)
            includes.append(target)
            if read_include is not None:
                if depth >= 16:
                    raise SpecError(f"Include nesting deeper than 16 at '{target}'", file=path, line=number)
                sub_text, sub_path = read_include(target)
                _parse_into(
                    sub_path, sub_text, settings, nodes, partitions, includes, state, read_include, depth + 1
                )
            continue
        parsed = _pairs(number, line, path)
        first = parsed.pairs[0][0].lower()
        if first == "nodename":
            _node_line(parsed, path, nodes, state)
        elif first == "partitionname":
            _partition_line(parsed, path, nodes, partitions, state)
        elif first == "nodeset":
            _nodeset_line(parsed, path, nodes, state)
        elif first in ("downnodes", "frontendname"):
            continue  # per-node state overrides and front ends do not change the hardware
        else:
            settings.extend(Setting(k, v, path, number) for k, v in parsed.pairs)


def _node_line(parsed: _Line, path: str, nodes: list[NodeConf], state: dict) -> None:
    spec = parsed.pairs[0][1]
    if spec.upper() == "DEFAULT":
        state["node_default"] = state["node_default"] + parsed.pairs[1:]
        return
    options = state["node_default"] + parsed.pairs[1:]
    opts = {k.lower(): (k, v) for k, v in options}

    def num(key: str, default: int) -> int:
        if key not in opts:
            return default
        return _int(opts[key][1], path, parsed.number, opts[key][0])

    boards = num("boards", 1)
    sockets = num("sockets", 0) or num("socketsperboard", 1) * boards
    cores = num("corespersocket", 1)
    threads = num("threadspercore", 1)
    cpus = num("cpus", num("procs", sockets * cores * threads))
    memory = num("realmemory", 1)  # Slurm's default RealMemory is 1 MB
    gres = parse_gres_spec(opts["gres"][1], path, parsed.number) if "gres" in opts else ()
    feats = opts.get("features") or opts.get("feature")
    features = tuple(f for f in feats[1].split(",") if f) if feats else ()
    weight = num("weight", 0) if "weight" in opts else None
    names = _hosts(spec, path, parsed.number, "NodeName")
    for name in names:
        if name in state["seen"]:
            raise SpecError(f"node {name} is defined twice", file=path, line=parsed.number, column="NodeName")
        state["seen"].add(name)
        nodes.append(
            NodeConf(
                name=name,
                cpus=cpus,
                real_memory_mb=memory,
                gres=gres,
                features=features,
                state=opts["state"][1] if "state" in opts else None,
                weight=weight,
                options=tuple(options),
                file=path,
                line=parsed.number,
            )
        )


def _member_names(
    value: str, path: str, line: int, key: str, nodes: list[NodeConf], state: dict
) -> list[str]:
    if value.upper() == "ALL":
        return [n.name for n in nodes]
    out: list[str] = []
    try:
        tokens = _split_top(value)
    except ValueError as exc:
        raise SpecError(str(exc), file=path, line=line, column=key) from None
    for token in tokens:
        if token in state["nodesets"]:
            out.extend(state["nodesets"][token])
        else:
            out.extend(_hosts(token, path, line, key))
    return out


def _nodeset_line(parsed: _Line, path: str, nodes: list[NodeConf], state: dict) -> None:
    opts = {k.lower(): v for k, v in parsed.pairs[1:]}
    members: list[str] = []
    if "nodes" in opts:
        members = _member_names(opts["nodes"], path, parsed.number, "Nodes", nodes, state)
    if "feature" in opts:
        want = opts["feature"]
        members += [n.name for n in nodes if want in n.features]
    state["nodesets"][parsed.pairs[0][1]] = members


def _partition_line(
    parsed: _Line, path: str, nodes: list[NodeConf], partitions: list[PartitionConf], state: dict
) -> None:
    name = parsed.pairs[0][1]
    if name.upper() == "DEFAULT":
        state["part_default"] = state["part_default"] + parsed.pairs[1:]
        return
    options = state["part_default"] + parsed.pairs[1:]
    members: list[str] = []
    default = False
    part_state = None
    for key, value in options:
        low = key.lower()
        if low == "nodes":
            members = _member_names(value, path, parsed.number, key, nodes, state)
        elif low == "default":
            default = value.upper() == "YES"
        elif low == "state":
            part_state = value
    partitions.append(
        PartitionConf(name, tuple(members), default, part_state, tuple(options), path, parsed.number)
    )


# ---------------------------------------------------------------------------
# gres.conf
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GresLine:
    """One device line of gres.conf as it applies to one node."""

    name: str
    type: str | None
    files: tuple[str, ...]
    count: int  # devices on this line: len(files) when File= is given
    links: tuple[int, ...] | None  # per Slurm: -1 self, 0 no NVLink, >0 NVLink count
    cores: str | None
    file: str
    line: int


def parse_gres_conf(text: str, path: str | Path, node_names: Iterable[str]) -> dict[str, list[GresLine]]:
    """Device lines of gres.conf per node of ``node_names``.

    Lines without ``NodeName=`` apply to every node, as when each node reads
    its own copy. Lines for nodes not in ``node_names`` are skipped: one
    gres.conf is often shared by several clusters.
    """
    path = str(path)
    known = list(node_names)
    known_set = set(known)
    out: dict[str, list[GresLine]] = {n: [] for n in known}
    for number, line in _logical_lines(text):
        parsed = _pairs(number, line, path)
        opts = {k.lower(): (k, v) for k, v in parsed.pairs}
        if "name" not in opts:
            if set(opts) - {"autodetect", "nodename"}:
                raise SpecError(
                    "device line without Name=", file=path, line=number, hint="e.g. Name=gpu File=..."
                )
            continue  # AutoDetect=... on its own
        files: tuple[str, ...] = ()
        if "file" in opts:
            files = tuple(_hosts(opts["file"][1], path, number, opts["file"][0]))
        if "count" in opts:
            count = _int(opts["count"][1], path, number, opts["count"][0])
            if files and count != len(files):
                raise SpecError(
                    f"Count={count} but File= names {len(files)} devices",
                    file=path,
                    line=number,
                    column=opts["count"][0],
                )
        else:
            count = len(files) if files else 1
        links = None
        if "links" in opts:
            try:
                links = tuple(int(x) for x in opts["links"][1].split(","))
            except ValueError:
                raise SpecError(
                    f"Links={opts['links'][1]} must be comma-separated integers",
                    file=path,
                    line=number,
                    column=opts["links"][0],
                ) from None
        entry = GresLine(
            name=opts["name"][1],
            type=opts["type"][1] if "type" in opts else None,
            files=files,
            count=count,
            links=links,
            cores=(opts.get("cores") or opts.get("cpus") or (None, None))[1],
            file=path,
            line=number,
        )
        if "nodename" in opts:
            targets = [
                n for n in _hosts(opts["nodename"][1], path, number, opts["nodename"][0]) if n in known_set
            ]
        else:
            targets = known
        for n in targets:
            out[n].append(entry)
    return out


# ---------------------------------------------------------------------------
# topology.conf
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Switch:
    name: str
    nodes: tuple[str, ...]
    switches: tuple[str, ...]
    link_speed: int | None
    file: str
    line: int


@dataclass(frozen=True, slots=True)
class Block:
    name: str
    nodes: tuple[str, ...]
    file: str
    line: int


@dataclass(frozen=True, slots=True)
class Topology:
    path: str
    switches: tuple[Switch, ...]
    blocks: tuple[Block, ...]
    block_sizes: tuple[int, ...]

    def leaf_groups(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Node groups that share one switch: tree leaf switches, then blocks."""
        leaves = tuple((s.name, s.nodes) for s in self.switches if s.nodes)
        return leaves + tuple((b.name, b.nodes) for b in self.blocks)


def parse_topology_conf(text: str, path: str | Path = "topology.conf") -> Topology:
    """Switches (``topology/tree``) and blocks (``topology/block``) of topology.conf."""
    path = str(path)
    switches: list[Switch] = []
    blocks: list[Block] = []
    sizes: tuple[int, ...] = ()
    names: set[str] = set()
    for number, line in _logical_lines(text):
        parsed = _pairs(number, line, path)
        first_key, first_value = parsed.pairs[0]
        opts = {k.lower(): (k, v) for k, v in parsed.pairs}
        kind = first_key.lower()
        if kind in ("switchname", "blockname"):
            if first_value in names:
                raise SpecError(
                    f"{first_key} {first_value} is defined twice", file=path, line=number, column=first_key
                )
            names.add(first_value)
        if kind == "switchname":
            nodes = tuple(_hosts(opts["nodes"][1], path, number, "Nodes")) if "nodes" in opts else ()
            subs = tuple(_hosts(opts["switches"][1], path, number, "Switches")) if "switches" in opts else ()
            speed = None
            if "linkspeed" in opts:
                speed = _int(opts["linkspeed"][1], path, number, opts["linkspeed"][0])
            switches.append(Switch(first_value, nodes, subs, speed, path, number))
        elif kind == "blockname":
            nodes = tuple(_hosts(opts["nodes"][1], path, number, "Nodes")) if "nodes" in opts else ()
            blocks.append(Block(first_value, nodes, path, number))
        elif kind == "blocksizes":
            sizes = tuple(_int(v, path, number, first_key, minimum=1) for v in first_value.split(",") if v)
        else:
            raise SpecError(
                f"unknown key '{first_key}'",
                file=path,
                line=number,
                column=first_key,
                hint="topology.conf lines start with SwitchName=, BlockName= or BlockSizes=",
            )
    return Topology(path, tuple(switches), tuple(blocks), sizes)


# ---------------------------------------------------------------------------
# Reading from disk
# ---------------------------------------------------------------------------


def read_slurm_conf(path: str | Path) -> SlurmConf:
    """Read slurm.conf from disk, following ``Include`` lines relative to its folder."""
    conf_path = Path(path)
    base = conf_path.parent

    def read_include(target: str) -> tuple[str, str]:
        target_path = Path(target) if Path(target).is_absolute() else base / target
        try:
            return target_path.read_text(), str(target_path)
        except OSError as exc:
            raise SpecError(
                f"cannot read included file {target_path}: {exc.strerror}", file=str(conf_path)
            ) from None

    try:
        text = conf_path.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read slurm.conf: {exc.strerror}", file=str(conf_path)) from None
    return parse_slurm_conf(text, str(conf_path), read_include=read_include)
