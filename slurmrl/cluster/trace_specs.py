"""Clusters described by the machine lists that ship with public traces.

Replaying a trace on the cluster it came from is the baseline every policy is
compared against, so the machine lists published with Tiresias, Philly and
Alibaba (openb 2023, PAI 2020, spot GPU 2026) load directly. None of them records racks, so racks are
synthesized by :func:`slurmrl.cluster.builders.synthesize_racks` (same GPU
count and type together, 16 machines per rack, listed order) except for
Tiresias, whose specs do name switches.
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Callable
from pathlib import Path

from slurmrl.cluster.builders import NodeSpec, assemble, default_islands, size_problem, synthesize_racks
from slurmrl.cluster.model import Cluster
from slurmrl.csv_records import Records, RunawayQuote, shown
from slurmrl.errors import SpecError

TIRESIAS_COLUMNS = ("num_switch", "num_node_p_switch", "num_gpu_p_node", "num_cpu_p_node", "mem_p_node")
PHILLY_COLUMNS = ("machine_id", "num_gpus", "gpu_mem")
OPENB_COLUMNS = ("node_id", "cpu_milli", "memory_mib", "num_gpus", "gpu_model")
PAI_COLUMNS = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")
SPOT_COLUMNS = ("node_name", "gpu_model", "gpu_capacity_num", "cpu_num")

# Tiresias cluster specs give no GPU model. The Tiresias paper's testbed was
# 15 servers with 4 P100 GPUs each (Gu et al., "Tiresias", NSDI 2019),
# so that is the label; intra-node links follow default_intra (PCIe).
TIRESIAS_GPU_TYPE = "p100"

# Philly's machine list gives only GPU memory: 12 GB on the 2-GPU machines and
# 24 GB on the 8-GPU ones (shared/traces/README.md). No model is published.
# 12 GB per GPU matches a Tesla K80 die and 24 GB a Tesla P40, the two
# datacenter GPUs of that memory size in Microsoft's 2017 fleet (Azure NC and
# ND series); the labels are a best guess, the memory sizes are data. Both are
# PCIe-only cards.
PHILLY_GPU_TYPES = {"12GB": "k80", "24GB": "p40"}


Rows = list[tuple[int, dict[str, str]]]  # (line the row starts on, its fields by column)


def read_table(path: Path) -> tuple[list[str], Rows]:
    """Header and rows of a CSV file, gzip-compressed or not; blank lines are skipped."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read machine list: {exc.strerror}", file=str(path)) from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise SpecError(f"corrupt gzip file: {exc}", file=str(path)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SpecError("not a UTF-8 text file", file=str(path)) from None
    records = Records(text)
    try:
        header = records.header() or []
        rows = [(records.line, dict(zip(header, values, strict=False))) for values in records if any(values)]
    except RunawayQuote as exc:
        raise SpecError(str(exc), file=str(path), line=exc.first, hint=exc.hint) from None
    except csv.Error as exc:
        raise SpecError(f"malformed CSV: {exc}", file=str(path), line=records.line) from None
    return header, rows


def _number(
    row: dict[str, str], key: str, path: Path, line: int, convert: Callable[[str], float] = int
) -> float:
    value = (row.get(key) or "").strip()
    try:
        number = convert(value)
    except ValueError:
        raise SpecError(f"'{shown(value)}' is not a number", file=str(path), line=line, column=key) from None
    if number < 0:
        raise SpecError(f"{number} must not be negative", file=str(path), line=line, column=key)
    return number


def load_tiresias(path: Path, rows: Rows) -> Cluster:
    """Tiresias ``cluster_spec.csv``: each row adds switches (racks) of equal nodes."""
    racks: list[tuple[str, list[NodeSpec]]] = []
    specs = []
    for line, row in rows:
        sw, per, gpus, cpus, mem = (int(_number(row, k, path, line)) for k in TIRESIAS_COLUMNS)
        if sw < 1 or per < 1:
            raise SpecError("num_switch and num_node_p_switch must be at least 1", file=str(path), line=line)
        specs.append((sw, per, gpus, cpus, mem))
    total = sum(sw * per for sw, per, *_ in specs)
    too_big = size_problem(total, max((gpus for *_, gpus, _, _ in specs), default=0))
    if too_big is not None:  # before naming the nodes: a typo here would name millions
        raise SpecError(too_big, file=str(path))
    node_width = max(3, len(str(total)))
    rack_width = max(2, len(str(sum(s[0] for s in specs))))
    for sw, per, gpus, cpus, mem_gb in specs:
        islands = default_islands(TIRESIAS_GPU_TYPE, gpus)
        for _ in range(sw):
            first = sum(len(m) for _, m in racks)
            members = [
                # mem_p_node is in GB (the shipped specs say 254-256 per node).
                NodeSpec(
                    f"node{first + k + 1:0{node_width}d}",
                    gpus,
                    TIRESIAS_GPU_TYPE,
                    islands,
                    cpus,
                    mem_gb * 1024,
                )
                for k in range(per)
            ]
            racks.append((f"rack{len(racks) + 1:0{rack_width}d}", members))
    if not racks:
        raise SpecError("Tiresias cluster spec has no rows", file=str(path))
    return assemble(path.name.split(".")[0], racks)


def load_philly(path: Path, rows: Rows) -> Cluster:
    """Philly ``philly_machine_list.csv``; uses the official ``num_gpus`` column."""
    nodes = []
    for line, row in rows:
        name = (row.get("machine_id") or "").strip()
        if not name:
            raise SpecError("empty machine_id", file=str(path), line=line, column="machine_id")
        gpus = int(_number(row, "num_gpus", path, line))
        mem = (row.get("gpu_mem") or "").strip().upper().replace(" ", "")
        gpu_type = PHILLY_GPU_TYPES.get(mem, f"gpu{mem.lower()}" if mem else "unknown")
        nodes.append(NodeSpec(name, gpus, gpu_type, default_islands(gpu_type, gpus)))
    return _finish("philly", path, nodes)


def load_openb(path: Path, rows: Rows) -> Cluster:
    """Alibaba ``openb_nodes_v2023.csv``; CPU-only nodes are dropped (see ``load_machine_list``)."""
    nodes = []
    for line, row in rows:
        gpus = int(_number(row, "num_gpus", path, line))
        if gpus == 0:
            continue
        gpu_type = (row.get("gpu_model") or "").strip().lower() or "unknown"
        cpus = int(_number(row, "cpu_milli", path, line) // 1000)
        memory = int(_number(row, "memory_mib", path, line))
        name = (row.get("node_id") or "").strip()
        nodes.append(NodeSpec(name, gpus, gpu_type, default_islands(gpu_type, gpus), cpus, memory))
    return _finish("openb", path, nodes)


def load_pai(path: Path, rows: Rows) -> Cluster:
    """Alibaba PAI 2020 ``pai_machine_spec``; ``cap_mem`` is in GB; CPU-only machines dropped."""
    nodes = []
    for line, row in rows:
        gpus = int(_number(row, "cap_gpu", path, line))
        if gpus == 0:
            continue
        gpu_type = (row.get("gpu_type") or "").strip().lower() or "unknown"
        cpus = int(_number(row, "cap_cpu", path, line))
        memory = int(_number(row, "cap_mem", path, line, float) * 1024)
        name = (row.get("machine") or "").strip()
        nodes.append(NodeSpec(name, gpus, gpu_type, default_islands(gpu_type, gpus), cpus, memory))
    return _finish("pai2020", path, nodes)


def load_spot(path: Path, rows: Rows) -> Cluster:
    """Alibaba 2026 spot GPU ``node_info_df``; no memory column, so memory is 0 (unknown)."""
    nodes = []
    for line, row in rows:
        gpus = int(_number(row, "gpu_capacity_num", path, line))
        if gpus == 0:
            continue
        gpu_type = (row.get("gpu_model") or "").strip().lower() or "unknown"
        cpus = int(_number(row, "cpu_num", path, line))
        name = (row.get("node_name") or "").strip()
        nodes.append(NodeSpec(name, gpus, gpu_type, default_islands(gpu_type, gpus), cpus, 0))
    return _finish("spot2026", path, nodes)


def _finish(name: str, path: Path, nodes: list[NodeSpec]) -> Cluster:
    if not nodes:
        raise SpecError("machine list has no GPU machines", file=str(path))
    too_big = size_problem(len(nodes), max(n.gpus for n in nodes))
    if too_big is not None:
        raise SpecError(too_big, file=str(path))
    seen: set[str] = set()
    for n in nodes:
        if not n.name or n.name in seen:
            raise SpecError(f"machine name '{n.name}' is empty or repeated", file=str(path))
        seen.add(n.name)
    return assemble(name, synthesize_racks(nodes))


FORMATS: tuple[tuple[str, tuple[str, ...], Callable[[Path, Rows], Cluster]], ...] = (
    ("Tiresias cluster spec", TIRESIAS_COLUMNS, load_tiresias),
    ("Philly machine list", PHILLY_COLUMNS, load_philly),
    ("Alibaba openb node list", OPENB_COLUMNS, load_openb),
    ("Alibaba PAI machine spec", PAI_COLUMNS, load_pai),
    ("Alibaba spot GPU node list", SPOT_COLUMNS, load_spot),
)


def load_machine_list(path: Path) -> Cluster:
    """A CSV machine list, recognized by its header.

    Nodes without GPUs are dropped from Alibaba lists: they run CPU-only
    pods that a GPU scheduler never places, and keeping them would make
    placement search and fragmentation metrics count empty machines.
    """
    header, rows = read_table(path)
    present = set(header)
    for _, columns, loader in FORMATS:
        if set(columns) <= present:
            return loader(path, rows)
    known = "; ".join(f"{label}: {','.join(cols)}" for label, cols, _ in FORMATS)
    raise SpecError(
        f"unrecognized machine list header {shown(','.join(header), 120)}",
        file=str(path),
        hint=f"expected one of {known}",
    )
