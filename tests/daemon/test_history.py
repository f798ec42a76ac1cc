"""The daemon's finished-job history: what a history-based policy learns from between cycles."""

from __future__ import annotations

import json
from pathlib import Path

import fake_slurm  # loaded by conftest.py

from slurmrl.cluster import GpuPool, load_cluster
from slurmrl.daemon.checks import history_check
from slurmrl.daemon.config import DaemonConfig, load_config
from slurmrl.daemon.history import FinishedTracker, read_earlier
from slurmrl.daemon.loop import Daemon
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.errors import SlurmError
from slurmrl.policy.ordering.qssf import gpu_bucket
from slurmrl.policy.view import ClusterView, FinishedJob, JobView
from slurmrl.slurm.parse_gres import GpuRequest
from slurmrl.slurm.snapshot import SlurmJob, Snapshot

FakeSlurm = fake_slurm.FakeSlurm

CLUSTER = load_cluster("1x2x8")


def _view(now: float, running: list[JobView]) -> ClusterView:
    return ClusterView(
        now=now, cluster=CLUSTER, pool=GpuPool(CLUSTER).readonly(), pending=[], running=running
    )


def _snap(now: float, *jobs: SlurmJob) -> Snapshot:
    return Snapshot(now, "22.05.8", (), jobs, CLUSTER)


def test_a_job_that_stopped_running_is_reported_once_with_its_run_time() -> None:
    tracker = FinishedTracker()
    a, b = (
        JobView("1", 2, submit_time=0.0, start_time=10.0),
        JobView("2", 1, submit_time=0.0, start_time=20.0),
    )
    first = tracker.with_finished(_view(30.0, [a, b]), _snap(30.0))
    assert list(first.finished) == []
    ended = SlurmJob("1", state="COMPLETED", end_time=95.0)  # still listed: Slurm's end time
    second = tracker.with_finished(_view(100.0, []), _snap(100.0, ended))
    got = {f.job.job_id: (f.end_time, f.run_time) for f in second.finished}
    assert got == {"1": (95.0, 85.0), "2": (100.0, 80.0)}  # job 2 already purged: the snapshot's time
    assert list(tracker.with_finished(_view(130.0, []), _snap(130.0)).finished) == []


def test_a_job_requeued_before_counts_every_run_in_its_run_time() -> None:
    """As in the simulator: the runs the daemon's requeues stopped (its record's GPU-seconds) count."""
    tracker = FinishedTracker()
    again = JobView("1", 2, submit_time=0.0, start_time=500.0, attained_service=2 * 300.0, preemptions=1)
    tracker.with_finished(_view(600.0, [again]), _snap(600.0))
    done = tracker.with_finished(
        _view(700.0, []), _snap(700.0, SlurmJob("1", state="COMPLETED", end_time=650.0))
    )
    assert [(f.job.job_id, f.run_time) for f in done.finished] == [("1", 150.0 + 300.0)]


def test_a_requeued_job_is_not_finished() -> None:
    tracker = FinishedTracker()
    tracker.with_finished(_view(30.0, [JobView("1", 2, submit_time=0.0, start_time=10.0)]), _snap(30.0))
    back = SlurmJob("1", state="PENDING")
    assert list(tracker.with_finished(_view(60.0, []), _snap(60.0, back)).finished) == []


# -- history read back from accounting at start ----------------------------------------

NOW = 1_700_000_000.0
DAY = 86_400.0


def _ended(job_id: str, user: str, end: float, run: float, gpus: int = 2) -> SlurmJob:
    return SlurmJob(
        job_id,
        user=user,
        account="vision",
        state="COMPLETED",
        submit_time=end - run - 60.0,
        start_time=end - run,
        end_time=end,
        gpus=GpuRequest(gpus, None, "", "AllocTRES"),
    )


def _daemon(tmp_path: Path, fake, **kw) -> Daemon:
    cfg = DaemonConfig(
        policy="qssf",
        placement="first-fit",
        state_file=str(tmp_path / "state.json"),
        audit_log=str(tmp_path / "audit.jsonl"),
        **kw,
    )
    return Daemon(cfg, fake, metrics=DaemonMetrics(), clock=lambda: NOW, sleep=lambda s: None)


def _audit(tmp_path: Path, kind: str) -> list[dict]:
    lines = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    return [x for x in lines if x["kind"] == kind]


def test_ended_jobs_in_the_window_come_back_as_finished_less_those_the_queue_still_lists() -> None:
    fake = FakeSlurm([fake_slurm.pending("9", 1, NOW - 100)], now=NOW)
    fake.ended = [
        _ended("1", "alice", NOW - 8 * DAY, 600.0),  # before the window
        _ended("2", "alice", NOW - DAY, 600.0),
        _ended("9", "bob", NOW - 3600.0, 60.0),  # requeued since: pending again
        _ended("3", "bob", NOW - 600.0, 1200.0, gpus=4),
    ]
    earlier = read_earlier(fake, 7.0, fake.snapshot())
    assert [(f.job.job_id, f.run_time, f.job.user, f.job.group, f.job.gpus) for f in earlier.jobs] == [
        ("2", 600.0, "alice", "vision", 2),
        ("3", 1200.0, "bob", "vision", 4),
    ]
    assert earlier.problem == "" and fake.calls[-1] == ("finished_jobs", "", (NOW - 7 * DAY, NOW))
    assert all(f.from_accounting for f in earlier.jobs)


def test_a_history_that_cannot_be_read_says_why_and_leaves_none() -> None:
    fake = FakeSlurm([], now=NOW)
    fake.ended = [_ended("2", "alice", NOW - DAY, 600.0)]
    snap = fake.snapshot()
    assert read_earlier(fake, 0.0, snap).problem == "history_days is 0"
    fake.fail_next("finished_jobs", SlurmError("sacct: error: Problem talking to the database"))
    down = read_earlier(fake, 7.0, snap)
    assert down.jobs == () and "Problem talking to the database" in down.problem
    fake.gpus_tracked = False
    untracked = read_earlier(fake, 7.0, snap)
    assert untracked.jobs == () and "AccountingStorageTRES" in untracked.problem
    assert "reads no accounting" in read_earlier(object(), 7.0, snap).problem  # type: ignore[arg-type]


def test_seeded_jobs_come_with_the_first_view_only_before_the_ones_seen_ending() -> None:
    tracker = FinishedTracker()
    earlier = [FinishedJob(JobView("e", 1, submit_time=0.0, start_time=1.0), end_time=5.0, run_time=4.0)]
    tracker.seed(earlier)
    first = tracker.with_finished(
        _view(30.0, [JobView("1", 2, submit_time=0.0, start_time=10.0)]), _snap(30.0)
    )
    assert [f.job.job_id for f in first.finished] == ["e"]
    second = tracker.with_finished(_view(60.0, []), _snap(60.0))
    assert [f.job.job_id for f in second.finished] == ["1"]


def test_a_started_daemon_decides_on_the_history_accounting_kept(tmp_path: Path) -> None:
    fake = FakeSlurm([fake_slurm.pending("9", 2, NOW - 100, user="alice")], now=NOW)
    fake.ended = [_ended(str(i), "alice", NOW - DAY + i, 900.0) for i in range(5)]
    daemon = _daemon(tmp_path, fake)
    daemon.run_once()
    estimator = daemon.policy.ordering.estimator  # type: ignore[attr-defined]
    assert estimator.from_history("alice", gpu_bucket(2)) == 900.0
    assert daemon.metrics.history_jobs._value.get() == 5
    assert _audit(tmp_path, "history")[0] | {"time": 0} == {
        "kind": "history",
        "time": 0,
        "jobs": 5,
        "unreadable": 0,
        "problem": "",
    }
    daemon.run_once()  # read once per start
    assert [c for c in fake.calls if c[0] == "finished_jobs"] == [("finished_jobs", "", (NOW - 7 * DAY, NOW))]
    daemon.close()


def test_without_gpu_counts_in_accounting_the_daemon_starts_cold_and_says_so(tmp_path: Path) -> None:
    fake = FakeSlurm([fake_slurm.pending("9", 2, NOW - 100, user="alice")], now=NOW)
    fake.ended = [_ended(str(i), "alice", NOW - DAY + i, 900.0) for i in range(5)]
    fake.gpus_tracked = False
    daemon = _daemon(tmp_path, fake)
    assert daemon.run_once()
    assert daemon.policy.ordering.estimator.from_history("alice", gpu_bucket(2)) is None  # type: ignore[attr-defined]
    assert "AccountingStorageTRES" in _audit(tmp_path, "history")[0]["problem"]
    daemon.close()


def test_daemon_check_says_what_history_the_daemon_will_start_with() -> None:
    fake = FakeSlurm([], now=NOW)
    fake.ended = [_ended(str(i), "alice", NOW - DAY + i, 900.0) for i in range(3)]
    cfg = DaemonConfig(history_days=2.0)
    found = history_check(cfg, fake, fake.snapshot())
    assert found.ok and found.detail == "3 ended jobs of the last 2 days"
    fake.gpus_tracked = False
    cold = history_check(cfg, fake, fake.snapshot())
    assert cold.ok and cold.detail.startswith("warning: the daemon will start cold: accounting keeps no GPU")
    off = history_check(DaemonConfig(history_days=0), fake, fake.snapshot())
    assert off.ok and off.detail == "off (history_days = 0): the daemon starts cold"


def test_a_job_read_from_accounting_and_seen_ending_is_reported_once() -> None:
    tracker = FinishedTracker()
    running = JobView("1", 2, submit_time=0.0, start_time=10.0)
    tracker.with_finished(_view(30.0, [running]), _snap(30.0))
    tracker.seed([FinishedJob(running, end_time=50.0, run_time=40.0)])  # a reload read it back
    again = tracker.with_finished(_view(60.0, []), _snap(60.0))
    assert [(f.job.job_id, f.end_time) for f in again.finished] == [("1", 50.0)]


def test_a_reload_to_another_policy_hands_it_the_history_afresh(tmp_path: Path) -> None:
    path = tmp_path / "d.toml"
    path.write_text(
        f'policy = "qssf"\nstate_file = "{tmp_path}/state.json"\naudit_log = "{tmp_path}/audit.jsonl"\n'
    )
    fake = FakeSlurm([fake_slurm.pending("9", 2, NOW - 100, user="alice")], now=NOW)
    fake.ended = [_ended(str(i), "alice", NOW - DAY + i, 900.0) for i in range(5)]
    daemon = Daemon(load_config(path), fake, metrics=DaemonMetrics(), clock=lambda: NOW, sleep=lambda s: None)
    assert daemon.run_once()
    path.write_text(path.read_text() + 'placement = "first-fit"\n')  # another policy object
    assert daemon.reload() and daemon.run_once()
    assert daemon.policy.ordering.estimator.from_history("alice", gpu_bucket(2)) == 900.0  # type: ignore[attr-defined]
    assert len([c for c in fake.calls if c[0] == "finished_jobs"]) == 2
    path.write_text(path.read_text() + "interval = 7\n")  # the same policy: nothing read again
    assert daemon.reload() and daemon.run_once()
    assert len([c for c in fake.calls if c[0] == "finished_jobs"]) == 2
    daemon.close()
