"""Static HTML report of simulation results, and live-versus-simulated comparisons.

``render_report`` turns result folders (``slurmrl simulate --out``,
``slurmrl compare --out`` or ``slurmrl replay``) into a site that opens offline
from ``file://``: an index, one comparison page per scenario (runs grouped by
workload) and one page per trained-policy card. Pages are self-contained;
plots are inline SVG. :mod:`slurmrl.report.fidelity` sets runs measured on a
live Slurm cluster beside their simulated twins.

Templates and assets live in ``site/`` at the repository root; an installed
wheel carries the same files as package data (see :mod:`slurmrl.report.site_files`).

``render_report`` is imported on first use, so the fidelity tables work
without the ``report`` extra (matplotlib, templates) installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slurmrl.report.render import render_report

__all__ = ["render_report"]


def __getattr__(name: str) -> object:
    if name == "render_report":
        from slurmrl.report.render import render_report

        return render_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
