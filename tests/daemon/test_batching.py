"""Updates that share a value go to Slurm as one ``scontrol update JobId=a,b,c``: settings are
recorded before the list call, a refused call falls back to one update per job, and each
cycle is capped by Slurm calls and seconds, with fewer calls while slurmctld is slow."""

from __future__ import annotations

from pathlib import Path

import fake_slurm  # loaded by conftest.py

from slurmrl.daemon.apply import BATCH, SendLimits, apply_changes, plan_calls
from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.loop import MIN_CALLS, Daemon
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.plan import Change
from slurmrl.daemon.record import Record
from slurmrl.slurm.run import ControllerUnreachable, PermissionDenied

FakeSlurm, pending, running = fake_slurm.FakeSlurm, fake_slurm.pending, fake_slurm.running
NOW = 1_700_000_000.0


def sets(ids: list[str], value: int = 700) -> list[Change]:
    return [Change(j, "site_factor", 0, value, "rank", orig=0) for j in ids]


def queue(n: int) -> FakeSlurm:
    busy = [running(f"r{i}", f"node0{i}", range(8)) for i in range(1, 5)]
    return FakeSlurm(busy + [pending(str(i), 8, NOW - 10_000 + i) for i in range(1, n + 1)], now=NOW)


def make(tmp_path: Path, fake: FakeSlurm, **kw) -> Daemon:
    cfg = DaemonConfig(
        policy="fifo",
        placement="first-fit",
        state_file=str(tmp_path / "state.json"),
        audit_log=str(tmp_path / "audit.jsonl"),
        **kw,
    )
    return Daemon(cfg, fake, metrics=DaemonMetrics(), clock=lambda: NOW, sleep=lambda s: None)


def test_calls_group_by_field_value_and_direction_up_to_the_size() -> None:
    changes = sets(["1", "2", "3"]) + sets(["4"], 500) + [Change("5", "nodes", None, ("node01",), "start")]
    calls = plan_calls([(c,) for c in changes], 2)
    assert [[u[0].job_id for u in call] for call in calls] == [["1", "2"], ["3"], ["4"], ["5"]]
    assert plan_calls([(c,) for c in changes], 1) == [[(c,)] for c in changes]


def test_a_job_never_joins_a_list_call_sent_before_its_earlier_update() -> None:
    note = [Change(j, "admin_comment", "", "slurmrl: sf=700", "audit note") for j in ("1", "2")]
    pin = Change("2", "nodes", None, ("node01",), "start")
    units = [(note[0],), (pin,), (note[1],)]  # job 2's note must follow its pin
    calls = plan_calls(units, 50)
    assert [[(u[0].job_id, u[0].field) for u in call] for call in calls] == [
        [("1", "admin_comment")],
        [("2", "nodes")],
        [("2", "admin_comment")],
    ]


def test_settings_are_recorded_as_unsure_before_the_list_call() -> None:
    fake = queue(3)
    record = Record()
    seen: list[dict] = []
    update_many = fake.update_many

    def spy(ids, name, value):
        seen.append({j: (record.get(j).site_factor, record.get(j).unsure) for j in ids})
        update_many(ids, name, value)

    fake.update_many = spy  # type: ignore[method-assign]
    saved: list[int] = []
    out = apply_changes(
        fake, sets(["1", "2", "3"]), record, NOW, batch=BATCH, persist=lambda: saved.append(1)
    )
    assert seen == [{j: (700, ("site_factor",)) for j in ("1", "2", "3")}]
    assert saved == [1]  # one save for the whole list, before it was sent
    assert (out.calls, out.updates, len(out.sent)) == (1, 3, 3)
    assert all(record.get(j).unsure == () and record.get(j).orig_site_factor == 0 for j in "123")
    assert all(fake.jobs[j].site_factor == 700 for j in "123")


def test_a_refused_list_falls_back_to_one_update_per_job_and_rolls_back_only_the_refused() -> None:
    fake = queue(3)
    record = Record()
    record.update("2", NOW, site_factor=300, orig_site_factor=40)  # set by an earlier cycle
    fake.fail_next("update_many", PermissionDenied("'scontrol update' failed: Access/permission denied"))
    fake.fail_next("set_site_factor", PermissionDenied("denied for job 2"), job_id="2")
    out = apply_changes(fake, sets(["1", "2", "3"]), record, NOW, batch=BATCH)
    assert [c[0] for c in fake.writes()] == ["set_site_factor", "set_site_factor"]
    assert {c.job_id for c in out.sent} == {"1", "3"} and [c.job_id for c, _ in out.failed] == ["2"]
    assert (record.get("2").site_factor, record.get("2").orig_site_factor) == (300, 40)  # as before the list
    assert record.get("2").unsure == ()
    assert record.get("1").site_factor == 700 and record.get("1").unsure == ()


def test_an_unanswered_list_of_settings_stays_recorded_as_unsure() -> None:
    fake = queue(3)
    record = Record()
    fake.fail_next("update_many", ControllerUnreachable("'scontrol update' did not finish within 20 s"))
    out = apply_changes(fake, sets(["1", "2", "3"]), record, NOW, batch=BATCH)
    assert out.stopped_by is not None and out.unsent == 3 and out.sent == ()
    assert all(record.get(j).unsure == ("site_factor",) for j in "123")  # reconciliation settles them


def test_the_call_cap_leaves_the_rest_unsent() -> None:
    fake = queue(6)
    record = Record()
    changes = sets(["1", "2"], 900) + sets(["3", "4"], 600) + sets(["5", "6"], 300)
    out = apply_changes(fake, changes, record, NOW, batch=BATCH, limits=SendLimits(calls=2))
    assert out.capped and (out.calls, out.updates, out.unsent) == (2, 4, 2)
    assert sorted(record.jobs) == ["1", "2", "3", "4"]  # nothing recorded for what was not sent
    out = apply_changes(fake, changes, record, NOW, batch=BATCH, limits=SendLimits(seconds=0.0))
    assert out.calls == 1 and out.unsent == 4  # a spent time budget still lets one call through


def test_ten_thousand_jobs_get_their_order_within_three_cycles(tmp_path: Path) -> None:
    fake = queue(10_000)
    d = make(tmp_path, fake)
    per_cycle = []
    for _ in range(4):
        out = d.cycle()
        per_cycle.append((out.result.calls, len(out.result.sent)))
    assert all(calls <= d.config.max_calls_per_cycle for calls, _ in per_cycle)
    assert per_cycle[3] == (0, 0), per_cycle  # converged: the fourth cycle has nothing to send
    assert sum(calls for calls, _ in per_cycle) < 10_000 // 20
    order = sorted(fake.jobs.values(), key=lambda j: (-(j.site_factor or 0), j.submit_time))
    pend = [j for j in order if j.state == "PENDING"]
    assert [j.submit_time for j in pend] == sorted(j.submit_time for j in pend)  # fifo, band by band
    # one value per band; the last band's (10) is within the tolerance of 0 and left unsent
    assert len({j.site_factor for j in pend}) == d.config.order_bands - 1


def test_slow_updates_halve_the_call_cap_and_fast_ones_restore_it(tmp_path: Path) -> None:
    fake = queue(4)
    d = make(tmp_path, fake, max_calls_per_cycle=40, slow_update_seconds=0.05)
    from slurmrl.daemon.apply import ApplyResult

    def result(seconds: float, updates: int) -> ApplyResult:
        return ApplyResult((), (), (), None, 0, calls=updates, updates=updates, seconds=seconds)

    d._pace(1, result(1.0, 10))  # 0.1 s per update
    assert d.call_cap == 20
    for cycle in range(2, 8):
        d._pace(cycle, result(1.0, 10))
    assert d.call_cap == MIN_CALLS
    d._pace(9, result(0.0, 0))  # nothing sent: nothing learnt
    assert d.call_cap == MIN_CALLS
    for cycle in range(10, 15):
        d._pace(cycle, result(0.01, 10))
    assert d.call_cap == 40
    assert d.metrics.call_cap._value.get() == 40


def test_a_cycle_uses_the_cap_it_was_given(tmp_path: Path) -> None:
    fake = queue(500)
    d = make(tmp_path, fake, order_bands=0, max_calls_per_cycle=30)
    out = d.cycle()
    assert out.result.calls == 30 and out.result.capped and out.result.unsent > 0
    assert d.metrics.deferred._value.get() == out.plan.deferred + out.result.unsent


def test_a_list_of_settings_refused_for_named_ids_sends_only_those_again() -> None:
    fake = queue(4)
    record = Record()
    del fake.jobs["3"]  # started and purged between the read and the send
    out = apply_changes(fake, sets(["1", "2", "3", "4"]), record, NOW, batch=BATCH)
    assert [c[0] for c in fake.writes()] == ["update_many"]  # job 3's single retry: not found
    assert out.vanished == ("3",) and {c.job_id for c in out.sent} == {"1", "2", "4"}
    assert (out.calls, out.updates) == (2, 5)
    assert sorted(record.jobs) == ["1", "2", "4"] and all(record.get(j).unsure == () for j in "124")
