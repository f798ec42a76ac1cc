"""The daemon's cycle against a fake Slurm: ordering, placement, scope, safety, errors, revert."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import replace
from pathlib import Path

import fake_slurm  # loaded by conftest.py
import pytest

from slurmrl.daemon.config import DaemonConfig, ScopeConfig
from slurmrl.daemon.loop import Daemon
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.record import Record
from slurmrl.errors import PolicyError
from slurmrl.policy.registry import make_policy
from slurmrl.slurm.run import ControllerUnreachable, JobNotFound, RateLimited

FakeSlurm, pending, running = fake_slurm.FakeSlurm, fake_slurm.pending, fake_slurm.running

NOW = 1_700_000_000.0


def config(tmp_path: Path, **kw) -> DaemonConfig:
    base = dict(
        policy="fifo",
        placement="first-fit",
        state_file=str(tmp_path / "state.json"),
        audit_log=str(tmp_path / "audit.jsonl"),
        max_site_factor=1000,
        backoff_initial=1.0,
        backoff_max=8.0,
    )
    base.update(kw)
    return DaemonConfig(**base)


def full_cluster() -> list:
    """Every GPU busy: the policy can rank but start nothing."""
    return [running(f"r{i}", f"node0{i}", range(8)) for i in range(1, 5)]


def make(tmp_path: Path, jobs, **kw) -> tuple[Daemon, FakeSlurm]:
    fake = FakeSlurm(jobs, now=NOW)
    clock = [NOW]
    d = Daemon(
        config(tmp_path, **kw), fake, metrics=DaemonMetrics(), clock=lambda: clock[0], sleep=lambda s: None
    )
    d._clock_cell = clock  # type: ignore[attr-defined]
    return d, fake


def audit(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]


def test_ranks_become_bounded_site_factors_and_repeat_cycles_send_nothing(tmp_path: Path) -> None:
    jobs = full_cluster() + [
        pending("11", 8, NOW - 300),
        pending("12", 8, NOW - 200),
        pending("13", 8, NOW - 100),
    ]
    d, fake = make(tmp_path, jobs)
    out = d.cycle()
    assert out.error is None and out.plan.ranked == 3
    assert fake.writes("set_site_factor") == [("set_site_factor", "11", 1000), ("set_site_factor", "12", 500)]
    assert fake.jobs["11"].admin_comment == "slurmrl: sf=1000 policy=fifo+first-fit"
    assert not fake.writes("set_required_nodes")  # nothing can start: no pinning
    n = len(fake.writes())
    d.cycle()
    assert len(fake.writes()) == n  # idempotent: the record already says so
    saved = Record.load(tmp_path / "state.json")
    assert saved.jobs["12"].site_factor == 500 and saved.jobs["12"].orig_site_factor == 0
    assert saved.cycle == 2


def test_topology_pins_a_four_gpu_job_to_an_intact_nvlink_island(tmp_path: Path) -> None:
    # node01: GPUs 2-5 free (two half islands); node02: 4-7 free (one whole island); rack2 full.
    jobs = [
        running("r1", "node01", [0, 1, 6, 7]),
        running("r2", "node02", [0, 1, 2, 3]),
        running("r3", "node03", range(8)),
        running("r4", "node04", range(8)),
        pending("20", 4, NOW - 60),
    ]
    d, fake = make(tmp_path, jobs, policy="fifo-backfill", placement="topology")
    d.cycle()
    assert fake.writes("set_required_nodes") == [("set_required_nodes", "20", ("node02",))]
    assert "nodes=node02" in fake.jobs["20"].admin_comment
    # first-fit, as Slurm's own choice would, takes node01 and splits the islands
    d2, fake2 = make(tmp_path / "ff", jobs, policy="fifo-backfill", placement="first-fit")
    d2.cycle()
    assert fake2.writes("set_required_nodes") == [("set_required_nodes", "20", ("node01",))]


def test_placement_is_cleared_when_the_decision_changes_and_after_the_hold(tmp_path: Path) -> None:
    jobs = [
        running("r1", "node01", range(8)),
        running("r3", "node03", range(8)),
        running("r4", "node04", range(8)),
        pending("30", 8, NOW - 60),
    ]
    d, fake = make(tmp_path, jobs, policy="fifo-backfill", placement="topology", placement_hold=100.0)
    d.cycle()
    assert fake.jobs["30"].required_nodes == ("node02",)
    # node02 gets taken by someone else: the job can no longer start now, the pin goes
    fake.jobs["r2"] = running("r2", "node02", range(8))
    d.cycle()
    assert fake.writes("set_required_nodes")[-1] == ("set_required_nodes", "30", None)
    assert fake.jobs["30"].admin_comment == "slurmrl: sf=1000 policy=fifo-backfill+topology"
    # free again: pinned again; then it waits past placement_hold without starting
    del fake.jobs["r2"]
    d.cycle()
    assert fake.jobs["30"].required_nodes == ("node02",)
    d._clock_cell[0] = NOW + 101  # type: ignore[attr-defined]
    d.cycle()
    assert fake.jobs["30"].required_nodes == ()
    d.cycle()  # blocked for another placement_hold: not pinned again at once
    assert fake.jobs["30"].required_nodes == ()
    d._clock_cell[0] = NOW + 250  # type: ignore[attr-defined]
    d.cycle()
    assert fake.jobs["30"].required_nodes == ("node02",)


def test_pinning_needs_the_jobs_exact_node_count_and_respects_user_nodelists(tmp_path: Path) -> None:
    jobs = [pending("40", 8, NOW - 90, nodes=2), pending("41", 2, NOW - 80, required_nodes=("node04",))]
    d, fake = make(tmp_path, jobs, policy="fifo-backfill", placement="topology")
    out = d.cycle()
    pins = dict((jid, v) for _, jid, v in fake.writes("set_required_nodes"))
    assert "41" not in pins  # the user's own -w stays
    assert "40" not in pins and any("40" in note for note in out.plan.notes)  # packed on one node: not pinned


def test_starving_jobs_are_never_demoted(tmp_path: Path) -> None:
    jobs = full_cluster() + [pending("50", 8, NOW - 10 * 86400), pending("51", 8, NOW - 100)]
    d, fake = make(tmp_path, jobs, starvation_wait=3600.0)
    d.cycle()
    assert fake.jobs["50"].site_factor == 1000
    # a newcomer that FIFO would rank first (earlier submit time, e.g. a requeue)
    fake.jobs["49"] = pending("49", 8, NOW - 20 * 86400)
    fake.jobs["51"] = replace(fake.jobs["51"], submit_time=NOW - 50)
    d.cycle()
    assert fake.jobs["49"].site_factor == 1000
    assert fake.jobs["50"].site_factor == 1000  # would be 500 by rank; it waited too long to lose any


def test_budget_caps_updates_most_urgent_first_and_the_rest_follow(tmp_path: Path) -> None:
    jobs = full_cluster() + [pending(str(100 + i), 8, NOW - 1000 + i) for i in range(10)]
    d, fake = make(tmp_path, jobs, max_changes_per_cycle=4)
    out = d.cycle()
    assert len(fake.writes()) == 4 and out.plan.deferred > 0
    assert [c[1] for c in fake.writes()][:2] == ["100", "100"]  # top rank first, with its note
    for _ in range(10):
        d.cycle()
    factors = [fake.jobs[str(100 + i)].site_factor or 0 for i in range(10)]
    assert factors == sorted(factors, reverse=True) and factors[0] == 1000 and factors[-1] == 0
    assert d.cycle().plan.changes == ()


def test_out_of_scope_and_opted_out_jobs_are_never_touched(tmp_path: Path) -> None:
    jobs = full_cluster() + [
        pending("60", 8, NOW - 300, partition="debug"),
        pending("61", 8, NOW - 200, comment="team run slurmrl=off"),
        pending("62", 8, NOW - 100, account="other"),
        pending("63", 8, NOW - 50),
        pending("64", 8, NOW - 40),
    ]
    d, fake = make(tmp_path, jobs, scope=ScopeConfig(partitions=("gpu",), accounts=("ml",)))
    d.cycle()
    touched = {c[1] for c in fake.writes()}
    assert touched == {"63"}  # 64 ranks last: site factor 0, nothing to send
    # the job opts out later: everything the daemon set is given back
    fake.jobs["63"] = replace(fake.jobs["63"], comment="slurmrl=off")
    d.cycle()
    assert fake.jobs["63"].site_factor == 0 and fake.jobs["63"].admin_comment == ""
    assert "63" not in d.record.jobs


def test_dry_run_changes_nothing_and_writes_no_state(tmp_path: Path) -> None:
    jobs = full_cluster() + [pending("70", 8, NOW - 300), pending("71", 8, NOW - 100)]
    d, fake = make(tmp_path, jobs, dry_run=True)
    out = d.cycle()
    assert out.plan.changes and fake.writes() == []
    assert not (tmp_path / "state.json").exists()
    lines = [r for r in audit(tmp_path) if r["kind"] == "change"]
    assert lines and all(r["dry_run"] for r in lines)
    assert {"time", "cycle", "job", "field", "old", "new", "reason"} <= set(lines[0])


def test_existing_admin_comment_is_kept_and_restored(tmp_path: Path) -> None:
    jobs = full_cluster() + [pending("80", 8, NOW - 300, admin_comment="ticket 42"), pending("81", 8, NOW)]
    d, fake = make(tmp_path, jobs)
    d.cycle()
    assert fake.jobs["80"].admin_comment == "ticket 42 | slurmrl: sf=1000 policy=fifo+first-fit"
    out = d.revert()
    assert out.remaining == 0 and out.reverted == 1
    assert fake.jobs["80"].admin_comment == "ticket 42" and fake.jobs["80"].site_factor == 0
    assert Record.load(tmp_path / "state.json").jobs == {}


def test_a_restarted_daemon_reverts_from_the_state_file(tmp_path: Path) -> None:
    jobs = [
        running("r1", "node01", range(8)),
        running("r3", "node03", range(8)),
        running("r4", "node04", range(8)),
        pending("90", 8, NOW - 60),
        pending("91", 8, NOW),
    ]
    d, fake = make(tmp_path, jobs, policy="fifo-backfill", placement="topology")
    d.cycle()
    assert fake.jobs["90"].required_nodes == ("node02",)
    d.close()  # the state file's lock: one daemon at a time
    fresh = Daemon(d.config, fake, metrics=DaemonMetrics(), sleep=lambda s: None)
    assert set(fresh.record.jobs) == {"90"}
    fresh.revert()
    job = fake.jobs["90"]
    assert (job.required_nodes, job.site_factor, job.admin_comment) == ((), 0, "")


def test_a_give_back_slurmctld_puts_off_is_sent_again_after_a_pause(tmp_path: Path) -> None:
    # After a controller restart 22.05 refuses a job's updates until slurmdbd has indexed it
    # (ESLURM_JOB_SETTING_DB_INX); the revert waits and tries again instead of leaving it.
    from slurmrl.slurm.run import classify

    jobs = full_cluster() + [pending("11", 8, NOW - 300), pending("12", 8, NOW - 200)]
    pauses: list[float] = []
    d, fake = make(tmp_path, jobs, backoff_initial=0.05)
    d._sleep = pauses.append  # type: ignore[method-assign]
    d.cycle()
    assert fake.jobs["11"].site_factor == 1000
    text = "slurm_update error: Job update not available right now, the DB index is being set, try again"
    fake.fail_next("set_site_factor", classify(["scontrol", "update"], 1, text), job_id="11")
    out = d.revert()
    assert out.remaining == 0 and fake.jobs["11"].site_factor == 0, out
    assert pauses and max(pauses) <= 0.05  # it paused (backoff_initial) before the second round


def test_controller_failures_back_off_exponentially_and_keep_the_record(tmp_path: Path) -> None:
    jobs = full_cluster() + [pending(str(200 + i), 8, NOW - 100 + i) for i in range(4)]
    d, fake = make(tmp_path, jobs)
    fake.fail_next("snapshot", ControllerUnreachable("slurmctld down"))
    assert d.run_once() is False and d.backoff() == 1.0
    fake.fail_next("snapshot", ControllerUnreachable("slurmctld down"))
    assert d.run_once() is False and d.backoff() == 2.0
    # the controller dies in the middle of the updates
    fake.fail_next("set_site_factor", ControllerUnreachable("gone"), job_id="201")
    assert d.run_once() is False and d.backoff() == 4.0
    assert Record.load(tmp_path / "state.json").jobs["200"].site_factor == 1000
    assert d.run_once() is True and d.failures == 0
    assert [fake.jobs[str(200 + i)].site_factor or 0 for i in range(4)] == [1000, 667, 333, 0]
    for _ in range(6):
        d.failures += 1
    assert d.backoff() == 8.0  # capped at backoff_max


def test_rate_limit_defers_and_vanished_jobs_are_dropped(tmp_path: Path) -> None:
    jobs = full_cluster() + [pending(str(300 + i), 8, NOW - 100 + i) for i in range(3)]
    d, fake = make(tmp_path, jobs)
    fake.fail_next("set_admin_comment", RateLimited("slow down"), job_id="300")
    out = d.cycle()
    assert isinstance(out.error, RateLimited) and out.result.unsent > 0
    assert fake.jobs["301"].site_factor is None  # not sent yet, still planned
    fake.fail_next("set_site_factor", JobNotFound("Invalid job id specified"), job_id="301")
    out = d.cycle()
    assert out.error is None and "301" in out.result.vanished and "301" not in d.record.jobs
    assert fake.jobs["300"].admin_comment.startswith("slurmrl: sf=1000")
    # a job that ends between cycles leaves the record without any update
    del fake.jobs["300"]
    d.cycle()
    assert "300" not in d.record.jobs


def test_priority_mode_sets_explicit_priorities_and_hands_them_back(tmp_path: Path) -> None:
    jobs = full_cluster() + [pending("400", 8, NOW - 300), pending("401", 8, NOW - 100)]
    d, fake = make(tmp_path, jobs, mode="priority", priority_base=50_000)
    d.cycle()
    assert fake.jobs["400"].priority == 51_000 and fake.jobs["401"].priority == 50_000
    assert "prio=51000" in fake.jobs["400"].admin_comment
    d.revert()
    assert [c[1] for c in fake.writes("reset_priority")] == ["400", "401"]


def test_sigterm_stops_the_loop_and_reverts(tmp_path: Path) -> None:
    jobs = full_cluster() + [pending("500", 8, NOW - 300, admin_comment="x"), pending("501", 8, NOW)]
    fake = FakeSlurm(jobs, now=NOW)
    sent = []

    def sleep(seconds: float) -> None:
        if not sent:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGTERM)

    d = Daemon(config(tmp_path, interval=5.0), fake, metrics=DaemonMetrics(), sleep=sleep)
    assert d.run() == 0
    assert fake.jobs["500"].site_factor == 0 and fake.jobs["500"].admin_comment == "x"
    assert any(r["kind"] == "revert" for r in audit(tmp_path))
    assert signal.getsignal(signal.SIGTERM) is not d.request_stop


def test_oracle_policies_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot be deployed"):
        Daemon(config(tmp_path, policy="sjf-oracle"), FakeSlurm())


def test_metrics_count_changes_and_errors(tmp_path: Path) -> None:
    jobs = full_cluster() + [pending("600", 8, NOW - 300), pending("601", 8, NOW)]
    d, fake = make(tmp_path, jobs)
    fake.fail_next("snapshot", ControllerUnreachable("down"))
    d.run_once()
    d.run_once()
    reg = d.metrics.registry
    assert reg.get_sample_value("slurmrl_errors_total", {"kind": "controller_unreachable"}) == 1
    assert reg.get_sample_value("slurmrl_changes_total", {"kind": "site_factor", "dry_run": "false"}) == 1
    assert reg.get_sample_value("slurmrl_jobs", {"state": "pending"}) == 2
    assert reg.get_sample_value("slurmrl_last_success_timestamp_seconds") > 0


@pytest.mark.parametrize("mode", ["site_factor", "priority"])
def test_values_a_restarted_controller_lost_are_set_again(tmp_path: Path, mode: str) -> None:
    """A slurmctld restored from a state saved before the daemon's updates shows the old values;
    the record still says they were set. What Slurm shows wins: the daemon applies them again."""
    d, fake = make(
        tmp_path, full_cluster() + [pending("11", 8, NOW - 300), pending("12", 8, NOW - 200)], mode=mode
    )
    d.cycle()
    field = "site_factor" if mode == "site_factor" else "priority"
    applied = getattr(fake.jobs["11"], field)
    fake.jobs["11"] = replace(
        fake.jobs["11"], **{field: 0 if mode == "site_factor" else 1}
    )  # lost on restart
    n = len(fake.writes())
    d.cycle()
    method = "set_site_factor" if mode == "site_factor" else "set_priority"
    assert fake.writes(method)[-1] == (method, "11", applied)
    assert len(fake.writes()) > n and getattr(fake.jobs["11"], field) == applied


@pytest.mark.parametrize("name", ["topdrl", "harmony", "maifs", "meta-rl"])
def test_every_learned_policy_runs_in_the_daemon_by_name(tmp_path: Path, name: str) -> None:
    """The shipped checkpoints decide on a controller's snapshot as they do in the simulator.

    A preemptive one (topdrl, led by gittins-limit) runs only where the config lets the daemon requeue.
    """
    jobs = [running("r1", "node01", range(8)), running("r2", "node02", range(4))] + [
        pending("11", 2, NOW - 300),
        pending("12", 4, NOW - 200),
        pending("13", 8, NOW - 100),
    ]
    preempt = "requeue" if getattr(make_policy(name), "preemptive", False) else "off"
    d, fake = make(tmp_path, jobs, policy=name, placement=None, preempt=preempt)
    out = d.cycle()
    assert out.error is None and out.plan.ranked == 3
    pinned = {job for _, job, _ in fake.writes("set_required_nodes")}
    assert pinned and pinned <= {"11", "12", "13"}  # free GPUs on three nodes: something starts
    assert all(f"policy={name}" in fake.jobs[j].admin_comment for j in pinned)


def test_the_cycle_stages_each_do_one_thing(tmp_path: Path) -> None:
    jobs = full_cluster() + [
        pending("1", 8, NOW - 300),
        pending("2", 8, NOW - 200, comment="slurmrl=off"),
        pending("3", 8, NOW - 100),
    ]
    d, fake = make(tmp_path, jobs)
    snapshot, factors = d.read()  # read
    scoped = d.scope(snapshot)  # scope: the opted-out job is not the daemon's
    assert sorted(scoped) == ["1", "3"]
    view = d.view(snapshot, scoped)  # view: what the policy sees
    assert sorted(j.job_id for j in view.pending) == ["1", "3"]
    plan, decisions, _ = d.decide(snapshot, factors)  # decide + plan: nothing sent yet
    assert list(decisions.order[:2]) == ["1", "3"] and plan.changes and fake.writes() == []
    result = d.send(d.record.cycle + 1, plan)  # batch + send + confirm
    assert len(result.sent) == len(plan.changes) and result.calls <= len(plan.changes)
    assert d.record.cycle == 1 and Record.load(tmp_path / "state.json").cycle == 1
    assert fake.jobs["1"].site_factor == 1000 and not fake.jobs["3"].site_factor  # last rank: 0, unsent
