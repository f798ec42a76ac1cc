"""Crash safety, locking, signals, privileges and original values, against a fake Slurm."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import replace
from pathlib import Path

import fake_slurm  # loaded by conftest.py
import pytest

from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.factors import parse_sprio
from slurmrl.daemon.lock import DaemonLocked, StateLock
from slurmrl.daemon.loop import Daemon
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.notify import Notifier
from slurmrl.daemon.record import Record
from slurmrl.errors import PolicyError, SlurmrlError
from slurmrl.slurm.run import ControllerUnreachable, PermissionDenied, SlurmError

FakeSlurm, pending, running = fake_slurm.FakeSlurm, fake_slurm.pending, fake_slurm.running

NOW = 1_700_000_000.0


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs, no handler sees it."""


def config(tmp_path: Path, **kw) -> DaemonConfig:
    base = dict(
        policy="fifo",
        placement="first-fit",
        state_file=str(tmp_path / "state.json"),
        audit_log=str(tmp_path / "audit.jsonl"),
        backoff_initial=1.0,
        backoff_max=8.0,
    )
    base.update(kw)
    return DaemonConfig(**base)


def busy() -> list:
    return [running(f"r{i}", f"node0{i}", range(8)) for i in range(1, 5)]


def make(tmp_path: Path, fake: FakeSlurm, **kw) -> Daemon:
    return Daemon(
        config(tmp_path, **kw), fake, metrics=DaemonMetrics(), clock=lambda: NOW, sleep=lambda s: None
    )


def test_sprio_output_gives_site_factor_nice_and_explicit_priorities() -> None:
    text = "7|4000|0|0|0|0|0|0|0|0\n8|1126|44|30|0|0|0|127|1000|0\nbad line\n"
    f = parse_sprio(text)
    assert f["7"].explicit_priority and f["7"].site_factor == 0
    assert (f["8"].site_factor, f["8"].nice, f["8"].explicit_priority) == (44, 30, False)
    assert set(f) == {"7", "8"}


def test_every_intent_is_on_disk_before_slurm_sees_it(tmp_path: Path) -> None:
    fake = FakeSlurm(busy() + [pending("1", 8, NOW - 9), pending("2", 8, NOW - 5), pending("3", 8, NOW)])
    state = tmp_path / "state.json"
    seen: list[bool] = []
    inner = fake._set

    def spy(method, job_id, value, **fields):
        saved = Record.load(state).jobs.get(job_id)
        field = {"set_site_factor": "site_factor", "set_admin_comment": "admin_comment"}[method]
        seen.append(saved is not None and getattr(saved, field) == value and field in saved.unsure)
        inner(method, job_id, value, **fields)

    fake._set = spy
    make(tmp_path, fake).cycle()
    assert len(seen) >= 4 and all(seen)
    assert all(not e.unsure for e in Record.load(state).jobs.values())  # answered: all confirmed


@pytest.mark.parametrize("kill_at", [0, 1, 2, 3])
def test_sigkill_at_any_point_of_a_batch_leaves_no_orphan_after_revert(tmp_path: Path, kill_at: int) -> None:
    jobs = [
        running("r1", "node01", range(8)),
        running("r3", "node03", range(8)),
        running("r4", "node04", range(8)),
    ]
    fake = FakeSlurm(jobs + [pending("1", 8, NOW - 9), pending("2", 8, NOW - 5), pending("3", 8, NOW)])
    inner, calls = fake._set, [0]

    def dying(method, job_id, value, **fields):
        if calls[0] == kill_at:  # killed after Slurm applied it, before the answer came back
            inner(method, job_id, value, **fields)
            raise Killed
        calls[0] += 1
        inner(method, job_id, value, **fields)

    fake._set = dying
    d = make(tmp_path, fake, policy="fifo-backfill", placement="topology")
    with pytest.raises(Killed):
        d.cycle()
    d.close()  # the kernel drops the flock of a killed process
    fake._set = inner
    assert any(j.site_factor or j.required_nodes for j in fake.jobs.values())
    fresh = make(tmp_path, fake, policy="fifo-backfill", placement="topology")
    out = fresh.revert()
    assert out.remaining == 0
    for j in fake.jobs.values():
        assert (j.site_factor or 0, j.required_nodes, j.admin_comment) == (0, (), "")


def test_an_intent_slurm_never_took_leaves_the_record_on_restart(tmp_path: Path) -> None:
    fake = FakeSlurm(busy() + [pending("1", 8, NOW - 9), pending("2", 8, NOW)])

    def killed_before_sending(*a, **k):
        raise Killed

    fake.set_site_factor = killed_before_sending  # type: ignore[method-assign]
    d = make(tmp_path, fake)
    with pytest.raises(Killed):
        d.cycle()
    d.close()
    assert Record.load(tmp_path / "state.json").jobs["1"].unsure == ("site_factor",)
    del fake.set_site_factor
    fresh = make(tmp_path, fake)
    fresh.cycle()  # reconciles (not applied -> dropped), then sends it for real
    assert fake.jobs["1"].site_factor == 1000
    assert Record.load(tmp_path / "state.json").jobs["1"].unsure == ()


def test_a_timeout_is_unknown_and_settled_by_reading_back(tmp_path: Path) -> None:
    fake = FakeSlurm(busy() + [pending("1", 8, NOW - 9), pending("2", 8, NOW)])
    inner = fake._set

    def applied_but_timed_out(method, job_id, value, **fields):
        inner(method, job_id, value, **fields)
        raise ControllerUnreachable("'scontrol update' did not finish within 30 s")

    fake._set = applied_but_timed_out
    d = make(tmp_path, fake)
    out = d.cycle()
    assert out.error is not None
    assert d.record.jobs["1"].site_factor == 1000 and d.record.jobs["1"].unsure == ("site_factor",)
    fake._set = inner
    d.cycle()
    assert d.record.jobs["1"].unsure == () and d.record.jobs["1"].site_factor == 1000
    assert d.revert().remaining == 0 and fake.jobs["1"].site_factor == 0


def test_a_lost_state_file_is_recovered_from_the_notes(tmp_path: Path) -> None:
    fake = FakeSlurm(busy() + [pending("1", 8, NOW - 9), pending("2", 8, NOW)])
    fake.jobs["1"] = replace(fake.jobs["1"], admin_comment="ticket 3")
    d = make(tmp_path, fake)
    d.cycle()
    d.close()
    (tmp_path / "state.json").unlink()
    fresh = make(tmp_path, fake)
    assert fresh.revert().remaining == 0
    assert (fake.jobs["1"].site_factor, fake.jobs["1"].admin_comment) == (0, "ticket 3")


def test_a_second_daemon_on_the_same_state_file_is_refused_naming_the_pid(tmp_path: Path) -> None:
    fake = FakeSlurm(busy())
    d = make(tmp_path, fake)
    with pytest.raises(DaemonLocked, match=f"pid {os.getpid()}"):
        make(tmp_path, fake)
    make(tmp_path, fake, dry_run=True)  # a dry run writes nothing and takes no lock
    d.close()
    make(tmp_path, fake).close()


def test_a_state_file_where_none_can_be_written_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "plain-file").write_text("")
    with pytest.raises(
        SlurmrlError, match="cannot create the state file's lock .*plain-file/state.json.lock"
    ):
        StateLock(tmp_path / "plain-file" / "state.json").acquire()


def test_operator_only_skips_notes_once_and_keeps_ordering(tmp_path: Path) -> None:
    fake = FakeSlurm(busy() + [pending(str(i), 8, NOW - 10 + i) for i in range(1, 5)])
    fake.fail_next("set_admin_comment", PermissionDenied("Access/permission denied"))
    d = make(tmp_path, fake)
    out = d.cycle()
    assert out.error is None and not d.notes
    assert [fake.jobs[str(i)].site_factor or 0 for i in range(1, 5)] == [1000, 667, 333, 0]
    assert fake.writes("set_admin_comment") == []
    fake.jobs["9"] = pending("9", 8, NOW - 100)  # a new job reorders the queue: still no notes
    d.cycle()
    assert fake.jobs["9"].site_factor == 1000 and fake.writes("set_admin_comment") == []
    assert [
        r
        for r in map(json.loads, (tmp_path / "audit.jsonl").read_text().splitlines())
        if r["kind"] == "notes_off"
    ]


def test_a_refused_job_does_not_stop_the_others(tmp_path: Path) -> None:
    fake = FakeSlurm(busy() + [pending(str(i), 8, NOW - 10 + i) for i in range(1, 4)])
    fake.fail_next("set_site_factor", PermissionDenied("Access/permission denied"), job_id="1")
    d = make(tmp_path, fake)
    out = d.cycle()
    assert out.error is None and len(out.result.failed) == 1
    assert fake.jobs["2"].site_factor == 500 and "1" not in d.record.jobs  # intent rolled back


def test_an_admins_site_factor_is_restored(tmp_path: Path) -> None:
    fake = FakeSlurm(busy() + [pending("1", 8, NOW - 9), pending("2", 8, NOW)])
    fake.jobs["2"] = replace(fake.jobs["2"], site_factor=None)  # squeue shows none ...
    fake.jobs["1"] = replace(fake.jobs["1"], site_factor=None)
    real = fake.priority_factors

    def admin_set():  # ... sprio shows the admin's 55 on job 1
        out = real()
        out["1"] = replace(out["1"], site_factor=out["1"].site_factor or 55)
        return out

    fake.priority_factors = admin_set  # type: ignore[method-assign]
    d = make(tmp_path, fake)
    d.cycle()
    assert d.record.jobs["1"].orig_site_factor == 55
    d.revert()
    assert fake.writes("set_site_factor")[-2:] in (
        [("set_site_factor", "1", 55), ("set_site_factor", "2", 0)],
        [("set_site_factor", "2", 0), ("set_site_factor", "1", 55)],
    ) or ("set_site_factor", "1", 55) in fake.writes("set_site_factor")


def test_priority_mode_restores_nice_and_an_admins_explicit_priority(tmp_path: Path) -> None:
    fake = FakeSlurm(busy() + [pending("1", 8, NOW - 9, priority=7000), pending("2", 8, NOW)])
    fake.explicit.add("1")
    fake.nice["2"] = 30
    d = make(tmp_path, fake, mode="priority", max_site_factor=100, priority_base=10_000)
    d.cycle()
    assert fake.jobs["1"].priority == 10_100
    d.revert()
    assert fake.jobs["1"].priority == 7000  # the admin's value, not multifactor's
    assert ("reset_priority", "2", None) in fake.writes() and fake.nice["2"] == 30


def test_a_pin_slurm_marks_badconstraints_is_removed_once_and_not_set_again(tmp_path: Path) -> None:
    jobs = [
        running("r1", "node01", range(8)),
        running("r3", "node03", range(8)),
        running("r4", "node04", range(8)),
    ]
    fake = FakeSlurm(jobs + [pending("1", 8, NOW - 9)])
    d = make(tmp_path, fake, policy="fifo-backfill", placement="topology")
    d.cycle()
    assert fake.jobs["1"].required_nodes == ("node02",)
    fake.jobs["1"] = replace(fake.jobs["1"], reason="BadConstraints", priority=0)
    d.cycle()
    assert fake.jobs["1"].required_nodes == ()
    fake.jobs["1"] = replace(fake.jobs["1"], reason="Priority", priority=1000)
    for _ in range(3):
        d.cycle()
    assert [c for c in fake.writes("set_required_nodes")] == [
        ("set_required_nodes", "1", ("node02",)),
        ("set_required_nodes", "1", None),
    ]
    fake.jobs["1"] = replace(fake.jobs["1"], time_limit=600.0)  # the user changed the request
    d.cycle()
    assert fake.jobs["1"].required_nodes == ("node02",)


def test_an_update_error_on_a_pin_blocks_it_until_the_request_changes(tmp_path: Path) -> None:
    jobs = [
        running("r1", "node01", range(8)),
        running("r3", "node03", range(8)),
        running("r4", "node04", range(8)),
    ]
    fake = FakeSlurm(jobs + [pending("1", 8, NOW - 9)])
    fake.fail_next("set_required_nodes", SlurmError("Requested node configuration is not available"))
    d = make(tmp_path, fake, policy="fifo-backfill", placement="topology", placement_hold=1e-9)
    d.cycle()
    d.cycle()
    assert fake.writes("set_required_nodes") == [] and d.record.jobs["1"].pin_refused


def test_sighup_reloads_a_good_config_and_keeps_the_old_on_error(tmp_path: Path) -> None:
    path = tmp_path / "d.toml"
    path.write_text(
        f'policy = "fifo"\nstate_file = "{tmp_path}/state.json"\naudit_log = "{tmp_path}/a.jsonl"\n'
    )
    from slurmrl.daemon.config import load_config

    fake = FakeSlurm(busy() + [pending("1", 8, NOW)])
    d = Daemon(load_config(path), fake, metrics=DaemonMetrics(), sleep=lambda s: None)
    path.write_text(path.read_text() + "interval = 7\nmax_site_factor = 50\n")
    d.request_reload()
    assert d.reload() and d.config.interval == 7 and d.config.max_site_factor == 50
    path.write_text(path.read_text() + "intervall = 3\n")
    assert not d.reload() and d.config.interval == 7
    path.write_text(f'policy = "tiresias"\nstate_file = "{tmp_path}/state.json"\n')
    assert not d.reload() and d.config.policy == "fifo"
    d.cycle()
    assert fake.jobs["1"].site_factor == 50
    d.close()


def test_preemptive_policies_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="preempts running jobs"):
        make(tmp_path, FakeSlurm(busy()), policy="tiresias", placement=None)


def test_wake_at_brings_the_next_cycle_forward(tmp_path: Path) -> None:
    d = make(tmp_path, FakeSlurm(busy()), interval=30.0)
    assert d.next_delay(True, None) == 30.0
    assert d.next_delay(True, NOW + 12) == 12.0
    assert d.next_delay(True, NOW - 5) == 1.0  # never a busy loop
    assert d.next_delay(True, NOW + 100) == 30.0


def test_sd_notify_sends_datagrams_to_the_notify_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(path)
        n = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000"})
        assert n.send("READY=1") and n.watchdog_every == 1.0
        n.watchdog()
        assert server.recv(64) == b"READY=1" and server.recv(64) == b"WATCHDOG=1"
    assert not Notifier({}).send("READY=1")


def test_metrics_show_info_pins_and_slurm_calls_by_command(tmp_path: Path) -> None:
    from prometheus_client import generate_latest

    from slurmrl.slurm.run import STATS, CommandStats

    STATS.by_command.setdefault("scontrol update", CommandStats())
    jobs = [
        running("r1", "node01", range(8)),
        running("r3", "node03", range(8)),
        running("r4", "node04", range(8)),
    ]
    d = make(
        tmp_path, FakeSlurm(jobs + [pending("1", 8, NOW - 9)]), policy="fifo-backfill", placement="topology"
    )
    d._set_info()
    d.cycle()
    text = generate_latest(d.metrics.registry).decode()
    assert (
        'slurmrl_info{dry_run="false",mode="site_factor",policy="fifo-backfill+topology",slurm_version="22.05.8"} 1.0'
        in text
    )
    assert "slurmrl_pins_active 1.0" in text
    assert 'slurmrl_slurm_calls_total{command="scontrol update"}' in text
