"""The public traces slurmrl knows by name: where each comes from, its license, its checksums.

The registry is a data file (``data/registry.toml``) so that a new trace or
a new mirror layout is a data change. Each trace lists the files it puts in
a traces folder, at the same relative paths as the shared traces collection
(``philly/...``, ``benchmarks/gavel/...``), so that a folder filled by
``slurmrl traces fetch`` and a copy of that collection are interchangeable.

A file's ``form`` says what its source URL gives: ``same`` (these very
bytes), ``gzip`` (the bytes before gzip: the check is then on the
uncompressed content), ``convert`` (the input of ``converter`` in
:mod:`slurmrl.traces.convert`, itself checked against ``source_sha256``;
the output is checked as any file), ``derived`` (a converted subset no
converter rebuilds: only a mirror of the traces folder holds it) or
``unpack`` (the member ``member``, by default the file's own name, of the
tar or zip archive ``source``, a path of an earlier file of the same trace).
Where a source publishes no sha256 but its git repository holds the file,
``git_sha1`` (the git blob id) checks it. A file with no checksum at all is
fetched unverified and the command says so.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from slurmrl.errors import SlurmrlError

FORMS = ("same", "gzip", "convert", "derived", "unpack")


@dataclass(frozen=True, slots=True)
class TraceFile:
    path: str  # relative to a traces folder, with '/' separators
    sha256: str  # of the file as a mirror holds it; "" = unknown
    content_sha256: str  # of a .gz file's uncompressed bytes; "" = not recorded
    size: int  # bytes; 0 = unknown
    form: str  # one of FORMS
    source: str  # URL; "derived": the file it was converted from; "unpack": the archive's path
    git_sha1: str = ""  # git blob id of the file in its source repository; "" = not recorded
    member: str = ""  # "unpack": the member's path in the archive; "" = the file's own name
    converter: str = ""  # "convert": the name in slurmrl.traces.convert.CONVERTERS
    source_sha256: str = ""  # "convert": sha256 of the upstream source, checked before converting

    @property
    def verifiable(self) -> bool:
        return bool(self.sha256 or self.content_sha256 or self.git_sha1)


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
        if not self.files:
            return "no files listed"
        total = len(self.files)
        sha = sum(bool(f.sha256 or f.content_sha256) for f in self.files)
        git = sum(bool(f.git_sha1) and not (f.sha256 or f.content_sha256) for f in self.files)
        every = "its file" if total == 1 else f"all {total} files"
        parts = [f"sha256 of {every}" if sha == total else f"sha256 of {sha} of {total} files"] if sha else []
        if git:
            parts.append(f"git blob id of {git}")
        if sha + git < total:
            parts.append(f"unknown for {total - sha - git}")
        return ", ".join(parts) if sha or git else "unknown"


def _file(raw: dict, where: str) -> TraceFile:
    try:
        made = TraceFile(
            path=str(raw["path"]),
            sha256=str(raw.get("sha256", "")),
            content_sha256=str(raw.get("content_sha256", "")),
            size=int(raw.get("size", 0)),
            form=str(raw.get("form", "same")),
            source=str(raw.get("source", "")),
            git_sha1=str(raw.get("git_sha1", "")),
            member=str(raw.get("member", "")),
            converter=str(raw.get("converter", "")),
            source_sha256=str(raw.get("source_sha256", "")),
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
