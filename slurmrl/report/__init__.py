"""Static HTML report of simulation results.

``render_report`` turns result folders (``slurmrl simulate --out`` or
``slurmrl compare --out``) into a site that opens offline from ``file://``:
an index, one comparison page per scenario (runs grouped by workload) and one
page per trained-policy card. Pages are self-contained; plots are inline SVG.

Templates and assets live in ``site/`` at the repository root; an installed
wheel carries the same files as package data (see :mod:`slurmrl.report.site_files`).
"""

from slurmrl.report.render import render_report

__all__ = ["render_report"]
