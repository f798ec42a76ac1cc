"""A checkpoint's run-time table: read with one-line errors, handed to its lead as accounting history."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from slurmrl.errors import PolicyError
from slurmrl.rl.run_times import read_run_times, write_run_times
from slurmrl.rl.topdrl import TopDRLPolicy, shipped_policy_dir

ROOT = Path(__file__).resolve().parents[2]
TABLED = ROOT / "policies" / "topdrl-philly" / "gittins-table" / "0"


def test_a_table_reads_back_as_ended_jobs_from_accounting(tmp_path: Path) -> None:
    path = tmp_path / "run_times.csv"
    write_run_times(path, [(3600.0, 120.0), (604800.0, 0.0), (900.0, 1500.5)])
    ended = read_run_times(path)
    assert [(f.job.time_limit, f.run_time) for f in ended] == [
        (3600.0, 120.0),
        (604800.0, 0.0),
        (900.0, 1500.5),
    ]
    assert all(f.from_accounting for f in ended)


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("limit,run\n1,2\n", "line 1", "header must be"),
        ("time_limit_s,run_time_s\n60,5\n60,abc\n", "line 3", "two numbers"),
        ("time_limit_s,run_time_s\n60,5,7\n", "line 2", "two numbers"),
        ("time_limit_s,run_time_s\n0,5\n", "line 2", "must be positive"),
        ("time_limit_s,run_time_s\n60,-1\n", "line 2", "not negative"),
        ('time_limit_s,run_time_s\n"60,5\n7,8\n', "line 2", "quoted field"),
    ],
)
def test_a_bad_table_is_one_line_naming_the_file_and_line(
    tmp_path: Path, text: str, where: str, what: str
) -> None:
    path = tmp_path / "run_times.csv"
    path.write_text(text)
    with pytest.raises(PolicyError) as caught:
        read_run_times(path)
    message = str(caught.value)
    assert str(path) in message and where in message and what in message and "\n" not in message


def test_a_checkpoint_hands_its_table_to_its_lead_before_any_history(tmp_path: Path) -> None:
    tabled = TopDRLPolicy.from_dir(TABLED)
    plain = TopDRLPolicy.from_dir(shipped_policy_dir())
    rows = len(read_run_times(TABLED / "run_times.csv"))
    assert rows > 10_000 and tabled.lead is not None and plain.lead is not None
    assert tabled.lead.runs._count(None) == rows and plain.lead.runs._count(None) == 0


def test_a_table_for_a_lead_that_learns_no_run_times_or_a_missing_one_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "tabled"
    shutil.copytree(TABLED, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "lead": "sjf-limit"}))
    with pytest.raises(PolicyError, match="needs a lead that learns run times"):
        TopDRLPolicy.from_dir(folder)
    (folder / "config.json").write_text(json.dumps({**config, "run_times": "gone.csv"}))
    with pytest.raises(PolicyError, match="no file gone.csv"):
        TopDRLPolicy.from_dir(folder)
