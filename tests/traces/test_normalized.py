import gzip
from pathlib import Path

import pytest

from slurmrl.errors import SlurmrlError
from slurmrl.traces import FORMATS, TraceJob, embedded_trace, load_trace
from slurmrl.traces.store import locate


def _here(relative: str) -> Path:
    """The public trace file wherever slurmrl finds it (a missing one is a path that does not exist)."""
    try:
        return locate(relative)
    except SlurmrlError:
        return Path("/nonexistent") / relative


PHILLY = _here("philly/philly_jobs_2017-10-02_to_2017-10-30.csv.gz")
OPENB = _here("alibaba/openb_pods_v2023.csv.gz")

HEADER = "job_id,user,vc,submit_time,duration_s,num_gpus,num_nodes,status,job_type,extra\n"


def write(path: Path, text: str, *, gz: bool = False) -> Path:
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_normalized_rows_sorted_and_mapped(tmp_path: Path, gz: bool) -> None:
    path = write(
        tmp_path / ("t.csv.gz" if gz else "t.csv"),
        HEADER
        + "b,u1,vc1,20,5.5,2,1,completed,bert,x\n"
        + "a,,vc2,20,7,1,,,,\n"
        + "c,u2,vc1,3,100,8,,FAILED,,\n",
    )
    trace = load_trace(path)
    assert trace.format == "normalized"
    assert trace.jobs == (
        TraceJob("c", 3.0, 100.0, 8, user="u2", vc="vc1", status="FAILED"),
        TraceJob("a", 20.0, 7.0, 1, vc="vc2"),
        TraceJob("b", 20.0, 5.5, 2, user="u1", vc="vc1", num_nodes=1, status="COMPLETED", model="bert"),
    )
    assert trace.lines == {"b": 2, "a": 3, "c": 4}
    assert trace.skipped == 0 and trace.dropped == {}


def test_openb_style_policy_drops_are_counted(tmp_path: Path) -> None:
    path = write(
        tmp_path / "pods.csv",
        "job_id,user,vc,submit_time,duration_s,num_gpus,num_nodes,status,job_type,gpu_milli\n"
        "p0,,,0,10,1,1,RUNNING,,460\n"  # shared GPU: one whole GPU
        "p1,,,1,,1,1,PENDING,,1000\n"  # never scheduled
        "p2,,,2,30,0,1,COMPLETED,,0\n"  # CPU only
        "p3,,,3,40,2,1,FAILED,,1000\n",
    )
    trace = load_trace(path)
    assert [(j.job_id, j.num_gpus, j.duration) for j in trace.jobs] == [("p0", 1, 10.0), ("p3", 2, 40.0)]
    assert trace.dropped == {"never scheduled (empty duration)": 1, "no GPUs": 1}
    assert trace.skipped == 0
    assert "dropped" in trace.describe()


def test_formats_listing() -> None:
    assert set(FORMATS) >= {
        "normalized",
        "philly",
        "helios",
        "pai",
        "openb",
        "tiresias",
        "gavel",
        "pollux",
        "swf",
        "chronus",
    }


def test_embedded_sample() -> None:
    trace = embedded_trace()
    assert trace.source == "embedded:philly-sample"
    assert len(trace) == 11386
    assert trace.jobs[-1].submit_time < 7 * 86400
    assert load_trace("embedded:philly-sample").jobs == trace.jobs
    data = Path(__file__).resolve().parents[2] / "slurmrl" / "traces" / "data" / "philly_sample.csv.gz"
    assert data.stat().st_size < 400_000


def test_embedded_late_weeks_follow_the_shared_window_on_its_clock() -> None:
    trace = embedded_trace("philly-late")
    assert trace.source == "embedded:philly-late" and len(trace.jobs) == 19_572
    day = 86400
    assert 28 * day <= trace.jobs[0].submit_time and trace.jobs[-1].submit_time < 56 * day
    data = Path(__file__).resolve().parents[2] / "slurmrl" / "traces" / "data"
    assert sum(f.stat().st_size for f in data.glob("*.csv.gz")) < 1_000_000  # every embedded trace


def test_embedded_tail_repeats_the_late_weeks_it_overlaps_and_ends_with_the_list() -> None:
    tail = embedded_trace("philly-tail")
    assert tail.source == "embedded:philly-tail" and len(tail.jobs) == 20_053
    day = 86400
    assert 42 * day <= tail.jobs[0].submit_time and tail.jobs[-1].submit_time < 84 * day
    overlap = [j for j in tail.jobs if j.submit_time < 56 * day]
    late = {j.job_id: j for j in embedded_trace("philly-late").jobs if j.submit_time >= 42 * day}
    assert overlap == [late[j.job_id] for j in overlap] and len(overlap) == len(late)


@pytest.mark.skipif(not PHILLY.exists(), reason="public trace not fetched (slurmrl traces fetch)")
def test_late_weeks_share_no_job_with_the_shared_window() -> None:
    late = {j.job_id for j in embedded_trace("philly-late").jobs}
    assert late.isdisjoint(j.job_id for j in load_trace(PHILLY).jobs)


@pytest.mark.skipif(not PHILLY.exists(), reason="public trace not fetched (slurmrl traces fetch)")
def test_shared_philly_counts() -> None:
    # Its load time is printed by benchmarks/sim_speed.py, not asserted here.
    trace = load_trace(PHILLY)
    assert len(trace) == 46070
    assert trace.skipped == 0 and trace.dropped == {}
    assert sum(1 for j in trace.jobs if j.num_gpus == 1) == 43982
    assert min(j.duration for j in trace.jobs) == 1.0
    assert len({j.vc for j in trace.jobs}) == 11


@pytest.mark.skipif(not PHILLY.exists(), reason="public trace not fetched (slurmrl traces fetch)")
def test_embedded_sample_matches_shared_window() -> None:
    full = load_trace(PHILLY)
    first_week = [j for j in full.jobs if j.submit_time < 7 * 86400]
    assert embedded_trace().jobs == tuple(first_week)


@pytest.mark.skipif(not OPENB.exists(), reason="public trace not fetched (slurmrl traces fetch)")
def test_shared_openb_documented_counts() -> None:
    trace = load_trace(OPENB)
    # README: 8,152 pods; 897 never scheduled; 1,088 CPU-only, 36 of them also never scheduled.
    assert trace.dropped == {"never scheduled (empty duration)": 897, "no GPUs": 1088 - 36}
    assert len(trace) == 8152 - 897 - (1088 - 36)
    assert all(j.num_gpus >= 1 and j.num_nodes == 1 for j in trace.jobs)


@pytest.mark.parametrize(
    "body",
    [
        "b,u1,vc1,20,5.5,2,1,completed,bert,x\na, ,vc2, 20 ,7,1,,,,\nc,u2,vc1,3,100,8,,FAILED,,\n",
        "b,u1,vc1,20,5.5,2,1,completed,bert,x\r\na,,vc2,20,7,1,,,,\r\n",  # CRLF line ends
        "b,u1,vc1,20,5.5,2,1,,,\n\na,,vc2,20,7,1,,,,\n",  # a blank line
        'b,"u\n1",vc1,20,5.5,2,1,,,\na,,vc2,20,7,1,,,,\n',  # a quoted line break
        "b,u1,vc1,20,5.5,2.0,1,,,\na,,vc2,20,,1,,,,\nc,,vc2,1,3,0,,,,\n",  # rows to drop, a float count
    ],
)
def test_column_reader_agrees_with_the_row_reader(
    tmp_path: Path, body: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slurmrl.traces import normalized

    path = write(tmp_path / "t.csv", HEADER + body)
    fast = load_trace(path)
    monkeypatch.setattr(normalized, "_clean_table", lambda text, display: None)
    rows = load_trace(path)
    assert fast.jobs == rows.jobs and fast.lines == rows.lines
    assert dict(fast.dropped) == dict(rows.dropped) and fast.skipped == rows.skipped


@pytest.mark.parametrize(
    "bad", ["x,,vc,1,2,nan,,,,\n", "x,,vc,-1,2,1,,,,\n", "x,,vc,1,2,1,,,,\nx,,vc,1,2,1,,,,\n"]
)
def test_bad_rows_still_get_the_row_readers_error(tmp_path: Path, bad: str) -> None:
    from slurmrl.errors import TraceError

    path = write(tmp_path / "t.csv", HEADER + "a,,vc,0,1,1,,,,\n" + bad)
    with pytest.raises(TraceError, match=r"t\.csv.*line 3"):
        load_trace(path)
