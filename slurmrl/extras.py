"""Optional dependencies, named by the extra that installs them.

The base install (simulator, heuristics, daemon, numpy inference of shipped
checkpoints) needs neither torch, gymnasium nor matplotlib: a controller
running the daemon should not pull in a deep-learning framework. Commands that
do need one call :func:`require_extra` first, so a missing package is one line
that says which extra to install, not an ``ImportError`` traceback.
"""

from __future__ import annotations

import importlib

from slurmrl.errors import SlurmrlError

# extra -> the importable modules it provides (kept in step with pyproject.toml)
EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "gymnasium"),
    "report": ("matplotlib", "jinja2", "markdown", "nh3"),
    "submitit": ("submitit",),
}


class MissingExtraError(SlurmrlError):
    """A command needs a package from an optional extra that is not installed."""


def require_extra(extra: str, *modules: str) -> None:
    """Import ``modules`` (default: all of ``extra``'s) or say which extra installs them.

    Importing, rather than looking the spec up, also catches a package that is
    present but broken (a torch wheel for another CPU, a half-removed install).
    """
    missing = []
    for name in modules or EXTRAS[extra]:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise MissingExtraError(
            f"this needs {', '.join(missing)}, which is not installed: pip install 'slurmrl[{extra}]'"
        )
