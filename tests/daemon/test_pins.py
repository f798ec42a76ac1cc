"""Soft pins (``pin = "prefer"``): Prefer= where the nodes carry their names as features, the hard
pin or no pin otherwise, each with its reason; recorded, confirmed and given back like a hard pin."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import fake_slurm  # loaded by conftest.py
import pytest

from slurmrl.daemon.checks import pin_check
from slurmrl.daemon.config import DaemonConfig, parse_config
from slurmrl.daemon.loop import Daemon
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.plan import request_key
from slurmrl.daemon.record import Record
from slurmrl.errors import ConfigError
from slurmrl.slurm.snapshot import PinSupport

FakeSlurm, pending, running = fake_slurm.FakeSlurm, fake_slurm.pending, fake_slurm.running
NOW = 1_700_000_000.0


def make(tmp_path: Path, fake: FakeSlurm, **kw) -> Daemon:
    base = dict(
        policy="fifo-backfill",
        placement="topology",
        state_file=str(tmp_path / "state.json"),
        audit_log=str(tmp_path / "audit.jsonl"),
        pin="prefer",
    )
    base.update(kw)
    return Daemon(
        DaemonConfig(**base), fake, metrics=DaemonMetrics(), clock=lambda: NOW, sleep=lambda s: None
    )


def one_free_node(**kw) -> FakeSlurm:
    """node02 is the only free node; job 1 (8 GPUs) can start there now."""
    busy = [
        running("r1", "node01", range(8)),
        running("r3", "node03", range(8)),
        running("r4", "node04", range(8)),
    ]
    return FakeSlurm(busy + [pending("1", 8, NOW - 9, **kw)])


def audit(tmp_path: Path) -> list[dict]:
    return [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]


def test_pin_must_be_required_or_prefer() -> None:
    assert parse_config({"pin": "prefer"}).pin == "prefer"
    assert parse_config({}).pin == "required"
    with pytest.raises(ConfigError, match="pin: must be one of required, prefer"):
        parse_config({"pin": "soft"})


def test_prefer_pins_softly_and_revert_restores_the_empty_prefer(tmp_path: Path) -> None:
    fake = one_free_node()
    fake.name_features = True
    d = make(tmp_path, fake)
    d.cycle()
    job = fake.jobs["1"]
    assert (job.prefer, job.required_nodes) == ("node02", ())
    entry = Record.load(tmp_path / "state.json").get("1")
    assert entry is not None and (entry.prefer, entry.orig_prefer, entry.unsure) == ("node02", "", ())
    assert "prefer=node02" in job.admin_comment
    assert d.metrics.pins._value.get() == 1
    for _ in range(3):  # the Prefer the daemon wrote is not taken for the user's own
        d.cycle()
    assert fake.writes("set_prefer") == [("set_prefer", "1", "node02")]
    assert d.revert().remaining == 0
    assert (fake.jobs["1"].prefer, fake.jobs["1"].admin_comment) == ("", "")
    assert Record.load(tmp_path / "state.json").jobs == {}


def test_prefer_falls_back_to_the_hard_pin_where_nodes_lack_name_features(tmp_path: Path) -> None:
    fake = one_free_node()  # no node carries its name as a feature
    d = make(tmp_path, fake)
    d.cycle()
    assert (fake.jobs["1"].prefer, fake.jobs["1"].required_nodes) == ("", ("node02",))
    change = next(r for r in audit(tmp_path) if r["kind"] == "change" and r["field"] == "nodes")
    assert "hard pin" in change["reason"] and "own names as features" in change["reason"]
    d.revert()
    assert fake.jobs["1"].required_nodes == ()


def test_a_users_own_prefer_is_kept_and_the_job_not_pinned(tmp_path: Path) -> None:
    fake = one_free_node(prefer="fast")
    fake.name_features = True
    d = make(tmp_path, fake)
    d.cycle()
    job = fake.jobs["1"]
    assert (job.prefer, job.required_nodes) == ("fast", ())
    assert fake.writes("set_prefer") == [] and fake.writes("set_required_nodes") == []
    notes = [r["detail"] for r in audit(tmp_path) if r["kind"] == "note"]
    assert any("own --prefer=fast" in n for n in notes)


def test_a_refused_prefer_is_not_set_again_until_the_request_changes(tmp_path: Path) -> None:
    from slurmrl.slurm.run import SlurmError

    fake = one_free_node()
    fake.name_features = True
    fake.fail_next("set_prefer", SlurmError("Invalid feature specification"))
    d = make(tmp_path, fake)
    d.cycle()
    entry = Record.load(tmp_path / "state.json").get("1")
    assert entry is not None and entry.prefer is None and entry.pin_refused == request_key(fake.jobs["1"])


def test_a_pin_slurmctld_puts_off_is_not_blocked_and_is_sent_next_cycle(tmp_path: Path) -> None:
    # 22.05 refuses a job's updates until slurmdbd has indexed it (ESLURM_JOB_SETTING_DB_INX, as
    # after a controller restart): that says nothing about the node list.
    from slurmrl.slurm.run import classify

    fake = one_free_node()
    fake.name_features = True
    text = "slurm_update error: Job update not available right now, the DB index is being set, try again"
    fake.fail_next("set_prefer", classify(["scontrol", "update"], 1, text))
    d = make(tmp_path, fake)
    out = d.cycle()
    assert out.result is not None and out.result.later == ("1",), out.result
    entry = Record.load(tmp_path / "state.json").get("1")
    assert entry is None or (entry.prefer is None and not entry.pin_refused)
    assert fake.jobs["1"].prefer == ""
    d.cycle()
    assert fake.jobs["1"].prefer == "node02"
    d.revert()
    assert fake.jobs["1"].prefer == ""


def test_prefer_is_not_part_of_the_request_key() -> None:
    job = pending("1", 8, NOW)
    assert request_key(job) == request_key(replace(job, prefer="node02"))


def test_an_unconfirmed_prefer_is_settled_by_reading_slurm(tmp_path: Path) -> None:
    class Killed(BaseException):
        pass

    fake = one_free_node()
    fake.name_features = True
    fake.fail_next("set_prefer", Killed())
    d = make(tmp_path, fake)
    with pytest.raises(Killed):
        d.cycle()
    d.close()
    assert Record.load(tmp_path / "state.json").get("1").unsure == ("prefer",)  # type: ignore[union-attr]
    d2 = make(tmp_path, fake)
    d2.read()  # Slurm shows no Prefer: it was never applied
    entry = d2.record.get("1")
    assert entry is None or entry.prefer is None


def test_check_names_the_pin_kind() -> None:
    soft = PinSupport(prefer=True, node_name_features=True, exact_count=False)
    unnamed = PinSupport(prefer=True, node_name_features=False, exact_count=False)
    assert pin_check(DaemonConfig(), soft).detail.startswith("hard: ReqNodeList=")
    assert pin_check(DaemonConfig(pin="prefer"), soft).detail.startswith("soft: Prefer=")
    fallback = pin_check(DaemonConfig(pin="prefer"), unnamed).detail
    assert fallback.startswith("warning:") and "hard pins (ReqNodeList=) will be used" in fallback
