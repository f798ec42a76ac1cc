"""Rebuilding converted trace files from their upstream sources, and fetching them that way."""

from __future__ import annotations

import csv
import gzip
import hashlib
import http.server
import io
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from slurmrl.errors import SlurmrlError
from slurmrl.traces import load_trace
from slurmrl.traces.convert import CONVERTERS, convert, philly_late, philly_tail
from slurmrl.traces.fetch import fetch_entry
from slurmrl.traces.registry import TraceEntry, TraceFile, registry

# Hand-written rows in the layout of Pollux's philly.csv (not data from it).
POLLUX_PHILLY = (
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-03 00:00:05,60.0,8,480.0,vcB\n"  # row 0
    "2017-09-30 23:59:59,10.0,1,10.0,vcA\n"  # row 1: before the window
    "2017-10-02 00:00:00,7.0,1,7.0,vcA\n"  # row 2: the window's first second
    "2017-10-30 00:00:00,5.0,1,5.0,vcA\n"  # row 3: the window's end is excluded
    "2017-10-03 00:00:05,2.0,2,4.0,vcA\n"  # row 4: ties row 0 on time
    "\n"
)
# Hand-written rows in the layout of the openb pod list (not data from it).
OPENB_PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    "pod-a,1000,100,1,300,,LS,Running,10,110,15\n"
    "pod-b,1000,100,2,1000,V100M16,BE,Pending,20,40,\n"
    "pod-c,1000,100,8,1000,,LS,Succeeded,5,500,100\n"
)


def _csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode())))


def test_philly_window_keeps_the_four_weeks_sorted_with_source_row_ids(tmp_path: Path) -> None:
    (tmp_path / "philly.csv").write_text(POLLUX_PHILLY)
    convert("philly-window", tmp_path / "philly.csv", tmp_path / "out.csv")
    rows = _csv((tmp_path / "out.csv").read_bytes())
    assert rows[0][:6] == ["job_id", "user", "vc", "submit_time", "duration_s", "num_gpus"]
    assert [r[0] for r in rows[1:]] == ["philly-p000002", "philly-p000000", "philly-p000004"]
    assert rows[2] == [
        "philly-p000000",
        "",
        "vcB",
        "86405",
        "60.0",
        "8",
        "",
        "",
        "",
        "2017-10-03 00:00:05",
        "480.0",
    ]
    trace = load_trace(tmp_path / "out.csv")
    assert trace.format == "normalized" and [j.num_gpus for j in trace.jobs] == [1, 8, 2]


def test_philly_late_keeps_the_four_later_weeks_on_the_same_clock_and_ids(tmp_path: Path) -> None:
    source = POLLUX_PHILLY + (
        "2017-11-26 23:59:59,9.0,4,36.0,vcC\n"  # row 5 (the blank line is no row): the last second
        "2017-11-27 00:00:00,3.0,1,3.0,vcC\n"  # row 6: the late window's end is excluded
    )
    (tmp_path / "philly.csv").write_text(source)
    philly_late(tmp_path / "philly.csv", tmp_path / "late.csv.gz")
    first = (tmp_path / "late.csv.gz").read_bytes()
    rows = _csv(gzip.decompress(first))
    assert rows == [
        ["job_id", "user", "vc", "submit_time", "duration_s", "num_gpus", "num_nodes", "status", "job_type"],
        ["philly-p000003", "", "vcA", str(28 * 86400), "5.0", "1", "", "", ""],
        ["philly-p000005", "", "vcC", str(56 * 86400 - 1), "9.0", "4", "", "", ""],
    ]
    philly_late(tmp_path / "philly.csv", tmp_path / "again.csv.gz")
    assert (tmp_path / "again.csv.gz").read_bytes() == first  # no time or name in the gzip header


def test_philly_tail_starts_two_weeks_before_the_late_weeks_end(tmp_path: Path) -> None:
    source = POLLUX_PHILLY + (
        "2017-11-12 23:59:59,9.0,4,36.0,vcC\n"  # row 5: before the tail
        "2017-11-13 00:00:00,3.0,1,3.0,vcC\n"  # row 6: its first second
        "2017-12-22 10:00:00,7.0,2,14.0,vcA\n"  # row 7: the list's last day
    )
    (tmp_path / "philly.csv").write_text(source)
    philly_tail(tmp_path / "philly.csv", tmp_path / "tail.csv.gz")
    rows = _csv(gzip.decompress((tmp_path / "tail.csv.gz").read_bytes()))
    assert [r[0] for r in rows[1:]] == ["philly-p000006", "philly-p000007"]
    assert [r[3] for r in rows[1:]] == [str(42 * 86400), str(81 * 86400 + 10 * 3600)]


def test_openb_pods_in_the_normalized_schema(tmp_path: Path) -> None:
    (tmp_path / "pods.csv").write_text(OPENB_PODS)
    convert("openb-pods", tmp_path / "pods.csv", tmp_path / "out.csv")
    rows = _csv((tmp_path / "out.csv").read_bytes())
    head = rows[0]
    got = [dict(zip(head, r, strict=True)) for r in rows[1:]]
    assert [g["job_id"] for g in got] == ["pod-a", "pod-b", "pod-c"]  # the source's order
    assert (got[0]["duration_s"], got[0]["start_time"], got[0]["wait_s"], got[0]["status"]) == (
        "95.0",
        "15.0",
        "5.0",
        "RUNNING",
    )
    assert (got[1]["duration_s"], got[1]["start_time"], got[1]["status"]) == ("", "", "PENDING")
    assert [g["censored_at_trace_end"] for g in got] == ["False", "False", "True"]
    assert load_trace(tmp_path / "out.csv").format == "normalized"


def test_header_renames_keep_the_body(tmp_path: Path) -> None:
    (tmp_path / "vc.csv").write_bytes(b"vc,node num\nabc,4\n")
    convert("philly-vc-nodes", tmp_path / "vc.csv", tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_bytes() == b"vc,num_nodes\nabc,4\n"


def test_registered_conversions_name_a_converter_and_the_source_checksum() -> None:
    converted = [f for e in registry().values() for f in e.files if f.form == "convert"]
    assert {f.converter for f in converted} == set(CONVERTERS)
    assert all(len(f.source_sha256) == 64 and f.sha256 for f in converted)
    with pytest.raises(SlurmrlError, match="unknown conversion 'nope'"):
        convert("nope", Path("a"), Path("b"))


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_fetch_converts_the_checked_upstream_source(upstream: tuple[str, Path], tmp_path: Path) -> None:
    url, root = upstream
    raw = POLLUX_PHILLY.encode()
    (root / "philly.csv").write_bytes(raw)
    convert("philly-window", root / "philly.csv", tmp_path / "expected.csv")
    expected = (tmp_path / "expected.csv").read_bytes()
    spec = TraceFile(
        "tiny/jobs.csv.gz",
        "0" * 64,  # the mirror's gzip bytes: another gzip may differ, the content may not
        _sha(expected),
        0,
        "convert",
        f"{url}/philly.csv",
        converter="philly-window",
        source_sha256=_sha(raw),
    )
    entry = TraceEntry("tiny", "t", "CC0", "", "", "", (spec,))
    dest = tmp_path / "dest"
    report = fetch_entry(entry, dest)
    assert [d.action for d in report.done] == ["fetched"]
    assert gzip.decompress((dest / "tiny" / "jobs.csv.gz").read_bytes()) == expected
    (dest / "tiny" / "jobs.csv.gz").unlink()
    (root / "philly.csv").write_bytes(raw.replace(b"60.0", b"61.0"))  # upstream changed
    with pytest.raises(SlurmrlError, match="checksum mismatch after 2 downloads"):
        fetch_entry(entry, dest)
    assert sorted(p.name for p in dest.rglob("*") if p.is_file()) == []
