from __future__ import annotations

import csv
import json
import math
from dataclasses import astuple
from pathlib import Path

import pytest

from slurmrl.cluster.model import Cluster, Node, Rack, islands_for
from slurmrl.errors import SlurmrlError
from slurmrl.sim.metrics import summarize
from slurmrl.sim.records import JobRecord, Sample
from slurmrl.sim.results import (
    MAX_TIMELINE_ROWS,
    format_table,
    read_results,
    run_folder,
    write_results,
    write_table_csv,
    write_table_json,
)

NAN = float("nan")


def cluster() -> Cluster:
    nodes = tuple(Node(f"n{i}", i, 0, 8, "A100", islands_for("nvswitch", 8)) for i in range(2))
    return Cluster("c", (Rack("r0", 0, (0, 1)),), nodes)


RECORDS = [
    JobRecord("j1", "alice", "vc,a", "resnet", 8, 0.0, 1.5, 3601.25, 3599.75, 3599.75, 0, 1, 1, 0, NAN),
    JobRecord(
        "j2", "bob", "vcb", "", 16, 2.0, 3601.25, 7000.1, 1e-3, 3398.85, 1, 2, 1, 2, 7200.0, True, 5e-4
    ),
    JobRecord("j3", "bob", "vcb", "bert", 4, 10.0, NAN, NAN, 50.0, 0.0, 0, 0, 0, -1, NAN),
]
SAMPLES = [Sample(0.0, 8, 2, 1, 0.0), Sample(3601.25, 16, 1, 1, 0.0), Sample(7000.1, 0, 1, 0, 0.0)]
META = {"policy": "fifo", "placement": "first-fit", "trace": "embedded:tiny", "seed": 3, "load": NAN}


def key(x: object) -> tuple:
    """Dataclass values with NaN made comparable."""
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in astuple(x))


def written(tmp_path: Path) -> Path:
    summary = summarize(RECORDS, SAMPLES, cluster(), wall_seconds=0.25)
    return write_results(tmp_path / "run", summary=summary, records=RECORDS, samples=SAMPLES, meta=META)


def test_round_trip(tmp_path: Path) -> None:
    out = written(tmp_path)
    res = read_results(out)
    assert [key(r) for r in res.records] == [key(r) for r in RECORDS]
    assert [key(s) for s in res.samples] == [key(s) for s in SAMPLES]
    assert key(res.summary) == key(summarize(RECORDS, SAMPLES, cluster(), wall_seconds=0.25))
    assert res.meta["policy"] == "fifo" and res.meta["load"] is None
    assert res.meta["version"]


def test_summary_json_is_strict(tmp_path: Path) -> None:
    text = (written(tmp_path) / "summary.json").read_text()
    assert "NaN" not in text

    def reject(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    data = json.loads(text, parse_constant=reject)
    assert data["jobs"] == 3 and data["unfinished"] == 1
    assert data["meta"]["trace"] == "embedded:tiny"


def test_jobs_csv_has_header_and_empty_cells_for_nan(tmp_path: Path) -> None:
    with (written(tmp_path) / "jobs.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3
    assert rows[0]["vc"] == "vc,a"  # quoted, not split
    assert rows[2]["start_time"] == "" and rows[1]["killed_at_limit"] == "true"


def test_timeline_is_thinned_evenly(tmp_path: Path) -> None:
    samples = [Sample(float(t), t % 7, 0, 0, 0.0) for t in range(12_000)]
    summary = summarize(RECORDS, samples, cluster(), wall_seconds=0)
    out = write_results(tmp_path / "big", summary=summary, records=RECORDS, samples=samples, meta={})
    times = [s.time for s in read_results(out).samples]
    assert len(times) <= MAX_TIMELINE_ROWS and len(times) > MAX_TIMELINE_ROWS * 0.9
    assert times[0] == 0.0 and times[-1] == 11_999.0
    gaps = {round(b - a) for a, b in zip(times, times[1:], strict=False)}
    assert gaps <= {2, 3}


def test_missing_summary_names_the_file(tmp_path: Path) -> None:
    out = written(tmp_path)
    (out / "summary.json").unlink()
    with pytest.raises(SlurmrlError, match="summary.json"):
        read_results(out)


def test_missing_directory_and_jobs(tmp_path: Path) -> None:
    with pytest.raises(SlurmrlError, match="does not exist"):
        read_results(tmp_path / "nowhere")
    out = written(tmp_path)
    (out / "jobs.csv").unlink()
    with pytest.raises(SlurmrlError, match="jobs.csv"):
        read_results(out)


def test_mismatched_job_count(tmp_path: Path) -> None:
    out = written(tmp_path)
    lines = (out / "jobs.csv").read_text().splitlines()
    (out / "jobs.csv").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(SlurmrlError, match="2 job rows, but summary.json says 3"):
        read_results(out)


def test_bad_cell_and_bad_header(tmp_path: Path) -> None:
    out = written(tmp_path)
    path = out / "jobs.csv"
    text = path.read_text()
    path.write_text(text.replace("3599.75", "soon", 1))
    with pytest.raises(SlurmrlError) as err:
        read_results(out)
    assert err.value.line == 2 and err.value.column == "duration"
    path.write_text(text.replace("preemptions", "restarts", 1))
    with pytest.raises(SlurmrlError, match="missing preemptions; unexpected restarts"):
        read_results(out)


def test_bad_summary_json(tmp_path: Path) -> None:
    out = written(tmp_path)
    (out / "summary.json").write_text('{"jobs": 3,\n  oops}')
    with pytest.raises(SlurmrlError, match="invalid JSON") as err:
        read_results(out)
    assert err.value.line == 2
    (out / "summary.json").write_text('{"jobs": 3}')
    with pytest.raises(SlurmrlError, match="missing key 'finished'"):
        read_results(out)


def test_new_summary_keys_round_trip(tmp_path: Path) -> None:
    res = read_results(written(tmp_path))
    s = res.summary
    assert (s.finished, s.killed, s.unfinished) == (1, 1, 1)
    assert s.last_end == 7000.1 and s.makespan == pytest.approx(7000.1)
    assert s.steady_jobs == 3 and s.idle_gpu_hours_waiting > 0
    data = json.loads((res.path / "summary.json").read_text())
    assert {"finished", "killed", "last_end", "ftf_rho_max", "steady_utilization"} <= set(data)
    assert "completed" not in data and "killed_at_limit" not in data


def _drop_column(path: Path, column: str) -> None:
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    at = rows[0].index(column)
    with path.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([r[:at] + r[at + 1 :] for r in rows])


def test_files_from_before_best_time_and_finished_still_read(tmp_path: Path) -> None:
    out = written(tmp_path)
    _drop_column(out / "jobs.csv", "best_time")
    data = json.loads((out / "summary.json").read_text())
    data["completed"] = data.pop("finished") + data["killed"]
    data["killed_at_limit"] = data.pop("killed")
    for added in ("last_end", "ftf_rho_max", "steady_jobs", "steady_avg_jct"):
        del data[added]
    (out / "summary.json").write_text(json.dumps(data))
    res = read_results(out)
    assert all(math.isnan(r.best_time) for r in res.records)
    assert [key(r)[:-1] for r in res.records] == [key(r)[:-1] for r in RECORDS]
    assert (res.summary.finished, res.summary.killed) == (1, 1)
    assert math.isnan(res.summary.last_end) and res.summary.steady_jobs == 0
    # A column without a default may not be left out.
    _drop_column(out / "jobs.csv", "run_time")
    with pytest.raises(SlurmrlError, match="missing run_time"):
        read_results(out)


def test_format_table_units_and_alignment() -> None:
    rows = [
        {"policy": "fifo", "avg_jct": 36_000.0, "avg_wait": 30.0, "gpu_utilization": 0.81234, "jobs": 46070},
        {"policy": "srtf-long", "avg_jct": 7_200.0, "avg_wait": NAN, "gpu_utilization": None, "jobs": 12},
    ]
    text = format_table(rows, ["policy", "avg_jct", "avg_wait", "gpu_utilization", "jobs"])
    lines = text.splitlines()
    assert lines[0].split() == ["policy", "avg_jct", "[h]", "avg_wait", "[s]", "gpu_utilization", "jobs"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].split() == ["fifo", "10.00", "30.0", "0.812", "46,070"]
    assert lines[3].split() == ["srtf-long", "2.00", "-", "-", "12"]
    # Numbers are right-aligned: every row ends at the same column.
    assert len({len(line) for line in lines}) == 1


def test_format_table_minutes_and_text_left() -> None:
    text = format_table(
        [{"name": "a", "p95_wait": 600.0}, {"name": "bbb", "p95_wait": 90.0}], ["name", "p95_wait"]
    )
    lines = text.splitlines()
    assert "p95_wait [min]" in lines[0]
    assert lines[2].startswith("a  ") and lines[2].endswith("10.0") and lines[3].endswith("1.5")


def test_table_files(tmp_path: Path) -> None:
    rows = [{"policy": "fifo", "avg_jct": NAN, "extra": 1}, {"policy": "sjf", "avg_jct": 12.5}]
    csv_path = write_table_csv(tmp_path / "t" / "cmp.csv", rows, ["policy", "avg_jct"])
    assert csv_path.read_text().splitlines() == ["policy,avg_jct", "fifo,", "sjf,12.5"]
    json_path = write_table_json(tmp_path / "cmp.json", rows, ["policy", "avg_jct"], meta={"load": NAN})
    assert json.loads(json_path.read_text()) == {
        "meta": {"load": None},
        "rows": [{"policy": "fifo", "avg_jct": None}, {"policy": "sjf", "avg_jct": 12.5}],
    }
    # Without columns every key seen is written, in first-seen order.
    all_cols = write_table_csv(tmp_path / "all.csv", rows)
    assert all_cols.read_text().splitlines() == ["policy,avg_jct,extra", "fifo,,1", "sjf,12.5,"]
    assert json.loads(write_table_json(tmp_path / "all.json", rows).read_text())["rows"][1] == {
        "policy": "sjf",
        "avg_jct": 12.5,
        "extra": None,
    }


def test_write_results_accepts_a_summary_dict(tmp_path: Path) -> None:
    summary = summarize(RECORDS, SAMPLES, cluster(), wall_seconds=0.25)
    out = write_results(
        tmp_path / "d", summary=summary.to_dict(), records=RECORDS, samples=SAMPLES, meta=META
    )
    assert key(read_results(out).summary) == key(summary)
    with pytest.raises(SlurmrlError, match="missing key 'jobs'"):
        write_results(tmp_path / "e", summary={"avg_jct": 1.0}, records=[], samples=[], meta={})


@pytest.mark.parametrize(
    "label, folder",
    [
        ("fifo+first-fit", "fifo+first-fit"),
        ("policies/topdrl-philly+type-aware", "policies-topdrl-philly+type-aware"),
        ("/home/me/ckpt+topology", "home-me-ckpt+topology"),
        ("../up+topology", "up+topology"),
    ],
)
def test_a_run_folder_is_one_path_component(label: str, folder: str) -> None:
    assert run_folder(label) == folder
    assert "/" not in run_folder(label) and run_folder(label) not in ("", ".", "..")
