"""Errors that reach users.

Every failure a user can cause (a bad trace, a bad spec, an unreachable
controller) is raised as a :class:`SlurmrlError` subclass so the CLI can print
one clear line instead of a traceback. Each error carries where it happened
(file, line, column or field) so the user can fix the input without guessing.
"""

from __future__ import annotations


class SlurmrlError(Exception):
    """Base class for errors whose message is meant for the user."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.hint = hint
        super().__init__(self.format())

    def format(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.column is not None:
            where.append(f"column '{self.column}'")
        text = (", ".join(where) + ": " if where else "") + self.message
        if self.hint:
            text += f" ({self.hint})"
        return text


class TraceError(SlurmrlError):
    """A trace file could not be read or holds an invalid job."""


class SpecError(SlurmrlError):
    """A cluster spec (TOML, shorthand, CSV, Slurm config) is invalid."""


class ConfigError(SlurmrlError):
    """A configuration file is invalid; may list several problems at once."""


class PolicyError(SlurmrlError):
    """A policy name is unknown or a policy returned an invalid decision."""


class SlurmError(SlurmrlError):
    """A Slurm command or API call failed."""

    stderr: str = ""  # the command's whole error output, where a command failed
