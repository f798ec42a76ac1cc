"""The public traces slurmrl knows by name: where each comes from, its license, its checksums.

The registry is a data file (``data/registry.toml``) so that a new trace or
a new mirror layout is a data change. Each trace lists the files it puts in
a traces folder, at the same relative paths as the shared traces collection
(``philly/...``, ``benchmarks/gavel/...``), so that a folder filled by
``slurmrl traces fetch`` and a copy of that collection are interchangeable.

A file's ``form`` says what its source URL gives: ``same`` (these very
bytes), ``gzip`` (the bytes before gzip: the check is then on the
uncompressed content), ``derived`` (a converted subset: only a mirror of
the traces folder holds it) or ``untar`` (the member of that name in the
archive ``source``, a path of an earlier file of the same trace). An empty ``sha256`` means no checksum is known;
such a file is fetched unverified and the command says so.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from slurmrl.errors import SlurmrlError

FORMS = ("same", "gzip", "derived", "untar")


@dataclass(frozen=True, slots=True)
class TraceFile:
    path: str  # relative to a traces folder, with '/' separators
    sha256: str  # of the file as a mirror holds it; "" = unknown
    content_sha256: str  # of a .gz file's uncompressed bytes; "" = not recorded
    size: int  # bytes; 0 = unknown
    form: str  # one of FORMS
    source: (
        str  # the URL it comes from ("derived": the file it was converted from; "untar": the archive's path)
    )

    @property
    def verifiable(self) -> bool:
        return bool(self.sha256 or self.content_sha256)


@dataclass(frozen=True, slots=True)
class TraceEntry:
    name: str
    title: str
    license: str
    homepage: str
    cite: str
    note: str
    files: tuple[TraceFile, ...]

    @property
    def checksums(self) -> str:
        """How many of its files have a known checksum, for the listing."""
        known = sum(f.verifiable for f in self.files)
        if not self.files:
            return "no files listed"
        if known == len(self.files):
            return f"sha256 of all {known} files"
        return "unknown" if known == 0 else f"sha256 of {known} of {len(self.files)} files"


def _file(raw: dict, where: str) -> TraceFile:
    try:
        made = TraceFile(
            path=str(raw["path"]),
            sha256=str(raw.get("sha256", "")),
            content_sha256=str(raw.get("content_sha256", "")),
            size=int(raw.get("size", 0)),
            form=str(raw.get("form", "same")),
            source=str(raw.get("source", "")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SlurmrlError(f"bad file entry in the trace registry ({exc})", file=where) from None
    if made.form not in FORMS:
        raise SlurmrlError(f"form '{made.form}' of {made.path} is not one of {', '.join(FORMS)}", file=where)
    return made


@cache
def registry() -> dict[str, TraceEntry]:
    """Every registered trace by name, in the file's order."""
    where = "slurmrl/traces/data/registry.toml"
    data = tomllib.loads((resources.files("slurmrl.traces") / "data" / "registry.toml").read_text())
    return {
        name: TraceEntry(
            name=name,
            title=str(raw.get("title", "")),
            license=str(raw.get("license", "")),
            homepage=str(raw.get("homepage", "")),
            cite=str(raw.get("cite", "")),
            note=str(raw.get("note", "")),
            files=tuple(_file(f, where) for f in raw.get("files", [])),
        )
        for name, raw in data.items()
    }


def get_entry(name: str) -> TraceEntry:
    entries = registry()
    if name in entries:
        return entries[name]
    close = difflib.get_close_matches(name, list(entries), n=2, cutoff=0.5)
    raise SlurmrlError(
        f"unknown trace '{name}'; known: {', '.join(entries)}",
        hint=f"did you mean {', '.join(repr(c) for c in close)}?" if close else "see `slurmrl traces list`",
    )


def entry_for(path: str) -> TraceEntry | None:
    """The registered trace that provides ``path`` (relative to a traces folder), if any."""
    for entry in registry().values():
        if any(f.path == path for f in entry.files):
            return entry
    return None
