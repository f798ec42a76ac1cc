"""Where the site's templates and assets live.

They are kept at the repository root in ``site/`` so they can be edited
without touching Python; a source checkout or editable install reads them
there. ``slurmrl/report/site`` is a symlink to that folder, so a built wheel
copies the same files as package data (``pyproject.toml`` package-data globs
``report/site/templates/*.j2`` and ``report/site/assets/*``) and an installed
package finds them beside this module. The repository copy is looked at first.
"""

from __future__ import annotations

from pathlib import Path

from slurmrl.errors import SlurmrlError

_PACKAGE_DIR = Path(__file__).resolve().parent


def site_dir() -> Path:
    """The folder holding ``templates/`` and ``assets/``."""
    candidates = (_PACKAGE_DIR.parents[1] / "site", _PACKAGE_DIR / "site")
    for folder in candidates:
        if (folder / "templates").is_dir() and (folder / "assets").is_dir():
            return folder
    raise SlurmrlError(
        "report templates not found; looked in " + " and ".join(str(c) for c in candidates),
        hint="reinstall slurmrl, or run from a source checkout that has site/templates and site/assets",
    )


def read_asset(name: str) -> str:
    path = site_dir() / "assets" / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SlurmrlError(f"cannot read report asset: {exc.strerror or exc}", file=str(path)) from None
