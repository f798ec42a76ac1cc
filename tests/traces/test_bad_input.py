import gzip
import json
from pathlib import Path

import pytest

from slurmrl.errors import TraceError
from slurmrl.traces import load_trace

HEADER = "job_id,user,vc,submit_time,duration_s,num_gpus,num_nodes,status,job_type\n"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def raises_at(path: Path, line: int | None, column: str | None, **kwargs: object) -> TraceError:
    with pytest.raises(TraceError) as info:
        load_trace(path, **kwargs)  # type: ignore[arg-type]
    err = info.value
    text = str(err)
    assert str(path) in text
    assert err.file == str(path)
    assert err.line == line
    if line is not None:
        assert f"line {line}" in text
    assert err.column == column
    if column is not None:
        assert f"column '{column}'" in text
    return err


@pytest.mark.parametrize(
    ("row", "column", "what"),
    [
        ("a,,,0,abc,1,,,", "duration_s", "not a number"),
        ("a,,,0,-5,1,,,", "duration_s", "negative"),
        ("a,,,0,nan,1,,,", "duration_s", "finite"),
        ("a,,,0,10,two,,,", "num_gpus", "not a number"),
        ("a,,,0,10,1.5,,,", "num_gpus", "whole number"),
        ("a,,,soon,10,1,,,", "submit_time", "not a number"),
    ],
)
def test_bad_field_names_file_line_column(tmp_path: Path, row: str, column: str, what: str) -> None:
    path = write(tmp_path / "t.csv", HEADER + "ok,,,0,1,1,,,\n\n" + row + "\n")
    err = raises_at(path, 4, column)  # the blank line still counts as a physical line
    assert what in err.message


def test_missing_column_raises_even_when_skipping(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", "job_id,submit_time,num_gpus\na,0,1\n")
    err = raises_at(path, 1, "duration_s", format="normalized", skip_bad=True)
    assert "missing" in err.message


def test_short_row(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", "job_id,submit_time,duration_s,num_gpus\na,0,5\n")
    raises_at(path, 2, "num_gpus")


def test_skip_bad_counts_and_keeps_first_reasons(tmp_path: Path) -> None:
    rows = [f"bad{i},,,0,x,1,,," for i in range(15)] + ["good,,,0,5,1,,,"]
    path = write(tmp_path / "t.csv", HEADER + "\n".join(rows) + "\n")
    trace = load_trace(path, skip_bad=True)
    assert [j.job_id for j in trace.jobs] == ["good"]
    assert trace.skipped == 15
    assert len(trace.skip_reasons) == 10
    assert "line 2" in trace.skip_reasons[0] and "column 'duration_s'" in trace.skip_reasons[0]
    assert "15 bad rows skipped" in trace.describe()


def test_duplicate_job_id(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", HEADER + "a,,,0,5,1,,,\na,,,1,5,1,,,\n")
    err = raises_at(path, 3, "job_id")
    assert "duplicate" in err.message
    assert len(load_trace(path, skip_bad=True)) == 1


def test_truncated_gzip_is_a_clear_error(tmp_path: Path) -> None:
    data = gzip.compress((HEADER + "a,,,0,5,1,,,\n" * 2000).encode())
    path = tmp_path / "t.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    err = raises_at(path, None, None, skip_bad=True)
    assert "truncated" in err.message
    err = raises_at(path, None, None, format="normalized")
    assert "truncated" in err.message


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = bytearray(gzip.compress((HEADER + "a,,,0,5,1,,,\n").encode()))
    data[12:20] = b"\xff" * 8
    path = tmp_path / "t.csv.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match=str(path)):
        load_trace(path, format="normalized")


def test_malformed_json(tmp_path: Path) -> None:
    path = write(tmp_path / "log.json", '[\n {"jobid": "a",\n  "user": }\n]\n')
    err = raises_at(path, 3, "char 11")
    assert "malformed JSON" in err.message
    path = write(tmp_path / "cut.json", '[\n {"jobid": "a"},\n')
    raises_at(path, 3, "char 1")


def test_philly_bad_job_field(tmp_path: Path) -> None:
    jobs = [
        {"jobid": "a", "submitted_time": "2017-10-03 00:00:00", "attempts": []},
        {"jobid": "b", "submitted_time": "yesterday", "attempts": []},
    ]
    path = write(tmp_path / "log.json", json.dumps(jobs, indent=1))
    raises_at(path, 7, "submitted_time")
    trace = load_trace(path, skip_bad=True)
    assert trace.skipped == 1 and trace.dropped == {"no usable attempt": 1}


def test_unknown_format(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", HEADER)
    with pytest.raises(TraceError, match="did you mean 'philly'"):
        load_trace(path, format="phily")
    with pytest.raises(TraceError, match="unknown trace format"):
        load_trace(path, format="xyz")


def test_undetectable_format(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", "foo,bar\n1,2\n")
    err = raises_at(path, 1, None)
    assert "pass the format" in str(err)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="not found"):
        load_trace(tmp_path / "nope.csv")


def test_gavel_unknown_job_type(tmp_path: Path) -> None:
    path = write(tmp_path / "t.trace", "A3C\tcmd\t-n\t1\t100\t0\t1\nGPT-9\tcmd\t-n\t1\t100\t0\t1\n")
    raises_at(path, 2, "job_type")
    assert len(load_trace(path, skip_bad=True)) == 1


def test_pai_bad_task_row_names_task_file(tmp_path: Path) -> None:
    write(tmp_path / "pai_task_table.csv", "jA,w,1,Terminated,10,20,600,30,lots,V100\n")
    path = write(tmp_path / "pai_job_table.csv", "jA,i1,u1,Terminated,5,20\n")
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert info.value.file == str(tmp_path / "pai_task_table.csv")
    assert info.value.line == 1 and info.value.column == "plan_gpu"


def test_a_stray_form_feed_does_not_shift_the_line_an_error_names(tmp_path: Path) -> None:
    """Lines are counted at newlines, as an editor counts them (str.splitlines also breaks at \\f)."""
    path = write(
        tmp_path / "t.trace",
        "A3C\tcmd\fx\t-n\t1\t100\t0\t1\r\nA3C\tcmd\t-n\t1\t100\t0\t1\nGPT-9\tcmd\t-n\t1\t100\t0\t1\n",
    )
    raises_at(path, 3, "job_type")


@pytest.mark.parametrize("skip_bad", [False, True])
def test_an_unclosed_quote_names_its_own_line_not_the_end_of_the_file(tmp_path: Path, skip_bad: bool) -> None:
    """A field opening with a quote swallows every later row up to the next quote.

    The reader then hands one record ending on the file's last line; the
    error must point at the line where the quote opened, and stop even when
    bad rows are skipped, since the rows it swallowed cannot be counted.
    """
    rows = [f"j{i},,,{i},10,1,,," for i in range(6)]
    rows[2] = 'j2,,,2,"10,1,,,'
    path = write(tmp_path / "t.csv", HEADER + "\n".join(rows) + "\n")
    err = raises_at(path, 4, None, skip_bad=skip_bad)
    assert "lines 4-7" in err.message and "\n" not in str(err)


def test_a_long_bad_value_is_quoted_short_on_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", HEADER + 'a,,,0,"' + "9 " * 60 + 'x",1,,,\n')
    err = raises_at(path, 2, "duration_s")
    assert "not a number" in err.message and len(err.message) < 80
