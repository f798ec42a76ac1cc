"""GPU counts and indices out of Slurm's GRES and TRES strings.

Slurm spells the same thing several ways depending on version and field:
``gpu:v100:8`` (node GRES), ``gpu:v100:2(IDX:0-1)`` (GRES in use, per node of
a running job), ``gres:gpu:2`` (``tres_per_*`` up to 23.02), ``gres/gpu:2`` or
``gres/gpu:v100:2`` (23.11 and later: ``gres_prepend_tres_type`` in
``src/interfaces/gres.c`` writes ``gres/`` from 23.11.0 on, ``gres:`` in
23.02.7), ``gres/gpu=4`` (TRES request strings),
and ``gpu:v100:8(S:0-1)`` with socket affinity. These functions reduce all of
them to (type, count, indices) so the rest of the code never sees the spelling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurmrl.errors import SlurmError

GPU = "gpu"


@dataclass(frozen=True, slots=True)
class GresItem:
    """GPUs of one type: configured on a node, in use there, or held by a job on one node."""

    type: str  # "" when untyped
    count: int
    indices: tuple[int, ...] | None = None  # None when Slurm did not say


def split_top(text: str) -> list[str]:
    """Split on commas outside parentheses (``gpu:2(IDX:0,2),nic:1``)."""
    out: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def parse_index_list(text: str) -> tuple[int, ...]:
    """``0-2,5`` -> (0, 1, 2, 5); ``N/A`` or empty -> ()."""
    text = text.strip()
    if not text or text.upper() in ("N/A", "(NULL)"):
        return ()
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise SlurmError(f"cannot read GPU index list '{text}'") from None
        if b < a:
            raise SlurmError(f"GPU index range '{part}' runs backwards")
        out.extend(range(a, b + 1))
    return tuple(sorted(set(out)))


_ITEM = re.compile(r"^(?P<body>[^()]*)(?P<paren>(\([^)]*\))*)$")


def parse_gres_item(item: str) -> tuple[str, str, int, tuple[int, ...] | None] | None:
    """One GRES entry -> (name, type, count, indices), or None for ``(null)``/empty.

    Accepts ``gpu``, ``gpu:2``, ``gpu:v100:2``, ``gres:gpu:2``, ``gres/gpu:v100:2``,
    ``gres/gpu=2`` and trailing ``(IDX:..)``/``(S:..)``/``(CNT:..)`` groups.
    """
    item = item.strip()
    if not item or item.lower() in ("(null)", "n/a", "none"):
        return None
    m = _ITEM.match(item)
    if m is None:
        raise SlurmError(f"cannot read GRES entry '{item}'")
    body = m.group("body")
    indices: tuple[int, ...] | None = None
    paren_count: int | None = None
    for group in re.findall(r"\(([^)]*)\)", m.group("paren")):
        key, _, value = group.partition(":")
        key = key.strip().upper()
        if key == "IDX":
            indices = parse_index_list(value)
        elif key == "CNT":
            try:
                paren_count = int(value)
            except ValueError:
                raise SlurmError(f"cannot read count in GRES entry '{item}'") from None
    if body.startswith("gres/"):
        body = body[len("gres/") :]
    elif body.startswith("gres:"):
        body = body[len("gres:") :]
    if "=" in body:  # TRES spelling gres/gpu=4 or gres/gpu:v100=4
        body = body.replace("=", ":", 1)
    parts = body.split(":")
    name = parts[0]
    typ = ""
    count = 1
    rest = parts[1:]
    if rest and rest[-1].isdigit():
        count = int(rest[-1])
        rest = rest[:-1]
    elif rest and re.fullmatch(r"\d+[KMGT]", rest[-1]):
        # Counts of shared GRES may carry a suffix (gpu:1K); only GPUs matter here.
        mult = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}[rest[-1][-1]]
        count = int(rest[-1][:-1]) * mult
        rest = rest[:-1]
    if rest:
        typ = ":".join(rest)
    if paren_count is not None:
        count = paren_count
    return name, typ, count, indices


def gpu_items(text: str | None) -> tuple[GresItem, ...]:
    """The GPU entries of a GRES or TRES string (other GRES such as ``nic`` dropped)."""
    if not text:
        return ()
    out: list[GresItem] = []
    for raw in split_top(text):
        parsed = parse_gres_item(raw)
        if parsed is None:
            continue
        name, typ, count, indices = parsed
        if name != GPU:
            continue
        out.append(GresItem(typ, count, indices))
    return tuple(out)


def other_gres(text: str | None) -> bool:
    """Whether a GRES or TRES string asks for anything besides GPUs."""
    for raw in split_top(text or ""):
        parsed = parse_gres_item(raw)
        if parsed is not None and parsed[0] != GPU:
            return True
    return False


def gpu_count(text: str | None) -> int:
    """Total GPUs named in a GRES/TRES string (0 when none)."""
    return sum(i.count for i in gpu_items(text))


def gpu_type(text: str | None) -> str:
    """The single GPU type named, or "" when untyped or mixed."""
    types = {i.type for i in gpu_items(text)}
    return types.pop() if len(types) == 1 else ""


def tres_gpu_count(tres: str | None) -> int | None:
    """``gres/gpu`` count in a TRES string such as ``cpu=4,mem=8G,gres/gpu=2`` (None if absent).

    Typed entries (``gres/gpu:v100=2``) repeat the untyped total, so only the
    untyped one is read when both are present.
    """
    if not tres:
        return None
    untyped = None
    typed = 0
    for part in tres.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if not key.startswith("gres/gpu"):
            continue
        try:
            n = int(value)
        except ValueError:
            continue
        if key == "gres/gpu":
            untyped = n
        else:
            typed += n
    if untyped is not None:
        return untyped
    return typed or None


def job_gpu_detail(entries: list[str] | tuple[str, ...]) -> list[GresItem | None]:
    """Per-node GPU holdings of a running job from ``gres_detail`` entries.

    One entry per allocated node, in the order of the job's node list; an
    entry names all GRES on that node (``gpu:v100:2(IDX:0-1),nic:1``).
    Entries without GPUs give None.
    """
    out: list[GresItem | None] = []
    for entry in entries:
        items = gpu_items(entry)
        if not items:
            out.append(None)
            continue
        count = sum(i.count for i in items)
        known = [i.indices for i in items if i.indices is not None]
        indices = tuple(sorted({x for idx in known for x in idx})) if known else None
        types = {i.type for i in items}
        out.append(GresItem(types.pop() if len(types) == 1 else "", count, indices))
    return out


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """A job's GPU ask, whichever sbatch option expressed it.

    ``total`` is what the policy schedules; ``per_node`` is set when the
    option fixes it (``--gres``/``--gpus-per-node``, or any ask on one node).
    ``source`` names the field it came from, for diagnostics.
    """

    total: int
    per_node: int | None = None
    gpu_type: str = ""
    source: str = ""
    # Other GRES asked in the same field (``gpu:4,nic:1``): a rewrite of the
    # GPU part alone would drop them, so elastic resizing refuses such jobs.
    other_gres: bool = False


NO_GPUS = GpuRequest(0, None, "", "")


def gpu_request(
    *,
    per_node: str | None = None,
    per_job: str | None = None,
    per_task: str | None = None,
    per_socket: str | None = None,
    tres_req: str | None = None,
    num_nodes: int | None = None,
    num_tasks: int | None = None,
    tasks_per_node: int | None = None,
    sockets_per_node: int | None = None,
) -> GpuRequest:
    """Normalise ``--gres``/``--gpus-per-node``/``--gpus``/``--gpus-per-task``/``--gpus-per-socket``.

    Slurm stores ``--gres=gpu:N`` and ``--gpus-per-node=N`` in
    ``tres_per_node``, ``--gpus=N`` in ``tres_per_job``, ``--gpus-per-task``
    in ``tres_per_task`` and ``--gpus-per-socket`` in ``tres_per_socket``.
    """
    nodes = num_nodes if num_nodes and num_nodes > 0 else 1
    n = gpu_count(per_node)
    if n:
        return GpuRequest(n * nodes, n, gpu_type(per_node), "tres_per_node", other_gres(per_node))
    n = gpu_count(per_job)
    if n:
        return GpuRequest(n, n if nodes == 1 else None, gpu_type(per_job), "tres_per_job")
    n = gpu_count(per_task)
    if n:
        tasks = num_tasks if num_tasks and num_tasks > 0 else nodes * (tasks_per_node or 1)
        if tasks_per_node:
            pn: int | None = n * tasks_per_node
        else:
            pn = n * tasks if nodes == 1 else None
        return GpuRequest(n * tasks, pn, gpu_type(per_task), "tres_per_task")
    n = gpu_count(per_socket)
    if n:
        pn = n * (sockets_per_node or 1)
        return GpuRequest(pn * nodes, pn, gpu_type(per_socket), "tres_per_socket")
    total = tres_gpu_count(tres_req)
    if total:
        return GpuRequest(total, total if nodes == 1 else None, "", "tres_req_str")
    return NO_GPUS
