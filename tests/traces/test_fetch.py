"""Fetching registered traces: mirrors, checksums, and nothing half-written."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import tarfile
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmrl.cli import main
from slurmrl.errors import SlurmrlError
from slurmrl.traces import registry as registry_module
from slurmrl.traces.fetch import fetch_entry, matches
from slurmrl.traces.registry import TraceEntry, TraceFile

JOBS = b"job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,606,vgg19,164,30\n"
SPEC = b"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,2,4,32,128\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _entry(upstream: str = "", *, unknown: bool = False) -> TraceEntry:
    """A two-file trace: one kept as its source's bytes, one gzipped from them."""
    packed = gzip.compress(JOBS, mtime=0)
    return TraceEntry(
        name="tiny",
        title="a tiny trace",
        license="CC0",
        homepage="https://example.org/tiny",
        cite="",
        note="",
        files=(
            TraceFile(
                "tiny/spec.csv", "" if unknown else _sha(SPEC), "", len(SPEC), "same", f"{upstream}/spec.csv"
            ),
            TraceFile(
                "tiny/jobs.csv.gz", _sha(packed), _sha(JOBS), len(packed), "gzip", f"{upstream}/jobs.csv"
            ),
        ),
    )


def _mirror(root: Path, jobs: bytes = JOBS) -> Path:
    (root / "tiny").mkdir(parents=True)
    (root / "tiny" / "spec.csv").write_bytes(SPEC)
    (root / "tiny" / "jobs.csv.gz").write_bytes(gzip.compress(jobs, mtime=0))
    return root


def _leftovers(folder: Path) -> list[str]:
    """Files under ``folder`` that are no registered file: temporaries a failed fetch left behind."""
    registered = {"tiny/spec.csv", "tiny/jobs.csv.gz", "tiny/jobs.tar.gz", "tiny/jobs.csv"}
    found = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    return sorted(found - registered)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local HTTP server over a folder: the URL mirror and the 'upstream' of these tests."""
    root = tmp_path / "www"
    root.mkdir()
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def test_from_a_local_mirror_puts_verified_files_in_place(tmp_path: Path) -> None:
    mirror, dest = _mirror(tmp_path / "mirror"), tmp_path / "dest"
    done = fetch_entry(_entry(), dest, str(mirror)).done
    assert [(d.action, d.verified) for d in done] == [("fetched", True), ("fetched", True)]
    assert (dest / "tiny" / "spec.csv").read_bytes() == SPEC
    assert gzip.decompress((dest / "tiny" / "jobs.csv.gz").read_bytes()) == JOBS
    again = fetch_entry(_entry(), dest, str(mirror)).done
    assert [d.action for d in again] == ["present", "present"]
    assert _leftovers(dest) == []


def test_a_corrupt_mirror_file_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    mirror, dest = _mirror(tmp_path / "mirror", jobs=JOBS.replace(b"606", b"607")), tmp_path / "dest"
    with pytest.raises(SlurmrlError, match="checksum mismatch.*nothing was written") as info:
        fetch_entry(_entry(), dest, str(mirror))
    assert "jobs.csv.gz" in info.value.format()
    assert not (dest / "tiny" / "jobs.csv.gz").exists()
    assert _leftovers(dest) == []


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_a_partial_or_corrupt_file_in_place_is_detected_and_refetched(tmp_path: Path, damage: str) -> None:
    mirror, dest = _mirror(tmp_path / "mirror"), tmp_path / "dest"
    fetch_entry(_entry(), dest, str(mirror))
    target = dest / "tiny" / "jobs.csv.gz"
    good = target.read_bytes()
    mid = len(good) // 2
    target.write_bytes(
        good[:mid] if damage == "truncated" else good[:mid] + bytes([good[mid] ^ 1]) + good[mid + 1 :]
    )
    assert not matches(target, _entry().files[1])
    done = fetch_entry(_entry(), dest, str(mirror)).done
    assert [d.action for d in done] == ["present", "refetched"]
    assert target.read_bytes() == good


def test_from_a_url_mirror_goes_through_pooch(served: tuple[str, Path], tmp_path: Path) -> None:
    url, root = served
    _mirror(root)
    done = fetch_entry(_entry(), tmp_path / "dest", url + "/").done
    assert [d.action for d in done] == ["fetched", "fetched"]
    assert (tmp_path / "dest" / "tiny" / "spec.csv").read_bytes() == SPEC


def test_a_corrupt_download_is_refused_and_nothing_is_written(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    url, root = served
    _mirror(root)
    (root / "tiny" / "spec.csv").write_bytes(SPEC[:-3])  # a download cut short
    dest = tmp_path / "dest"
    with pytest.raises(SlurmrlError, match="checksum mismatch after 2 downloads"):
        fetch_entry(_entry(), dest, url)
    assert not (dest / "tiny" / "spec.csv").exists()
    assert _leftovers(dest) == []


def test_upstream_gzip_form_is_checked_by_content(served: tuple[str, Path], tmp_path: Path) -> None:
    url, root = served
    (root / "spec.csv").write_bytes(SPEC)
    (root / "jobs.csv").write_bytes(JOBS)  # upstream keeps it uncompressed
    dest = tmp_path / "dest"
    fetch_entry(_entry(url), dest)
    fetched = dest / "tiny" / "jobs.csv.gz"
    assert gzip.decompress(fetched.read_bytes()) == JOBS and matches(fetched, _entry(url).files[1])
    (root / "jobs.csv").write_bytes(JOBS + b"1,2,3,4,m,5,6\n")  # upstream changed: refused
    fetched.unlink()
    with pytest.raises(SlurmrlError, match="checksum mismatch"):
        fetch_entry(_entry(url), dest)
    assert not fetched.exists() and _leftovers(dest) == []


def test_derived_files_need_a_mirror(tmp_path: Path) -> None:
    derived = TraceFile("tiny/derived.csv", _sha(SPEC), "", 0, "derived", "https://example.org/raw.csv")
    with pytest.raises(SlurmrlError, match="only a mirror") as info:
        fetch_entry(TraceEntry("tiny", "t", "CC0", "", "", "", (derived,)), tmp_path / "dest")
    assert "--from" in info.value.format()
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / "spec.csv").write_bytes(SPEC)
    both = TraceEntry("tiny", "t", "CC0", "", "", "", (_entry(f"file://{upstream}").files[0], derived))
    report = fetch_entry(both, tmp_path / "dest")  # upstream: what can be fetched is, the rest is named
    assert [d.action for d in report.done] == ["fetched"] and report.mirror_only == ("tiny/derived.csv",)


def test_a_missing_mirror_file_names_it(tmp_path: Path) -> None:
    (tmp_path / "mirror").mkdir()
    with pytest.raises(SlurmrlError, match="the mirror has no tiny/spec.csv"):
        fetch_entry(_entry(), tmp_path / "dest", str(tmp_path / "mirror"))


def _tar_gz(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _archived_entry(archive: bytes, table_sha: str) -> TraceEntry:
    """An archive as published (checksum of the archive) and the table unpacked from it (its own checksum)."""
    return TraceEntry(
        "tiny",
        "t",
        "CC0",
        "",
        "",
        "",
        (
            TraceFile(
                "tiny/jobs.tar.gz", _sha(archive), "", len(archive), "same", "https://example.org/jobs.tar.gz"
            ),
            TraceFile("tiny/jobs.csv", table_sha, "", 0, "unpack", "tiny/jobs.tar.gz"),
        ),
    )


def test_archived_tables_are_unpacked_and_checked(tmp_path: Path) -> None:
    archive = _tar_gz({"jobs.csv": JOBS, "README": b"other member\n"})
    (tmp_path / "mirror" / "tiny").mkdir(parents=True)
    (tmp_path / "mirror" / "tiny" / "jobs.tar.gz").write_bytes(archive)
    dest = tmp_path / "dest"
    done = fetch_entry(_archived_entry(archive, _sha(JOBS)), dest, str(tmp_path / "mirror")).done
    assert [d.action for d in done] == ["fetched", "fetched"]
    assert (dest / "tiny" / "jobs.csv").read_bytes() == JOBS
    (dest / "tiny" / "jobs.csv").unlink()
    with pytest.raises(SlurmrlError, match="checksum mismatch") as info:
        fetch_entry(_archived_entry(archive, _sha(SPEC)), dest, str(tmp_path / "mirror"))
    assert "jobs.tar.gz" in info.value.format()
    assert not (dest / "tiny" / "jobs.csv").exists() and _leftovers(dest) == []


def test_a_zip_member_is_found_by_its_path_and_a_git_blob_id_checks_the_archive(tmp_path: Path) -> None:
    """As Helios' data.zip: known only by its git blob id, holding one cluster_log.csv per cluster."""
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("data/Earth/cluster_log.csv", b"earth\n")
        zf.writestr("data/Venus/cluster_log.csv", JOBS)
    archive = buffer.getvalue()
    blob = hashlib.sha1(b"blob %d\0" % len(archive) + archive).hexdigest()
    entry = TraceEntry(
        "tiny",
        "t",
        "CC0",
        "",
        "",
        "",
        (
            TraceFile("tiny/data.zip", "", "", 0, "same", "https://example.org/data.zip", git_sha1=blob),
            TraceFile(
                "tiny/Venus/log.csv",
                "",
                "",
                0,
                "unpack",
                "tiny/data.zip",
                member="data/Venus/cluster_log.csv",
            ),
        ),
    )
    (tmp_path / "mirror" / "tiny").mkdir(parents=True)
    (tmp_path / "mirror" / "tiny" / "data.zip").write_bytes(archive)
    done = fetch_entry(entry, tmp_path / "dest", str(tmp_path / "mirror")).done
    assert [(d.action, d.verified) for d in done] == [("fetched", True), ("fetched", False)]
    assert (tmp_path / "dest" / "tiny" / "Venus" / "log.csv").read_bytes() == JOBS
    (tmp_path / "dest" / "tiny" / "data.zip").write_bytes(archive + b"junk")  # damaged in place
    (tmp_path / "mirror" / "tiny" / "data.zip").write_bytes(archive[:-1] + b"!")  # and the mirror is bad
    with pytest.raises(SlurmrlError, match=f"got git blob id [0-9a-f]{{40}}, the registry has {blob}"):
        fetch_entry(entry, tmp_path / "dest", str(tmp_path / "mirror"))
    assert (tmp_path / "dest" / "tiny" / "data.zip").read_bytes() == archive + b"junk"  # left as it was


def test_a_download_that_fails_its_check_is_fetched_again(tmp_path: Path) -> None:
    """A server that sends a cut-short file once, then the whole file: the second download is kept."""
    root = _mirror(tmp_path / "www")
    sent: list[str] = []

    class Flaky(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            sent.append(self.path)
            if self.path.endswith("spec.csv") and sent.count(self.path) == 1:
                self.send_response(200)
                self.send_header("Content-Length", str(len(SPEC) - 3))
                self.end_headers()
                self.wfile.write(SPEC[:-3])
                return
            super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        done = fetch_entry(_entry(), tmp_path / "dest", url).done
    finally:
        server.shutdown()
        server.server_close()
    assert [d.action for d in done] == ["fetched", "fetched"]
    assert sent.count("/tiny/spec.csv") == 2
    assert (tmp_path / "dest" / "tiny" / "spec.csv").read_bytes() == SPEC
    assert _leftovers(tmp_path / "dest") == []


# --- the command line ---------------------------------------------------------


@pytest.fixture
def tiny_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "registry", lambda: {"tiny": _entry(unknown=True)})


def test_cli_fetch_from_mirror_into_slurmrl_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_registry: None
) -> None:
    mirror = _mirror(tmp_path / "mirror")
    monkeypatch.setenv("SLURMRL_TRACES", str(tmp_path / "store"))
    result = CliRunner().invoke(main, ["traces", "fetch", "tiny", "--from", str(mirror)])
    assert result.exception is None, result.output
    assert "tiny: 2 fetched in" in result.output and str(tmp_path / "store") in result.output
    assert f"no published checksum; its sha256 is {_sha(SPEC)}" in result.output
    assert (tmp_path / "store" / "tiny" / "jobs.csv.gz").is_file()


def test_cli_fetch_checksum_failure_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_registry: None
) -> None:
    mirror = _mirror(tmp_path / "mirror", jobs=b"not the jobs\n")
    result = CliRunner().invoke(
        main, ["traces", "fetch", "tiny", "--from", str(mirror), "--to", str(tmp_path / "store")]
    )
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "checksum mismatch" in errors[0] and "jobs.csv.gz" in errors[0]
    assert not (tmp_path / "store" / "tiny" / "jobs.csv.gz").exists()


def test_cli_unknown_trace_and_bad_mirror(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["traces", "fetch", "phily"])
    assert result.exit_code == 1 and "unknown trace 'phily'" in result.output and "'philly'" in result.output
    result = CliRunner().invoke(main, ["traces", "fetch", "philly", "--from", str(tmp_path / "none")])
    assert result.exit_code == 2 and "is not a folder" in result.output
