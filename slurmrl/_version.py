"""The package version, in a module of its own.

Modules that stamp results or reports with the version import it from here,
not from the package top, so nothing inside the package imports ``slurmrl``
itself (which would make the top and every module it loads lazily a cycle).
pyproject.toml reads the same line.
"""

__version__ = "0.1.0"
