"""Preemption by requeue: what is sent, what is kept, what the policy sees afterwards."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import fake_slurm  # loaded by conftest.py
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.daemon.config import DaemonConfig, ScopeConfig, parse_config
from slurmrl.daemon.loop import Daemon
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.preempt import (
    as_preempted,
    plan_preemptions,
    requeue_jobs,
    settle_preemptions,
)
from slurmrl.daemon.record import Preempted, Record
from slurmrl.daemon.scope import build_view
from slurmrl.errors import ConfigError, PolicyError
from slurmrl.slurm.run import CommandFailed, ControllerUnreachable

FakeSlurm, pending, running = fake_slurm.FakeSlurm, fake_slurm.pending, fake_slurm.running

NOW = 1_700_000_000.0
HOUR = 3600.0
DAY = 24 * HOUR


def long_runs() -> list:
    """Four 8-GPU jobs that started two hours ago and ask 100 hours each: the cluster is full."""
    return [
        replace(running(f"r{i}", f"node0{i}", range(8), submit=NOW - 2 * HOUR - 1), time_limit=100 * HOUR)
        for i in range(1, 5)
    ]


def config(tmp_path: Path, **kw) -> DaemonConfig:
    base = dict(
        policy="srtf-limit",
        placement="first-fit",
        state_file=str(tmp_path / "state.json"),
        audit_log=str(tmp_path / "audit.jsonl"),
        preempt="requeue",
    )
    base.update(kw)
    return DaemonConfig(**base)


def make(tmp_path: Path, fake: FakeSlurm, **kw) -> Daemon:
    return Daemon(
        config(tmp_path, **kw), fake, metrics=DaemonMetrics(), clock=lambda: fake.now, sleep=lambda s: None
    )


def audit(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]


def test_a_preemptive_policy_is_refused_unless_the_config_lets_the_daemon_requeue(tmp_path: Path) -> None:
    fake = FakeSlurm(long_runs(), now=NOW)
    with pytest.raises(PolicyError, match='preempt = "off"'):
        make(tmp_path, fake, preempt="off")
    make(tmp_path, fake).close()


def test_config_checks_the_preempt_keys() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"preempt": "kill", "max_preemptions_per_cycle": 0})
    text = str(err.value)
    assert "preempt: must be one of off, requeue" in text and "max_preemptions_per_cycle" in text
    assert parse_config({"preempt": "requeue"}).max_preemptions_per_cycle == 4


def requeued_one(tmp_path: Path) -> tuple[FakeSlurm, Daemon, str]:
    """A short job behind four long runs: the daemon's first cycle requeues one of them."""
    fake = FakeSlurm([*long_runs(), pending("p", 8, NOW - 60, time_limit=HOUR)], now=NOW)
    d = make(tmp_path, fake)
    d.cycle()
    return fake, d, fake.writes("requeue")[0][1]


def test_a_short_job_behind_long_ones_gets_a_requeue_and_the_freed_node(tmp_path: Path) -> None:
    fake = FakeSlurm([*long_runs(), pending("p", 8, NOW - 60, time_limit=HOUR)], now=NOW)
    d = make(tmp_path, fake)
    d.cycle()
    requeued = [jid for _, jid, _ in fake.writes("requeue")]
    assert len(requeued) == 1
    victim = requeued[0]
    assert fake.jobs["p"].required_nodes == (f"node0{victim[1]}",)  # pinned where the requeue frees GPUs
    assert fake.writes().index(("requeue", victim, None)) == 0  # before the pin
    entry = Record.load(tmp_path / "state.json").preempted[victim]
    assert (entry.count, entry.stopping, entry.submit_time) == (1, None, NOW - 2 * HOUR - 1)
    assert entry.service == pytest.approx(8 * 2 * HOUR)
    assert [a["kind"] for a in audit(tmp_path) if a["kind"].startswith("preempt")] == ["preempt"]
    d.close()


def test_the_view_shows_a_requeued_job_as_the_simulator_shows_a_preempted_one(tmp_path: Path) -> None:
    fake, d, victim = requeued_one(tmp_path)
    assert fake.jobs[victim].submit_time == NOW  # Slurm's own field is reset
    fake.now = NOW + 180  # past the begin time Slurm gives a requeued job
    fake.jobs[victim] = replace(fake.jobs[victim], reason="Priority")
    snapshot, _ = d.read()
    seen = {j.job_id: j for j in d.view(snapshot, d.scope(snapshot)).pending}[victim]
    assert seen.submit_time == NOW - 2 * HOUR - 1
    assert seen.attained_service == pytest.approx(8 * 2 * HOUR)
    assert seen.preemptions == 1
    d.close()


def test_a_requeued_job_that_ends_is_reported_with_every_run(tmp_path: Path) -> None:
    """History-based policies learn the run time the simulator would report: earlier runs included."""
    fake, d, victim = requeued_one(tmp_path)
    node = f"node0{victim.removeprefix('r')}"  # where it ran before (long_runs)
    again = replace(running(victim, node, range(8), submit=NOW), start_time=NOW + 600, time_limit=100 * HOUR)
    fake.now, fake.jobs[victim] = NOW + 900, again
    snapshot, _ = d.read()
    d.view(snapshot, d.scope(snapshot))  # seen running again
    fake.now, fake.jobs[victim] = NOW + 1200, replace(again, state="COMPLETED", end_time=NOW + 1000)
    snapshot, _ = d.read()
    done = {f.job.job_id: f for f in d.view(snapshot, d.scope(snapshot)).finished}[victim]
    assert done.run_time == pytest.approx(400.0 + 2 * HOUR)
    d.close()


def test_a_restarted_daemon_reads_back_a_requeued_job_that_ended_with_every_run(tmp_path: Path) -> None:
    """The job ran again and ended while no daemon ran; accounting holds its last run only."""
    fake, d, victim = requeued_one(tmp_path)
    d.close()
    last = replace(fake.jobs.pop(victim), state="COMPLETED", start_time=NOW + 600, end_time=NOW + 1000)
    fake.ended, fake.now = [last], NOW + 1200
    again = make(tmp_path, fake)
    snapshot, _ = again.read()
    done = {f.job.job_id: f for f in again.view(snapshot, again.scope(snapshot)).finished}[victim]
    assert done.run_time == pytest.approx(400.0 + 2 * HOUR)
    assert done.job.submit_time == NOW - 2 * HOUR - 1  # as first submitted
    assert again.record.preempted[victim].ended == NOW + 1200  # purged from the queue: kept
    again.close()


def test_at_most_the_cap_per_cycle_and_the_rest_said(tmp_path: Path) -> None:
    shorts = [pending(f"p{i}", 8, NOW - 60 + i, time_limit=HOUR) for i in range(3)]
    fake = FakeSlurm([*long_runs(), *shorts], now=NOW)
    d = make(tmp_path, fake, max_preemptions_per_cycle=2)
    d.cycle()
    assert len(fake.writes("requeue")) == 2
    deferred = [a for a in audit(tmp_path) if a["kind"] == "preempt_deferred"]
    assert len(deferred) == 1 and len(deferred[0]["jobs"]) == 1
    d.close()


def test_a_dry_run_requeues_nothing_and_says_what_it_would(tmp_path: Path) -> None:
    fake = FakeSlurm([*long_runs(), pending("p", 8, NOW - 60, time_limit=HOUR)], now=NOW)
    d = make(tmp_path, fake, dry_run=True)
    d.cycle()
    assert fake.writes() == []
    assert [a["dry_run"] for a in audit(tmp_path) if a["kind"] == "preempt"] == [True]
    d.close()


def test_a_refused_requeue_is_said_once_and_not_asked_again_for_that_run(tmp_path: Path) -> None:
    fake = FakeSlurm([*long_runs(), pending("p", 8, NOW - 60, time_limit=HOUR)], now=NOW)
    d = make(tmp_path, fake, max_preemptions_per_cycle=1)
    refusal = CommandFailed("'scontrol requeue' failed (exit 1): Only batch jobs are accepted or processed")
    fake.fail_next("requeue", refusal)
    d.cycle()
    assert d.record.preempted == {}  # nothing was stopped: nothing kept
    d.cycle()
    d.cycle()
    assert fake.writes("requeue") == []  # the same run is not asked again
    events = [a for a in audit(tmp_path) if a["kind"] in ("preempt_error", "preempt_refused")]
    assert [a["kind"] for a in events] == ["preempt_error", "preempt_refused"]
    assert "Only batch jobs" in events[1]["reason"]
    d.close()


def test_jobs_outside_the_scope_or_not_running_are_refused_with_a_reason() -> None:
    jobs = {j.job_id: j for j in [*long_runs(), pending("p", 8, NOW)]}
    jobs["r2"] = replace(jobs["r2"], partition="debug")
    jobs["c"] = replace(jobs["r1"], job_id="c", state="COMPLETING")
    asked = ["r1", "r2", "p", "gone", "c", "r3", "r4"]
    plan = plan_preemptions(asked, jobs, ScopeConfig(partitions=("gpu",)), 2, {})
    assert [j.job_id for j in plan.send] == ["r1", "r3"]
    assert plan.deferred == ("r4",)
    assert dict(plan.refused) == {
        "r2": "outside the daemon's scope (partition, QOS, account or opt-out)",
        "p": "not running",
        "gone": "not running",
        "c": "completing",
    }


def test_each_intent_is_on_disk_before_its_requeue_is_sent(tmp_path: Path) -> None:
    fake = FakeSlurm(long_runs(), now=NOW)
    record = Record()
    seen: list[tuple[str, float | None]] = []
    sent = fake.requeue

    def watch(job_id: str) -> None:
        saved = Record.load(tmp_path / "state.json").preempted[job_id]
        seen.append((job_id, saved.stopping))
        sent(job_id)

    fake.requeue = watch  # type: ignore[method-assign]
    jobs = [fake.jobs["r1"], fake.jobs["r2"]]
    out = requeue_jobs(fake, jobs, record.preempted, NOW, lambda: record.save(tmp_path / "state.json"))
    assert [r.error for r in out] == [None, None]
    assert seen == [("r1", NOW - 2 * HOUR), ("r2", NOW - 2 * HOUR)]
    assert Record.load(tmp_path / "state.json").preempted["r2"].count == 1


def test_an_unanswered_requeue_stays_in_flight_until_a_read_settles_it() -> None:
    fake = FakeSlurm(long_runs(), now=NOW)
    ledger: dict[str, Preempted] = {}
    fake.fail_next("requeue", ControllerUnreachable("'scontrol requeue r1' did not finish within 30 s"))
    out = requeue_jobs(fake, [fake.jobs["r1"], fake.jobs["r2"]], ledger, NOW, lambda: None)
    assert [(r.job_id, r.settled) for r in out] == [("r1", False)]  # r2 not tried
    assert ledger["r1"].stopping == NOW - 2 * HOUR and ledger["r1"].count == 0
    jobs = dict(fake.jobs)
    assert settle_preemptions(ledger, jobs, now=NOW, keep_s=DAY) == [
        f"job r1: requeue not done (still on the run started at {NOW - 2 * HOUR:.0f})"
    ]
    assert "r1" not in ledger  # nothing was ever stopped
    ledger["r1"] = Preempted.stopping_now(fake.jobs["r1"], None, NOW)
    fake.requeue("r1")  # it did reach slurmctld
    lines = settle_preemptions(ledger, dict(fake.jobs), now=NOW, keep_s=DAY)
    assert lines == ["job r1: requeue confirmed (restart count 1)"]
    assert ledger["r1"].count == 1 and ledger["r1"].service == pytest.approx(8 * 2 * HOUR)


def test_entries_of_ended_jobs_are_kept_marked_for_the_history_then_forgotten() -> None:
    """Accounting keeps a requeued job's last run only: its entry outlives it by ``keep_s``."""
    fake = FakeSlurm(long_runs(), now=NOW)
    ledger = {
        "r1": Preempted("r1", 5.0, 100.0, 1),
        "r2": Preempted("r2", 6.0, 50.0, 1),
        "x": Preempted("x", 1.0, 80.0, 2),  # purged from the queue: ended at the read
        "y": Preempted("y", 1.0),  # never stopped: nothing to keep
    }
    jobs = dict(fake.jobs)
    jobs["r2"] = replace(jobs["r2"], state="COMPLETED", end_time=NOW - 60.0)
    assert settle_preemptions(ledger, jobs, now=NOW, keep_s=DAY) == []
    assert {k: e.ended for k, e in ledger.items()} == {"r1": None, "r2": NOW - 60.0, "x": NOW}
    assert ledger["r2"].service == 50.0 and ledger["r2"].count == 1
    settle_preemptions(ledger, jobs, now=NOW + DAY - 30.0, keep_s=DAY)
    assert set(ledger) == {"r1", "x"}
    settle_preemptions(ledger, jobs, now=NOW + DAY + 1.0, keep_s=DAY)
    assert set(ledger) == {"r1"}
    ledger["r2"] = Preempted("r2", 6.0, 50.0, 1)
    settle_preemptions(ledger, jobs, now=NOW, keep_s=0.0)  # history_days = 0: nothing to read back
    assert set(ledger) == {"r1"}


def test_an_ended_entry_is_no_job_in_the_view_and_no_base_for_a_new_requeue() -> None:
    fake = FakeSlurm(long_runs(), now=NOW)
    old = Preempted("r1", 5.0, 100.0, 1, ended=NOW - HOUR)  # a job id Slurm gave again
    view = build_view(fake.snapshot(), {}, ScopeConfig())
    shown = as_preempted(view, {"r1": old})
    assert "r1" in {j.job_id for j in view.running} and shown.running == view.running
    fresh = Preempted.stopping_now(fake.jobs["r1"], old, NOW)
    assert (fresh.count, fresh.service, fresh.ended) == (0, 0.0, None)


def test_a_restart_keeps_what_earlier_requeues_added_up(tmp_path: Path) -> None:
    fake = FakeSlurm(long_runs(), now=NOW)
    record = Record(preempted={"r1": Preempted("r1", 5.0, service=100.0, count=1)})
    requeue_jobs(fake, [fake.jobs["r1"]], record.preempted, NOW, lambda: record.save(tmp_path / "s.json"))
    again = Record.load(tmp_path / "s.json").preempted["r1"]
    assert (again.submit_time, again.count) == (5.0, 2)
    assert again.service == pytest.approx(100.0 + 8 * 2 * HOUR)


def test_as_preempted_leaves_other_jobs_and_unsettled_entries_alone() -> None:
    fake = FakeSlurm([*long_runs(), pending("p", 8, NOW)], now=NOW)
    view = fake.snapshot().to_view()
    ledger = {"r1": Preempted("r1", 5.0, 10.0, 2), "r2": Preempted("r2", 6.0, stopping=NOW)}
    shown = {j.job_id: j for j in as_preempted(view, ledger).running}
    assert (shown["r1"].submit_time, shown["r1"].attained_service, shown["r1"].preemptions) == (5.0, 10.0, 2)
    assert shown["r2"] == {j.job_id: j for j in view.running}["r2"]
    assert as_preempted(view, {}) is view


def test_a_record_with_a_malformed_preempted_entry_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"format": 1, "cycle": 1, "jobs": {}, "preempted": {"7": {"job_id": "7"}}}))
    with pytest.raises(ConfigError, match="malformed"):
        Record.load(path)
    bad = {"job_id": "7", "submit_time": "yesterday", "count": 1}
    path.write_text(json.dumps({"format": 1, "cycle": 1, "jobs": {}, "preempted": {"7": bad}}))
    with pytest.raises(ConfigError, match="malformed"):
        Record.load(path)
    path.write_text(json.dumps({"format": 1, "cycle": 1, "jobs": {}, "preempted": []}))
    with pytest.raises(ConfigError, match="not a slurmrl daemon record"):
        Record.load(path)


def test_a_trained_checkpoint_led_by_a_preemptive_heuristic_runs_with_requeues(tmp_path: Path) -> None:
    folder = Path(__file__).resolve().parents[2] / "policies" / "topdrl-philly" / "led-seeds" / "1"
    fake = FakeSlurm([*long_runs(), pending("p", 8, NOW - 60, time_limit=HOUR)], now=NOW)
    with pytest.raises(PolicyError, match='preempt = "off"'):
        make(tmp_path, fake, policy=str(folder), placement="topology", preempt="off")
    d = make(tmp_path, fake, policy=str(folder), placement="topology")
    d.cycle()
    (victim,) = [jid for _, jid, _ in fake.writes("requeue")]
    assert fake.jobs["p"].required_nodes == (f"node0{victim[1]}",)
    d.close()


def test_daemon_check_says_whether_stopped_jobs_can_be_requeued(tmp_path: Path) -> None:
    from slurmrl.daemon.checks import preempt_check

    off = preempt_check(config(tmp_path, preempt="off"), {"JobRequeue": "1"})
    assert off.ok and "refused" in off.detail
    on = preempt_check(config(tmp_path, max_preemptions_per_cycle=2), {"JobRequeue": "1"})
    assert on.ok and "at most 2 a cycle" in on.detail and "warning" not in on.detail
    opt_in = preempt_check(config(tmp_path), {"JobRequeue": "0"})
    assert opt_in.detail.startswith("warning:") and "--requeue" in opt_in.detail


OUTCOMES = ("ok", "refused", "unanswered", "lost")  # lost: sent, taken, but the answer never came


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3"]), st.sampled_from(OUTCOMES)), max_size=12))
def test_whatever_slurm_answers_the_record_counts_each_requeue_that_happened_once(steps) -> None:
    """Requeues that Slurm took, answered or not, are each counted once after the next read;
    the GPU-seconds kept only grow; nothing is kept of a job that was never stopped."""
    fake = FakeSlurm(long_runs(), now=NOW)
    ledger: dict[str, Preempted] = {}
    happened = dict.fromkeys(fake.jobs, 0)
    for jid, outcome in steps:
        fake.now += 600
        job = fake.jobs[jid]
        if not job.is_running:  # the requeued job runs again before the next stop
            fake.start(jid, job.nodes[0] if job.nodes else f"node0{jid[1]}", range(8))
        if outcome == "refused":
            fake.fail_next("requeue", CommandFailed("'scontrol requeue' failed (exit 1): disabled"))
        elif outcome == "unanswered":
            fake.fail_next("requeue", ControllerUnreachable("no answer"))
        taken = fake.requeue
        if outcome == "lost":  # slurmctld acts, the command times out

            def lose(job_id: str, taken=taken) -> None:
                taken(job_id)
                raise ControllerUnreachable("timed out")

            fake.requeue = lose  # type: ignore[method-assign]
        before = ledger.get(jid)
        requeue_jobs(fake, [fake.jobs[jid]], ledger, fake.now, lambda: None)
        fake.requeue = taken  # type: ignore[method-assign]
        happened[jid] += outcome in ("ok", "lost")
        settle_preemptions(ledger, dict(fake.jobs), now=fake.now, keep_s=DAY)  # the next cycle's read
        after = ledger.get(jid)
        assert (after.count if after else 0) == happened[jid]
        assert after is None or after.stopping is None
        assert (after.service if after else 0.0) >= (before.service if before else 0.0)
    for jid, n in happened.items():
        assert (jid in ledger) == (n > 0)
