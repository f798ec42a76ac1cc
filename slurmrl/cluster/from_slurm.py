"""A :class:`Cluster` from a site's ``slurm.conf``, ``gres.conf`` and ``topology.conf``.

Policies tested in simulation should see the same hardware the daemon later
drives, so the model is read from the files Slurm itself reads:

* nodes, CPUs, memory and GPU counts/types from ``NodeName=`` lines;
* NVLink islands from ``gres.conf`` ``Links=``: GPUs joined by a link count
  above 0 (directly or through other GPUs) form one island; a node whose GPU
  lines give no ``Links=`` gets the default layout for its GPU type
  (:func:`slurmrl.cluster.builders.default_intra`);
* racks from ``topology.conf``: each leaf switch (a ``SwitchName=`` with
  ``Nodes=``) or ``BlockName=`` is a rack, in file order; nodes under none
  go to a final rack named ``unassigned``. Within a rack, nodes keep their
  ``slurm.conf`` order.

The scheduling settings (priority weights, fair-share, backfill options) come
along as :attr:`Cluster.scheduler`, so the simulator's ``slurm`` policy runs
the site's own scheduler (:mod:`slurmrl.slurm.scheduler_conf`).

``gres.conf`` and ``topology.conf`` are looked up next to ``slurm.conf``, which
is where slurmctld and slurmd read them; either may be missing. Every problem
found (a node in two switches, GPU counts that disagree between files) is
reported in one error.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from slurmrl.cluster.builders import NodeSpec, assemble, default_islands, normalize_islands
from slurmrl.cluster.model import Cluster
from slurmrl.errors import SpecError
from slurmrl.slurm.conf import (
    GresLine,
    NodeConf,
    SlurmConf,
    Topology,
    parse_gres_conf,
    parse_topology_conf,
    read_slurm_conf,
)
from slurmrl.slurm.scheduler_conf import scheduler_settings

DEFAULT_SLURM_CONF = "/etc/slurm/slurm.conf"
UNASSIGNED_RACK = "unassigned"


def slurm_conf_path(target: str | None) -> Path:
    """The slurm.conf a spec names: a file, a folder holding one, or (empty) ``$SLURM_CONF``."""
    if not target:
        target = os.environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF
    path = Path(target).expanduser()
    if path.is_dir():
        path = path / "slurm.conf"
    if not path.is_file():
        raise SpecError(
            f"no slurm.conf at {path}",
            hint="pass slurm:PATH to a slurm.conf or its folder, or set $SLURM_CONF",
        )
    return path


def load_slurm_cluster(target: str | Path | None = None) -> Cluster:
    path = slurm_conf_path(str(target) if target else None)
    conf = read_slurm_conf(path)
    names = [n.name for n in conf.nodes]
    gres: dict[str, list[GresLine]] = {n: [] for n in names}
    gres_path = path.parent / "gres.conf"
    if gres_path.is_file():
        gres = parse_gres_conf(_read(gres_path), str(gres_path), names)
    topology = None
    topo_path = path.parent / "topology.conf"
    if topo_path.is_file():
        topology = parse_topology_conf(_read(topo_path), str(topo_path))
    built = cluster_from_conf(conf, gres, topology, default_name=path.parent.name or "slurm")
    return replace(built, scheduler=scheduler_settings(conf))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", file=str(path)) from None


def cluster_from_conf(
    conf: SlurmConf,
    gres: dict[str, list[GresLine]],
    topology: Topology | None,
    default_name: str = "slurm",
) -> Cluster:
    """Combine parsed config files into a cluster (pure; see the module docstring)."""
    problems: list[str] = []
    specs = {n.name: _node_spec(n, gres.get(n.name, []), problems) for n in conf.nodes}
    rack_of: dict[str, str] = {}
    groups: list[str] = []
    if topology is not None:
        for group, members in topology.leaf_groups():
            groups.append(group)
            for m in members:
                if m not in specs:
                    continue  # Slurm only logs unknown nodes in topology.conf
                if m in rack_of:
                    problems.append(f"{topology.path}: node {m} is under both {rack_of[m]} and {group}")
                    continue
                rack_of[m] = group
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems)
        raise SpecError(f"{len(problems)} problem(s) building the cluster:\n{listing}", file=conf.path)
    members_of: dict[str, list[NodeSpec]] = {g: [] for g in groups}
    unassigned: list[NodeSpec] = []
    for node in conf.nodes:
        spec = specs[node.name]
        if spec is None:
            continue
        group = rack_of.get(node.name)
        (members_of[group] if group is not None else unassigned).append(spec)
    racks = [(g, m) for g, m in members_of.items() if m]
    if unassigned:
        name = UNASSIGNED_RACK if UNASSIGNED_RACK not in members_of else f"{UNASSIGNED_RACK}-nodes"
        racks.append((name, unassigned))
    if not racks:
        raise SpecError("slurm.conf defines no nodes", file=conf.path, hint="add NodeName= lines")
    return assemble(conf.cluster_name or default_name, racks)


def _node_spec(node: NodeConf, lines: list[GresLine], problems: list[str]) -> NodeSpec | None:
    items = [g for g in node.gres if g.name.lower() == "gpu"]
    count = sum(g.count for g in items)
    types = {g.type for g in items if g.type}
    where = f"{node.file}, line {node.line}: node {node.name}"
    if len(types) > 1:
        problems.append(f"{where}: mixes GPU types {sorted(types)}; the model needs one type per node")
        return None
    devices = [line for line in lines if line.name.lower() == "gpu" for _ in range(line.count)]
    gpu_type = types.pop() if types else next((d.type for d in devices if d.type), None) or "unknown"
    if not count:
        return NodeSpec(node.name, 0, gpu_type, (), node.cpus, node.real_memory_mb)
    if devices and len(devices) != count:
        first = devices[0]
        problems.append(
            f"{where}: slurm.conf Gres= has {count} GPUs but {first.file} lists {len(devices)} for this node"
        )
        return None
    links = [d.links for d in devices]
    if devices and any(x is not None for x in links):
        islands = _islands(links, count)
    else:
        islands = default_islands(gpu_type, count)
    return NodeSpec(node.name, count, gpu_type, islands, node.cpus, node.real_memory_mb)


def _islands(links: list[tuple[int, ...] | None], count: int) -> tuple[int, ...]:
    """Connected components of the NVLink graph (links > 0), numbered by first GPU."""
    parent = list(range(count))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, row in enumerate(links):
        for j, n in enumerate(row or ()):
            if j != i and j < count and n > 0:
                parent[root(i)] = root(j)
    return normalize_islands([root(i) for i in range(count)])
