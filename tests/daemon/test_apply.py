"""Give-backs batched per field and value (``scontrol update JobId=a,b,c``), with one-by-one
retries for a call Slurm partly refused, and the record changed only for what Slurm took."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import fake_slurm  # loaded by conftest.py

from slurmrl.daemon.apply import BATCH, apply_changes
from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.loop import Daemon
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.plan import Change
from slurmrl.daemon.record import Record
from slurmrl.slurm.cli_backend import CliBackend
from slurmrl.slurm.run import CommandResult, ControllerUnreachable

FakeSlurm, pending = fake_slurm.FakeSlurm, fake_slurm.pending
NOW = 1_700_000_000.0


def queue(n: int) -> FakeSlurm:
    return FakeSlurm([pending(str(i), 8, NOW - 100 + i) for i in range(1, n + 1)])


def daemon(tmp_path: Path, fake: FakeSlurm) -> Daemon:
    cfg = DaemonConfig(
        policy="fifo",
        placement="first-fit",
        state_file=str(tmp_path / "state.json"),
        audit_log=str(tmp_path / "audit.jsonl"),
        backoff_initial=1.0,
        backoff_max=1.0,
        max_changes_per_cycle=1000,
        max_calls_per_cycle=1000,
    )
    return Daemon(cfg, fake, metrics=DaemonMetrics(), clock=lambda: NOW, sleep=lambda s: None)


def factors(record: Record, ids: list[str], value: int = 500) -> list[Change]:
    for jid in ids:
        record.update(jid, NOW, site_factor=value, orig_site_factor=0)
    return [Change(jid, "site_factor", value, 0, "stop", restore=True) for jid in ids]


def test_revert_of_over_100_jobs_takes_one_call_per_batch_per_field(tmp_path: Path) -> None:
    fake = queue(120)
    d = daemon(tmp_path, fake)
    d.cycle()
    n = sum(1 for j in fake.jobs.values() if j.site_factor)  # the last band stays within tolerance of 0
    assert n > 100
    fake.calls.clear()
    out = d.revert()
    assert (out.reverted, out.remaining) == (n, 0)
    batched = fake.writes("update_many")
    chunks = [BATCH] * (n // BATCH) + [n % BATCH]
    assert [len(ids.split(",")) for _, ids, (name, _) in batched if name == "site_factor"] == chunks
    notes = [len(ids.split(",")) for _, ids, (name, _) in batched if name == "admin_comment"]
    # A note goes after the job's other give-backs: the jobs whose pin (one call each) came
    # after the open list call have their note sent alone.
    pinned = len(fake.writes("set_required_nodes"))
    assert len(notes) == len(chunks) and sum(notes) + len(fake.writes("set_admin_comment")) == n
    assert len(fake.writes("set_admin_comment")) <= pinned
    assert all(not j.site_factor and not j.admin_comment for j in fake.jobs.values())
    assert fake.writes("set_site_factor") == []


def test_a_bad_id_in_a_chunk_leaves_no_other_job_unreverted(tmp_path: Path) -> None:
    fake = queue(5)
    record = Record()
    changes = factors(record, ["1", "2", "3", "4", "5"])
    del fake.jobs["3"]  # ended between the read and the revert
    for jid in fake.jobs:
        fake.jobs[jid] = replace(fake.jobs[jid], site_factor=500)
    out = apply_changes(fake, changes, record, NOW, batch=50)
    assert out.vanished == ("3",) and out.stopped_by is None
    assert {c.job_id for c in out.sent} == {"1", "2", "4", "5"}
    assert all(j.site_factor == 0 for j in fake.jobs.values())
    assert record.jobs == {}
    # one list call (refused for job 3), then one call per job to learn which one failed
    # (the fake logs only the calls it accepts: job 3's is missing)
    assert [c[0] for c in fake.writes()] == ["update_many"] + ["set_site_factor"] * 4


def test_an_unanswered_batch_leaves_its_jobs_recorded(tmp_path: Path) -> None:
    fake = queue(4)
    record = Record()
    changes = factors(record, ["1", "2", "3", "4"])
    fake.fail_next("update_many", ControllerUnreachable("'scontrol update' did not finish within 20 s"))
    out = apply_changes(fake, changes, record, NOW, batch=50)
    assert out.stopped_by is not None and out.unsent == 4 and out.sent == ()
    assert sorted(record.jobs) == ["1", "2", "3", "4"]  # given back only once Slurm confirms


def test_mixed_values_are_grouped_and_single_ones_sent_alone(tmp_path: Path) -> None:
    fake = queue(4)
    record = Record()
    changes = factors(record, ["1", "2", "3"]) + [Change("4", "nodes", ("node01",), (), "stop", restore=True)]
    record.update("4", NOW, nodes=("node01",), nodes_since=NOW)
    apply_changes(fake, changes, record, NOW, batch=2)
    assert [(c[0], c[1]) for c in fake.writes()] == [
        ("update_many", "1,2"),
        ("set_site_factor", "3"),
        ("set_required_nodes", "4"),
    ]
    assert record.jobs == {}


def test_the_cli_backend_sends_one_list_update() -> None:
    seen: list[list[str]] = []

    def runner(cmd, **kw):
        seen.append(list(cmd))
        return CommandResult(tuple(cmd), 0, "", "", 0.0)

    backend = CliBackend(runner=runner)
    backend.update_many(["7", "8_2"], "site_factor", 0)
    backend.update_many(["9", "10"], "nodes", None)
    backend.update_many(["9"], "prefer", "")
    backend.set_prefer("11", "node01|node02")
    assert seen == [
        ["scontrol", "update", "JobId=7,8_2", "SiteFactor=0"],
        ["scontrol", "update", "JobId=9,10", "ReqNodeList="],
        ["scontrol", "update", "JobId=9", "Prefer="],
        ["scontrol", "update", "JobId=11", "Prefer=node01|node02"],
    ]
