"""``RACKSxNODESxGPUS[:type[:intra]]`` cluster shorthand, e.g. ``8x8x8:v100``.

Experiments sweep cluster sizes far more often than they model a specific
site, so a homogeneous cluster should be one short argument rather than a
file. Names follow a fixed pattern (``rack01``, ``node001``) so results from
different runs refer to the same machines.

A GPU type typed here must be one the simulator knows: a type of the
throughput table (:mod:`slurmrl.perf.gpu_types`, spelt as it allows, e.g.
``V100M16``) or a recognised NVSwitch-class board that has no throughput
figure yet (``h100``...), which runs at the reference GPU's speed. A typo
would otherwise replay at reference speed without a word. A site's own type
names (gres types such as ``tesla``) belong in a TOML spec, which takes any
name and counts one the table lacks as the reference type.
"""

from __future__ import annotations

import re

from slurmrl.cluster.builders import NVSWITCH_FAMILIES, NodeSpec, assemble, default_intra, size_problem
from slurmrl.cluster.model import Cluster, islands_for
from slurmrl.errors import SpecError
from slurmrl.perf.gpu_types import GPU_TYPES, canonical_gpu

DEFAULT_GPU_TYPE = "v100"
# Per-GPU host resources for shorthand nodes: 8 CPUs and 32,000 MB per GPU give
# the 64 CPU / 256,000 MB 8-GPU node that the TOML [defaults] also assume.
CPUS_PER_GPU = 8
MEMORY_MB_PER_GPU = 32_000

# Boards the link model knows (NVSwitch baseboards) but the throughput table does not.
UNMEASURED_TYPES = tuple(t for t in NVSWITCH_FAMILIES if canonical_gpu(t) is None)
SHAPE = "RACKSxNODESxGPUS[:type[:intra]]"
_LOOKS_LIKE = re.compile(r"^\s*-?\d+\s*[xX*]")


def looks_like_shorthand(spec: str) -> bool:
    return bool(_LOOKS_LIKE.match(spec))


def parse_shorthand(spec: str) -> Cluster:
    """Build a homogeneous cluster; intra defaults by GPU type (see ``default_intra``)."""
    shape, _, tail = spec.strip().partition(":")
    gpu_type, _, intra = tail.partition(":")
    parts = re.split(r"[xX*]", shape)

    def fail(message: str) -> SpecError:
        return SpecError(f"cluster shorthand '{spec}': {message}", hint=f"use {SHAPE}, e.g. 8x8x8:v100")

    if len(parts) != 3:
        raise fail(f"needs three numbers (racks, nodes per rack, GPUs per node), got {len(parts)}")
    numbers = []
    for label, text in zip(("RACKS", "NODES", "GPUS"), parts, strict=True):
        if not text.strip().isdigit():
            raise fail(f"{label} must be a whole number, got '{text}'")
        value = int(text)
        if value < 1:
            raise fail(f"{label} must be at least 1, got {value}")
        numbers.append(value)
    racks, per_rack, gpus = numbers
    too_big = size_problem(racks * per_rack, gpus)
    if too_big is not None:
        raise fail(too_big)
    if ":" in spec and not gpu_type.strip():
        raise fail("GPU type after ':' is empty")
    gpu_type = gpu_type.strip().lower() or DEFAULT_GPU_TYPE
    if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", gpu_type):
        raise fail(f"GPU type '{gpu_type}' may use only letters, digits, '_', '.', '-'")
    if canonical_gpu(gpu_type) is None and gpu_type not in UNMEASURED_TYPES:
        raise SpecError(
            f"cluster shorthand '{spec}': unknown GPU type '{gpu_type}'; known: {', '.join(GPU_TYPES)}, "
            f"and without a throughput figure (run at the reference speed) {', '.join(UNMEASURED_TYPES)}",
            hint="a site's own type name goes in a TOML cluster spec (gpu_type = ...), "
            "where a type without a figure runs at the reference speed",
        )
    if tail.count(":") and not intra.strip():
        raise fail("intra-node layout after the second ':' is empty")
    intra = intra.strip().lower() or default_intra(gpu_type, gpus)
    try:
        islands = islands_for(intra, gpus)
    except ValueError as exc:
        raise fail(str(exc)) from None
    total = racks * per_rack
    node_width = max(3, len(str(total)))
    rack_width = max(2, len(str(racks)))
    cpus, memory = CPUS_PER_GPU * gpus, MEMORY_MB_PER_GPU * gpus
    layout = []
    for r in range(racks):
        members = [
            NodeSpec(f"node{r * per_rack + k + 1:0{node_width}d}", gpus, gpu_type, islands, cpus, memory)
            for k in range(per_rack)
        ]
        layout.append((f"rack{r + 1:0{rack_width}d}", members))
    return assemble(f"{racks}x{per_rack}x{gpus}-{gpu_type}", layout)
