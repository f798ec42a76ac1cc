"""Reading ended jobs back from accounting: sacct's fields, what is left out, GPU counts."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.slurm.accounting import (
    DELIMITER,
    SACCT_FIELDS,
    gpus_of_tres,
    parse_sacct,
    parse_tres,
    sacct_argv,
    tracks_gpus,
)
from slurmrl.slurm.cli_backend import CliBackend
from slurmrl.slurm.run import CommandResult


def _local(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def line(**kw: str) -> str:
    """One sacct -P line in SACCT_FIELDS order (a completed 2-GPU job unless told otherwise)."""
    row = {
        "JobID": "101",
        "User": "alice",
        "Account": "vision",
        "Partition": "gpu",
        "State": "COMPLETED",
        "Submit": "2026-11-20T10:00:00",
        "Start": "2026-11-20T10:05:00",
        "End": "2026-11-20T11:05:00",
        "TimelimitRaw": "120",
        "NNodes": "1",
        "AllocTRES": "billing=2,cpu=2,gres/gpu=2,mem=2G,node=1",
        "JobName": "train",
        "Comment": "",
        "AdminComment": "",
    }
    row.update(kw)
    return DELIMITER.join(row[f] for f in SACCT_FIELDS)


def test_an_ended_job_reads_with_its_times_limit_gpus_and_model() -> None:
    read = parse_sacct(line(JobName="a|b model=resnet50", Comment="gpus=1-4"))
    (job,) = read.jobs
    assert (job.job_id, job.user, job.account, job.partition, job.state) == (
        "101",
        "alice",
        "vision",
        "gpu",
        "COMPLETED",
    )
    assert job.submit_time == _local("2026-11-20T10:00:00")
    assert job.end_time - job.start_time == 3600.0
    assert job.time_limit == 7200.0 and job.num_nodes == 1
    assert job.gpus.total == 2 and job.model == "resnet50" and job.name == "a|b model=resnet50"
    assert read.unreadable == 0 and read.gpus_tracked


def test_jobs_that_did_not_run_and_end_are_left_out_and_the_rest_come_oldest_end_first() -> None:
    text = "\n".join(
        [
            line(JobID="1", End="2026-11-20T12:00:00"),
            line(JobID="2", State="CANCELLED by 0", Start="None", End="2026-11-20T10:01:00"),  # never started
            line(JobID="3", State="RUNNING", End="Unknown"),
            line(JobID="4", State="REQUEUED"),
            line(JobID="5", State="TIMEOUT", End="2026-11-20T11:00:00"),
            line(JobID="6", State="CANCELLED by 1000", End="2026-11-20T11:30:00"),
            line(JobID="7", End="2026-11-20T13:00:00"),  # after ``until``
        ]
    )
    read = parse_sacct(text, until=_local("2026-11-20T12:30:00"))
    assert [j.job_id for j in read.jobs] == ["5", "6", "1"]
    assert [j.state for j in read.jobs] == ["TIMEOUT", "CANCELLED", "COMPLETED"]


def test_an_odd_record_is_counted_not_fatal() -> None:
    text = "\n".join(
        [line(JobID="1"), "1" + DELIMITER + "2", line(JobID="3", Start="yesterday"), "", line(JobID="4")]
    )
    read = parse_sacct(text)
    assert [j.job_id for j in read.jobs] == ["1", "4"] and read.unreadable == 2


def test_unlimited_time_and_unknown_node_counts_read_as_none() -> None:
    (job,) = parse_sacct(line(TimelimitRaw="UNLIMITED", NNodes="")).jobs
    assert job.time_limit is None and job.num_nodes is None


@pytest.mark.parametrize(
    ("tres", "total", "kind"),
    [
        ("cpu=4,gres/gpu=4,node=1", 4, ""),
        ("cpu=4,gres/gpu=4,gres/gpu:a100=4,node=1", 4, "a100"),
        ("cpu=4,gres/gpu:a100=2,gres/gpu:v100=1", 3, ""),
        ("cpu=4,mem=4G,node=1", 0, ""),
        ("", 0, ""),
    ],
)
def test_gpus_come_from_the_allocated_tres(tres: str, total: int, kind: str) -> None:
    gpus = gpus_of_tres(parse_tres(tres))
    assert (gpus.total, gpus.gpu_type) == (total, kind)


def test_accounting_tracks_gpus_only_where_accounting_storage_tres_lists_them() -> None:
    stock = "AccountingStorageTRES   = cpu,mem,energy,node,billing,fs/disk,vmem,pages\nAuthType = auth/munge"
    gpu = "AccountingStorageTRES   = cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu"
    typed = "AccountingStorageTRES = cpu,gres/gpu:a100"
    assert not tracks_gpus(stock) and tracks_gpus(gpu) and tracks_gpus(typed) and not tracks_gpus("")


def test_the_query_covers_the_window_for_every_user_allocations_only() -> None:
    argv = sacct_argv(_local("2026-11-19T08:00:00"), _local("2026-11-26T08:00:00"))
    assert argv[:5] == ["sacct", "-a", "-X", "-n", "-P"]
    assert argv[argv.index("-S") + 1] == "2026-11-19T08:00:00"
    assert argv[argv.index("-E") + 1] == "2026-11-26T08:00:00"
    assert argv[argv.index("-o") + 1].split(",") == list(SACCT_FIELDS)
    assert f"--delimiter={DELIMITER}" in argv


def test_the_cli_backend_asks_the_config_then_sacct_once() -> None:
    calls: list[list[str]] = []
    answers = {
        "scontrol": "AccountingStorageTRES   = cpu,mem,node,billing,gres/gpu\n",
        "sacct": line(JobID="7") + "\n" + line(JobID="8", End="2026-11-20T10:30:00") + "\n",
    }

    def runner(cmd: list[str], **kw: object) -> CommandResult:
        calls.append(cmd)
        return CommandResult(tuple(cmd), 0, answers[cmd[0]], "", 0.01)

    until = _local("2026-11-21T00:00:00")
    read = CliBackend(runner=runner).finished_jobs(until - 86_400.0, until)
    assert [j.job_id for j in read.jobs] == ["8", "7"] and read.gpus_tracked
    assert calls == [["scontrol", "show", "config"], sacct_argv(until - 86_400.0, until)]


_FIELD = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["COMPLETED", "CANCELLED by 0", "2026-11-20T10:05:00", "Unknown", "None", "120", ""]),
)


@given(st.lists(st.lists(_FIELD, min_size=0, max_size=len(SACCT_FIELDS) + 2), max_size=6))
@settings(max_examples=200, deadline=None)
def test_any_sacct_text_reads_without_an_exception_and_every_line_is_accounted_for(rows) -> None:
    """Odd records are counted, never raised: one bad line must not cost the daemon its history."""
    lines = [DELIMITER.join(r).replace("\n", " ") for r in rows]
    read = parse_sacct("\n".join(lines))
    assert len(read.jobs) + read.unreadable <= sum(1 for line in lines if line.strip())
    wrong = sum(1 for line in lines if line.strip() and len(line.split(DELIMITER)) != len(SACCT_FIELDS))
    assert read.unreadable >= wrong
    assert all(j.end_time is not None and j.start_time is not None for j in read.jobs)
    assert [j.end_time for j in read.jobs] == sorted(j.end_time for j in read.jobs)
