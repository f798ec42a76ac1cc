"""Where the public traces are on this machine.

A trace file is looked up, by its path relative to a traces folder, in
``$SLURMRL_TRACES``, then in a ``shared/traces`` folder beside the current
directory or the source checkout (where a copy of the shared collection sits
next to a clone), then in the user cache that ``slurmrl traces fetch``
fills. A file that is in none of them is an error naming the fetch command
that provides it, so a scenario never fails with a bare "not found".
"""

from __future__ import annotations

import os
from pathlib import Path

from slurmrl.errors import SlurmrlError

ENV = "SLURMRL_TRACES"


def cache_dir() -> Path:
    """The user cache folder for fetched traces (``~/.cache/slurmrl/traces`` on Linux)."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("slurmrl")) / "traces"


def fetch_dir() -> Path:
    """Where ``slurmrl traces fetch`` writes: ``$SLURMRL_TRACES`` if set, else the user cache."""
    env = os.environ.get(ENV)
    return Path(env) if env else cache_dir()


def sibling_dirs() -> list[Path]:
    """``shared/traces`` beside the current directory and beside the source checkout, if present."""
    here = Path(__file__).resolve().parents[2]
    found: list[Path] = []
    for base in (Path.cwd(), here):
        candidate = (base / ".." / "shared" / "traces").resolve()
        if candidate.is_dir() and candidate not in found:
            found.append(candidate)
    return found


def trace_roots() -> list[Path]:
    """The folders searched for trace files, in order."""
    env = os.environ.get(ENV)
    roots = [Path(env)] if env else []
    return roots + sibling_dirs() + [cache_dir()]


def locate(relative: str) -> Path:
    """The first copy of ``relative`` in :func:`trace_roots`, or an error naming its fetch command."""
    for root in trace_roots():
        path = root / relative
        if path.is_file():
            return path
    from slurmrl.traces.registry import entry_for

    entry = entry_for(relative)
    searched = ", ".join(str(r) for r in trace_roots())
    if entry is None:
        raise SlurmrlError(f"trace file {relative} is in none of {searched}")
    raise SlurmrlError(
        f"trace file {relative} is not here: `slurmrl traces fetch {entry.name}` provides it",
        hint=f"add --from MIRROR (a folder or URL laid out as the shared traces folder) offline; searched {searched}",
    )
