"""slurmrl: scheduling policies for deep-learning GPU jobs on Slurm clusters.

The package is split by job: ``traces`` reads workloads, ``cluster`` models the
hardware, ``perf`` turns placements into speeds, ``sim`` replays traces,
``policy`` holds the one interface every scheduler implements, ``slurm`` and
``daemon`` connect that interface to a live controller, ``rl`` trains policies
and ``report`` renders results.

From Python, ``slurmrl.simulate``, ``slurmrl.compare`` and
``slurmrl.load_results`` (see :mod:`slurmrl.api`) and ``slurmrl.traces.load``
give results and traces as pandas DataFrames. They load on first use, so
``import slurmrl`` (which the daemon and every command do) stays cheap.
"""

from __future__ import annotations

import importlib

from slurmrl._version import __version__

_API = ("simulate", "compare", "load_results", "SimulationResult", "Comparison")
_SUBPACKAGES = ("traces", "cluster", "perf", "sim", "policy", "slurm", "daemon", "rl", "report", "scenarios")

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> object:
    if name in _API:
        return getattr(importlib.import_module("slurmrl.api"), name)
    if name in _SUBPACKAGES:  # `import slurmrl; slurmrl.traces.load(...)` without importing traces first
        return importlib.import_module(f"slurmrl.{name}")
    raise AttributeError(f"module 'slurmrl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API, *_SUBPACKAGES})
