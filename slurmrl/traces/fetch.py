"""Fetch a registered trace into a traces folder, verified, never half-written.

Sources, per file: a local mirror folder (``--from DIR``, laid out as the
shared traces folder; how CI and offline sites work), a mirror URL
(``--from URL``, the same layout over HTTP(S)), or the file's upstream URL.
Downloads go through pooch. Every file is written to a temporary name in
its final folder, checked against the registry's sha256 and only then
renamed into place, so a loader never sees a partial or corrupt file: a
download that fails its check is fetched once more, and a second failure
leaves nothing behind and says which file and checksums differ. A file
already in place is checked too, and fetched again when its bytes do not
match (an interrupted copy from an older tool, a bad disk). Tables shipped
as archives (the PAI 2020 ``.tar.gz``) are unpacked the same way, member by
member, each checked against its own published sha256.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from slurmrl.errors import SlurmrlError
from slurmrl.traces.registry import TraceEntry, TraceFile

_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Fetched:
    """What happened to one file: ``present`` (already verified), ``fetched`` or ``refetched``."""

    path: Path
    action: str
    verified: bool  # False: the registry knows no checksum for it
    sha256: str  # of the file now in place


def sha256_of(path: Path, *, uncompressed: bool = False) -> str:
    digest = hashlib.sha256()
    opener = gzip.open if uncompressed else open
    with opener(path, "rb") as fh:  # type: ignore[operator]
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def git_blob_id(path: Path) -> str:
    """The id git gives ``path``'s bytes as a blob: sha1 of ``blob <size>\\0`` and the bytes."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def matches(path: Path, spec: TraceFile) -> bool:
    """Whether ``path`` holds the registered file: its own bytes, or (``.gz``) its uncompressed content.

    The content check lets a file gzipped here from its upstream bytes pass,
    though another gzip than the mirror's gives other compressed bytes. A
    file known only by its git blob id is checked by that.
    """
    if spec.sha256 and sha256_of(path) == spec.sha256:
        return True
    if not (spec.sha256 or spec.content_sha256) and spec.git_sha1:
        return git_blob_id(path) == spec.git_sha1
    if spec.content_sha256:
        try:
            return sha256_of(path, uncompressed=True) == spec.content_sha256
        except (OSError, EOFError, gzip.BadGzipFile):
            return False
    return False


@dataclass(frozen=True, slots=True)
class FetchReport:
    """The files put in place, and those left out because only a mirror holds them."""

    done: tuple[Fetched, ...]
    mirror_only: tuple[str, ...]


def fetch_entry(entry: TraceEntry, dest: Path, source: str | None = None) -> FetchReport:
    """Put every file of ``entry`` under ``dest``; ``source`` is a mirror folder or URL, None = upstream.

    Upstream, a file only mirrors hold (a ``derived`` one) is left out and
    named in the report; if that leaves nothing to fetch, it is an error.
    """
    if not entry.files:
        raise SlurmrlError(
            f"trace '{entry.name}' has no file to fetch: {entry.note or 'see its homepage'}",
            hint=entry.homepage,
        )
    done: list[Fetched] = []
    mirror_only: list[str] = []
    for spec in entry.files:
        if source is None and spec.form == "derived" and not (dest / spec.path).is_file():
            mirror_only.append(spec.path)
            continue
        done.append(_fetch_file(spec, dest, source))
    if mirror_only and not done:
        raise SlurmrlError(
            f"the files of '{entry.name}' are converted subsets that only a mirror of the traces folder holds "
            f"(first: {mirror_only[0]})",
            hint="pass --from DIR|URL, e.g. --from ../shared/traces",
        )
    return FetchReport(tuple(done), tuple(mirror_only))


class _Mismatch(Exception):
    """The bytes read do not have the registered checksum."""


DOWNLOAD_ATTEMPTS = 2  # a download that fails its checksum is fetched once more before giving up


def _fetch_file(spec: TraceFile, dest: Path, source: str | None) -> Fetched:
    target = dest / spec.path
    action = "fetched"
    if target.is_file():
        if not spec.verifiable:
            return Fetched(target, "present", False, sha256_of(target))
        if matches(target, spec):
            return Fetched(target, "present", True, sha256_of(target))
        action = "refetched"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SlurmrlError(
            f"cannot write the traces folder ({exc.strerror})", file=str(target.parent)
        ) from None
    origin = _origin(spec, dest, source)
    attempts = DOWNLOAD_ATTEMPTS if _is_url(origin) else 1
    for attempt in range(1, attempts + 1):
        try:
            with _staged(target) as staged:
                _read(origin, staged, spec, source)
                if spec.verifiable and not matches(staged, spec):
                    raise _Mismatch(_difference(staged, spec))
            break
        except _Mismatch as exc:
            if attempt == attempts:
                tries = f" after {attempts} downloads" if attempts > 1 else ""
                raise SlurmrlError(
                    f"checksum mismatch{tries}: {exc} (nothing was written)",
                    file=origin,
                    hint="the source is corrupt or another version; fetch again or use another mirror",
                ) from None
    return Fetched(target, action, spec.verifiable, sha256_of(target))


def _difference(path: Path, spec: TraceFile) -> str:
    if spec.sha256 or spec.content_sha256:
        return f"got sha256 {sha256_of(path)}, the registry has {spec.sha256 or spec.content_sha256}"
    return f"got git blob id {git_blob_id(path)}, the registry has {spec.git_sha1}"


def _is_url(origin: str) -> bool:
    return "://" in origin and not origin.startswith("file://")


def _read(origin: str, staged: Path, spec: TraceFile, source: str | None) -> None:
    """Fill ``staged`` with ``spec``'s bytes from ``origin``, in the form the traces folder keeps."""
    upstream = source is None
    if spec.form == "unpack":
        _unpack(Path(origin), staged, spec)
    elif spec.form == "convert" and upstream:
        _convert(origin, staged, spec)
    elif _is_url(origin):
        _download(origin, staged, None if upstream and spec.form == "gzip" else spec.sha256)
    else:
        _copy(Path(origin.removeprefix("file://")), staged, spec)
    if upstream and (spec.form == "gzip" or (spec.form == "convert" and spec.path.endswith(".gz"))):
        _gzip_in_place(staged)


def _convert(origin: str, staged: Path, spec: TraceFile) -> None:
    """Download the upstream source (checked against ``source_sha256``) and convert it into ``staged``."""
    from slurmrl.traces.convert import convert

    raw = staged.with_name(staged.name + ".src")
    try:
        if _is_url(origin):
            _download(origin, raw, spec.source_sha256)
        else:
            _copy(Path(origin.removeprefix("file://")), raw, spec)
            if spec.source_sha256 and sha256_of(raw) != spec.source_sha256:
                raise _Mismatch(
                    f"source {origin}: got sha256 {sha256_of(raw)}, the registry has {spec.source_sha256}"
                )
        convert(spec.converter, raw, staged)
    finally:
        raw.unlink(missing_ok=True)


def _origin(spec: TraceFile, dest: Path, source: str | None) -> str:
    """Where ``spec`` is read from: the archive it unpacks from, the mirror's copy, or its upstream source."""
    if spec.form == "unpack":
        return str(dest / spec.source)
    if source is not None:
        if "://" in source:
            return source.rstrip("/") + "/" + spec.path
        return str(Path(source) / spec.path)
    if spec.form == "derived":
        raise SlurmrlError(
            f"{spec.path} is a converted subset of {spec.source}; only a mirror of the traces folder holds it",
            hint="pass --from DIR|URL, e.g. --from ../shared/traces",
        )
    if not spec.source:
        raise SlurmrlError(f"{spec.path} has no download address", hint="pass --from DIR|URL")
    return spec.source


def _unpack(archive: Path, staged: Path, spec: TraceFile) -> None:
    """Copy one member out of a tar or zip ``archive`` (fetched and checked before it)."""
    name = spec.member or Path(spec.path).name
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                found = next((n for n in zf.namelist() if _is_member(n, name)), None)
                if found is None:
                    raise SlurmrlError(f"the archive has no {name}", file=str(archive))
                with zf.open(found) as data, staged.open("wb") as out:
                    shutil.copyfileobj(data, out, _CHUNK)
            return
        with tarfile.open(archive, "r:*") as tar:
            member = next((m for m in tar.getmembers() if m.isfile() and _is_member(m.name, name)), None)
            if member is None:
                raise SlurmrlError(f"the archive has no {name}", file=str(archive))
            with tar.extractfile(member) as data, staged.open("wb") as out:  # type: ignore[union-attr]
                shutil.copyfileobj(data, out, _CHUNK)
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise SlurmrlError(f"cannot unpack {name} ({exc})", file=str(archive)) from None


def _is_member(stored: str, wanted: str) -> bool:
    """``wanted`` names ``stored`` whole, or its trailing path components (``./x.csv`` is ``x.csv``)."""
    parts, tail = Path(stored).parts, Path(wanted).parts
    return parts[-len(tail) :] == tail


@contextmanager
def _staged(target: Path) -> Iterator[Path]:
    """A temporary file beside ``target``, renamed onto it only if the block succeeds."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    staged = Path(name)
    try:
        yield staged
        os.replace(staged, target)
    finally:
        staged.unlink(missing_ok=True)


def _copy(path: Path, staged: Path, spec: TraceFile) -> None:
    try:
        shutil.copyfile(path, staged)
    except FileNotFoundError:
        raise SlurmrlError(
            f"the mirror has no {spec.path}",
            file=str(path),
            hint="a mirror is laid out as the shared traces folder",
        ) from None
    except OSError as exc:
        raise SlurmrlError(f"cannot read the mirror's copy ({exc.strerror})", file=str(path)) from None


def _download(url: str, staged: Path, sha256: str | None) -> None:
    """Download with pooch, which checks ``sha256`` (if any) before it lets the file out of its own temporary.

    None or "" for an upstream file the mirror stores gzipped (its bytes are
    checked by content once compressed) or one known by another checksum.
    """
    import pooch
    import requests

    pooch.get_logger().setLevel("WARNING")
    known = f"sha256:{sha256}" if sha256 else None
    try:
        got = pooch.retrieve(url, known_hash=known, fname=staged.name + ".dl", path=staged.parent)
    except ValueError as exc:  # pooch's hash mismatch
        raise _Mismatch(str(exc).splitlines()[0]) from None
    except (requests.RequestException, OSError) as exc:
        raise SlurmrlError(
            f"download failed ({exc})",
            file=url,
            hint="offline? pass --from DIR|URL, a mirror of the traces folder",
        ) from None
    os.replace(got, staged)


def _gzip_in_place(path: Path) -> None:
    """Gzip ``path`` (upstream bytes) with a zero timestamp, as the mirror stores it."""
    packed = path.with_name(path.name + ".gz")
    with path.open("rb") as raw, gzip.GzipFile(packed, "wb", compresslevel=9, mtime=0) as out:
        shutil.copyfileobj(raw, out, _CHUNK)
    os.replace(packed, path)
