"""What the daemon needs from Slurm, whichever way it talks to it.

Two implementations exist: :class:`~slurmrl.slurm.cli_backend.CliBackend`
(client commands, works on any Slurm from 22.05) and
:class:`~slurmrl.slurm.pyslurm_backend.PyslurmBackend` (libslurm through
pyslurm, no process per query). Write methods take validated values only:
job ids are checked to be Slurm ids before they reach any command line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from slurmrl.cluster.builders import NodeSpec, assemble, default_islands
from slurmrl.cluster.from_slurm import DEFAULT_SLURM_CONF, load_slurm_cluster
from slurmrl.cluster.model import Cluster
from slurmrl.errors import SlurmError, SpecError
from slurmrl.slurm.snapshot import SlurmNode, Snapshot

_JOB_ID = re.compile(r"^[0-9]+(_[0-9]+)?$")
_NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")
# Slurm keeps priorities in 32 bits; 0 means held and the top two values are
# the NO_VAL/INFINITE markers (slurm.h), so a settable priority lies between.
MAX_PRIORITY = 0xFFFFFFFD
# SiteFactor is stored as a signed offset within 32 bits (NICE_OFFSET scheme in
# slurm.h); keep well inside it.
MAX_SITE_FACTOR = 2_147_483_645
MAX_COMMENT = 1024
# Prefer= is checked by slurmctld to be at most 1024 characters (_test_strlen in job_mgr.c).
MAX_PREFER = 1024
_PREFER = re.compile(r"^[A-Za-z0-9._\-|&,()\[\]*:]*$")


@runtime_checkable
class SlurmBackend(Protocol):
    def snapshot(self) -> Snapshot: ...

    def version(self) -> str: ...

    def set_site_factor(self, job_id: str, value: int) -> None: ...

    def set_priority(self, job_id: str, value: int) -> None: ...

    def set_required_nodes(self, job_id: str, nodelist: Sequence[str] | None) -> None: ...

    def set_admin_comment(self, job_id: str, text: str) -> None: ...


def check_job_id(job_id: str) -> str:
    text = str(job_id).strip()
    if not _JOB_ID.match(text):
        raise SlurmError(
            f"'{job_id}' is not a Slurm job id", hint="expected digits, or JOB_TASK for an array task"
        )
    return text


def check_priority(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PRIORITY:
        raise SlurmError(
            f"priority {value!r} is out of range", hint=f"use an integer from 1 to {MAX_PRIORITY}"
        )
    return value


def check_site_factor(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > MAX_SITE_FACTOR:
        raise SlurmError(
            f"site factor {value!r} is out of range", hint=f"use an integer within +/-{MAX_SITE_FACTOR}"
        )
    return value


def check_nodelist(nodes: Sequence[str] | None) -> str:
    """The ``ReqNodeList=`` value; empty clears it."""
    if nodes is None:
        return ""
    if isinstance(nodes, str):
        raise SlurmError("pass node names as a list, not one string")
    names = [str(n).strip() for n in nodes]
    bad = [n for n in names if not _NODE_NAME.match(n)]
    if bad:
        raise SlurmError(f"invalid node name(s): {', '.join(map(repr, bad[:5]))}")
    if not names:
        raise SlurmError("empty node list", hint="pass None to clear the required nodes")
    return ",".join(names)


def check_prefer(text: str) -> str:
    """The ``Prefer=`` value (node features joined by ``|``/``&``); empty clears it."""
    if not isinstance(text, str):
        raise SlurmError("prefer must be text")
    if len(text) > MAX_PREFER:
        raise SlurmError(f"prefer is {len(text)} characters; Slurm takes at most {MAX_PREFER}")
    if not _PREFER.match(text):
        raise SlurmError(f"prefer {text!r} holds characters that are not node features or operators")
    return text


def check_job_ids(job_ids: Sequence[str]) -> str:
    """Several job ids as one ``JobId=`` value (``scontrol update`` takes a comma list)."""
    ids = [check_job_id(j) for j in job_ids]
    if not ids:
        raise SlurmError("no job ids given")
    return ",".join(ids)


def check_comment(text: str) -> str:
    if not isinstance(text, str):
        raise SlurmError("admin comment must be text")
    if len(text) > MAX_COMMENT:
        raise SlurmError(f"admin comment is {len(text)} characters; the limit here is {MAX_COMMENT}")
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise SlurmError("admin comment holds control characters (newline, tab, ...)")
    return text


def cluster_from_nodes(nodes: Sequence[SlurmNode], name: str = "slurm") -> Cluster:
    """A one-rack cluster from live node records, for when no slurm.conf is readable."""
    specs = [
        NodeSpec(
            name=n.name,
            gpus=n.gpu_count,
            gpu_type=n.gpu_type or "gpu",
            islands=default_islands(n.gpu_type or "gpu", n.gpu_count),
            cpus=n.cpus,
            memory_mb=n.memory_mb,
        )
        for n in nodes
    ]
    if not specs:
        raise SlurmError("Slurm reported no nodes", hint="check 'sinfo' on this host")
    return assemble(name, [("all", specs)])


def live_cluster(
    nodes: Sequence[SlurmNode], conf: str | Path | None = None
) -> tuple[Cluster, tuple[str, ...]]:
    """The cluster from slurm.conf/gres.conf/topology.conf when readable, else from the nodes.

    Returns the cluster and warnings (why the files were not used, nodes
    Slurm reports that the files do not list).
    """
    warnings: list[str] = []
    target = conf or os.environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF
    cluster: Cluster | None = None
    if Path(target).expanduser().exists():
        try:
            cluster = load_slurm_cluster(target)
        except SpecError as exc:
            warnings.append(f"slurm.conf not used: {exc.format()}")
    else:
        warnings.append(f"no slurm.conf at {target}; topology taken from sinfo with one rack")
    if cluster is None:
        return cluster_from_nodes(nodes), tuple(warnings)
    missing = [n.name for n in nodes if n.name not in cluster.node_index]
    if missing:
        warnings.append(f"nodes not in slurm.conf, left out of the view: {', '.join(missing[:10])}")
    return cluster, tuple(warnings)
