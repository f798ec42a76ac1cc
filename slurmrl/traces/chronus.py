"""Loader for Chronus job lists (S-Lab-System-Group/ChronusArtifact, Philly-derived).

The schema extends Tiresias' with deadline fields; those are synthetic and are
not used. ``user`` holds the Philly virtual cluster as ``vc_<id>``, so it also
becomes ``vc``. The time unit is the Chronus simulator's and is not documented
upstream; values are kept as they are. Rows with ``num_gpu`` 0 are counted in
``Trace.dropped``.
"""

from __future__ import annotations

from pathlib import Path

from slurmrl.traces import tiresias
from slurmrl.traces.schema import Trace


def load(path: Path, display: str, skip_bad: bool) -> Trace:
    return tiresias.load(path, display, skip_bad, fmt="chronus")
