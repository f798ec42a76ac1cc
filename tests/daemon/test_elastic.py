"""Elastic jobs through the daemon: a start on another GPU count rewrites the request of a job that
opted in (``gpus=MIN-MAX`` in its comment), within its range, recorded before it is sent, audited and
given back; every other such start is refused and said once."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import fake_slurm  # loaded by conftest.py

from slurmrl.cluster.model import Placement
from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.loop import Daemon
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.record import Record
from slurmrl.policy.view import ClusterView, Decisions, Start
from slurmrl.slurm.elastic import GpuAsk
from slurmrl.slurm.run import CommandFailed

FakeSlurm, pending, running = fake_slurm.FakeSlurm, fake_slurm.pending, fake_slurm.running
NOW = 1_700_000_000.0
ORIG = "8x1,cpus=1,tasks=1,type=v100"  # job 1's own request: 8 GPUs on one node, NumCPUs=1, one task
ASK = "4x1,cpus=1,tasks=1,type=v100"  # 4 GPUs on node02 instead


class StartOn:
    """A policy that starts one job on the given (node index, GPUs) allocations, every cycle."""

    name = "start-on"
    deployable = True

    def __init__(self, job_id: str, allocs: Sequence[tuple[int, Sequence[int]]]) -> None:
        self.job_id = job_id
        self.placement = Placement.of([(n, tuple(g)) for n, g in allocs])
        self.on = True

    def decide(self, view: ClusterView) -> Decisions:
        order = [j.job_id for j in view.pending]
        if not self.on or self.job_id not in order:
            return Decisions(order=order)
        return Decisions(order=order, starts=(Start(self.job_id, self.placement),))

    def bind_oracle(self, durations) -> None:  # pragma: no cover - a deployable policy
        pass


def queue(comment: str = "gpus=2-8", gpus: int = 8, **kw) -> FakeSlurm:
    """node01 and node03-04 full; job 1 (asking 8 GPUs on one node) pending."""
    busy = [
        running("r1", "node01", range(8)),
        running("r3", "node03", range(8)),
        running("r4", "node04", range(8)),
    ]
    return FakeSlurm(busy + [pending("1", gpus, NOW - 9, comment=comment, min_cpus=1, num_tasks=1, **kw)])


def make(tmp_path: Path, fake, policy: StartOn) -> Daemon:
    cfg = DaemonConfig(
        policy="fifo",
        placement="first-fit",
        state_file=str(tmp_path / "state.json"),
        audit_log=str(tmp_path / "audit.jsonl"),
        backoff_initial=1.0,
        backoff_max=1.0,
    )
    return Daemon(cfg, fake, policy=policy, metrics=DaemonMetrics(), clock=lambda: NOW, sleep=lambda s: None)


def audit(tmp_path: Path, kind: str) -> list[dict]:
    lines = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    return [r for r in lines if r["kind"] == kind]


def shape(fake: FakeSlurm, jid: str = "1") -> tuple[int, int | None, int | None, int | None]:
    job = fake.jobs[jid]
    return job.gpus.total, job.gpus.per_node, job.num_nodes, job.min_cpus


def test_an_opted_in_job_is_resized_then_pinned_and_revert_restores_its_request(tmp_path: Path) -> None:
    fake = queue()
    d = make(tmp_path, fake, StartOn("1", [(1, range(4))]))  # 4 GPUs on node02
    d.cycle()
    assert fake.writes()[0] == ("set_gpus", "1", f"{ASK} nodes=node02")  # request and pin: one update
    assert fake.writes("set_required_nodes") == []
    assert shape(fake) == (4, 4, 1, 1) and fake.jobs["1"].required_nodes == ("node02",)
    assert f"gpus_set={ASK} gpus_orig={ORIG}" in fake.jobs["1"].admin_comment
    entry = Record.load(tmp_path / "state.json").get("1")
    assert entry is not None and (entry.gpus, entry.orig_gpus, entry.unsure) == (ASK, ORIG, ())
    (change,) = [r for r in audit(tmp_path, "change") if r["field"] == "gpus"]
    assert (change["old"], change["new"]) == (ORIG, ASK) and "gpus=2-8" in change["reason"]
    d.cycle()  # the same decision again: nothing to send
    assert len(fake.writes("set_gpus")) == 1
    assert d.revert().remaining == 0
    assert shape(fake) == (8, 8, 1, 1)
    assert (fake.jobs["1"].required_nodes, fake.jobs["1"].admin_comment) == ((), "")
    assert fake.writes("set_gpus")[-1] == ("set_gpus", "1", f"{ORIG} nodes=")  # one update back
    assert Record.load(tmp_path / "state.json").jobs == {}
    assert any(r["field"] == "gpus" and r["new"] == ORIG for r in audit(tmp_path, "revert"))


def test_a_start_on_more_nodes_sets_the_node_count_and_revert_gives_back_numcpus(tmp_path: Path) -> None:
    fake = FakeSlurm(
        [
            running("r1", "node01", range(8)),
            pending("1", 4, NOW - 9, comment="gpus=2-8", min_cpus=1, num_tasks=1),
        ]
    )
    d = make(tmp_path, fake, StartOn("1", [(2, range(4)), (3, range(4))]))  # 4+4 on node03, node04
    d.cycle()
    assert fake.writes("set_gpus") == [("set_gpus", "1", "4x2,cpus=2,tasks=2,type=v100 nodes=node03,node04")]
    assert shape(fake) == (8, 4, 2, 2) and fake.jobs["1"].num_tasks == 2  # one task per node
    assert fake.jobs["1"].required_nodes == ("node03", "node04")
    d.revert()
    assert shape(fake) == (4, 4, 1, 1) and fake.jobs["1"].num_tasks == 1


def test_the_request_is_on_disk_before_it_is_sent(tmp_path: Path) -> None:
    fake = queue()
    seen: list[tuple[str | None, tuple[str, ...]]] = []
    inner = fake.set_gpus

    def spy(job_id: str, ask: GpuAsk, pin=None) -> None:
        entry = Record.load(tmp_path / "state.json").get(job_id)
        seen.append((entry.gpus, entry.unsure) if entry else (None, ()))
        inner(job_id, ask, pin)

    fake.set_gpus = spy  # type: ignore[method-assign]
    make(tmp_path, fake, StartOn("1", [(1, range(4))])).cycle()
    assert seen == [(ASK, ("gpus", "nodes"))]  # the request and its pin


class Killed(BaseException):
    """Stands for a SIGKILL: nothing after it runs."""


def cycle_killed_at_set_gpus(tmp_path: Path, fake, *, slurm_took_it: bool) -> None:
    """One cycle killed inside the GPU update, before or after Slurm applied it; the fake restored after."""
    inner = fake.set_gpus

    def crash(job_id: str, ask: GpuAsk, pin=None) -> None:
        if slurm_took_it:
            inner(job_id, ask, pin)  # Slurm took it; the answer never came back
        raise Killed()

    fake.set_gpus = crash
    d = make(tmp_path, fake, StartOn("1", [(1, range(4))]))
    try:
        d.cycle()
    except Killed:
        pass
    d.close()
    fake.set_gpus = inner


def test_a_crash_between_intent_and_send_leaves_nothing_after_revert(tmp_path: Path) -> None:
    fake = queue()
    cycle_killed_at_set_gpus(tmp_path, fake, slurm_took_it=False)
    entry = Record.load(tmp_path / "state.json").get("1")
    assert entry is not None and entry.gpus == ASK and entry.unsure == ("gpus", "nodes")
    again = make(tmp_path, fake, StartOn("1", [(1, range(4))]))
    assert again.revert().remaining == 0
    assert fake.writes() == []  # Slurm never took it: nothing to give back
    assert shape(fake) == (8, 8, 1, 1) and fake.jobs["1"].required_nodes == ()
    assert Record.load(tmp_path / "state.json").jobs == {}
    assert any("gpus was not applied" in r["detail"] for r in audit(tmp_path, "reconcile"))


def test_a_crash_after_slurm_took_the_request_is_given_back(tmp_path: Path) -> None:
    fake = queue()
    cycle_killed_at_set_gpus(tmp_path, fake, slurm_took_it=True)
    assert make(tmp_path, fake, StartOn("1", [(1, range(4))])).revert().remaining == 0
    assert shape(fake) == (8, 8, 1, 1)


def test_a_count_outside_the_range_is_refused_and_said_once(tmp_path: Path) -> None:
    fake = queue("model=resnet50 gpus=4-8")
    d = make(tmp_path, fake, StartOn("1", [(1, range(2))]))  # 2 GPUs: below the range
    for _ in range(3):
        d.cycle()
    assert fake.writes("set_gpus") == [] and fake.writes("set_required_nodes") == []
    (line,) = audit(tmp_path, "refused")
    assert line["job"] == "1" and line["gpus"] == 2 and "outside its range gpus=4-8" in line["reason"]


def test_a_job_without_the_tag_is_never_resized(tmp_path: Path) -> None:
    fake = queue(comment="model=resnet50")
    d = make(tmp_path, fake, StartOn("1", [(1, range(4))]))
    for _ in range(2):
        d.cycle()
    assert fake.writes("set_gpus") == [] and fake.writes("set_required_nodes") == []
    (line,) = audit(tmp_path, "refused")
    assert line["gpus"] == 4 and "no gpus=MIN-MAX tag" in line["reason"]


def test_a_malformed_tag_is_warned_once_and_the_job_stays_rigid(tmp_path: Path) -> None:
    fake = queue(comment="gpus=8-2")
    d = make(tmp_path, fake, StartOn("1", [(1, range(4))]))
    for _ in range(2):
        d.cycle()
    (warned,) = audit(tmp_path, "elastic_tag")
    assert (warned["job"], warned["tag"]) == ("1", "gpus=8-2") and "malformed" in warned["problem"]
    assert fake.writes("set_gpus") == []
    assert "is not honoured" in audit(tmp_path, "refused")[0]["reason"]


def test_uneven_placements_are_refused(tmp_path: Path) -> None:
    fake = FakeSlurm([pending("1", 8, NOW - 9, comment="gpus=2-8", min_cpus=1)])
    d = make(tmp_path, fake, StartOn("1", [(0, range(4)), (1, range(2))]))  # 4 + 2
    d.cycle()
    assert fake.writes("set_gpus") == []
    assert "unevenly" in audit(tmp_path, "refused")[0]["reason"]


def test_the_request_is_given_back_when_the_policy_no_longer_starts_the_job(tmp_path: Path) -> None:
    fake = queue()
    policy = StartOn("1", [(1, range(4))])
    d = make(tmp_path, fake, policy)
    d.cycle()
    policy.on = False
    d.cycle()
    assert shape(fake) == (8, 8, 1, 1) and fake.jobs["1"].required_nodes == ()
    entry = Record.load(tmp_path / "state.json").get("1")
    assert entry is None or entry.gpus is None


def test_a_refused_request_is_rolled_back_and_the_pin_not_sent(tmp_path: Path) -> None:
    fake = queue()
    fake.fail_next(
        "set_gpus", CommandFailed("'scontrol update' failed (exit 1): Job violates accounting policy")
    )
    d = make(tmp_path, fake, StartOn("1", [(1, range(4))]))
    d.cycle()
    assert fake.writes("set_required_nodes") == [] and shape(fake) == (8, 8, 1, 1)
    entry = Record.load(tmp_path / "state.json").get("1")
    assert entry is not None and entry.gpus is None and entry.placement_blocked_until > NOW
    d.cycle()  # not tried again for the same request
    assert fake.writes("set_gpus") == []


def test_a_lost_record_is_rebuilt_from_the_note_and_the_request_given_back(tmp_path: Path) -> None:
    fake = queue()
    d = make(tmp_path, fake, StartOn("1", [(1, range(4))]))
    d.cycle()
    d.close()
    (tmp_path / "state.json").unlink()
    assert make(tmp_path, fake, StartOn("1", [(1, range(4))])).revert().remaining == 0
    assert shape(fake) == (8, 8, 1, 1) and fake.jobs["1"].admin_comment == ""


def test_a_job_that_leaves_the_scope_gets_its_request_back(tmp_path: Path) -> None:
    fake = queue()
    d = make(tmp_path, fake, StartOn("1", [(1, range(4))]))
    d.cycle()
    fake.jobs["1"] = replace(fake.jobs["1"], comment="gpus=2-8 " + d.config.scope.opt_out_keyword)
    d.cycle()
    assert shape(fake) == (8, 8, 1, 1)


def test_a_withdrawn_tag_gets_the_request_and_the_pin_back(tmp_path: Path) -> None:
    fake = queue()
    d = make(tmp_path, fake, StartOn("1", [(1, range(4))]))
    d.cycle()
    fake.jobs["1"] = replace(fake.jobs["1"], comment="model=resnet50")  # scontrol update Comment=...
    d.cycle()
    assert shape(fake) == (8, 8, 1, 1) and fake.jobs["1"].required_nodes == ()
    assert "tag is gone" in audit(tmp_path, "refused")[0]["reason"]


def test_a_task_layout_a_rewrite_cannot_keep_is_refused_and_said_once(tmp_path: Path) -> None:
    fake = queue()
    # 2 ranks per node on 8 GPUs: neither one per node nor one per GPU
    fake.jobs["1"] = replace(fake.jobs["1"], num_tasks=2, tasks_per_node=2)
    d = make(tmp_path, fake, StartOn("1", [(1, range(4))]))
    for _ in range(2):
        d.cycle()
    assert fake.writes("set_gpus") == [] and fake.writes("set_required_nodes") == []
    (line,) = audit(tmp_path, "refused")
    assert line["gpus"] == 4 and "--ntasks-per-node=2" in line["reason"]


def test_a_grow_past_a_qos_limit_is_refused_and_said_once(tmp_path: Path) -> None:
    from slurmrl.daemon.limits import AccountLimits, parse_qos

    fake = FakeSlurm(
        [
            running("r1", "node01", range(8)),
            pending("1", 4, NOW - 9, comment="gpus=2-8", min_cpus=1, num_tasks=1, qos="small"),
        ]
    )
    fake.limits = AccountLimits(parse_qos("small|node=1||\n"))
    d = make(tmp_path, fake, StartOn("1", [(2, range(4)), (3, range(4))]))  # 4+4: two nodes
    for _ in range(2):
        d.cycle()
    assert fake.writes("set_gpus") == [] and fake.writes("set_required_nodes") == []
    (line,) = audit(tmp_path, "refused")
    assert "QOS small MaxTRESPerJob node=1" in line["reason"], line


def test_a_grow_is_refused_when_the_limits_cannot_be_read(tmp_path: Path) -> None:
    fake = queue()
    fake.fail_next("accounting_limits", CommandFailed("'sacctmgr show qos' failed (exit 1): no slurmdbd"))
    d = make(tmp_path, fake, StartOn("1", [(1, range(8))]))  # 8 -> 8: no grow, no check needed
    d.cycle()
    fake2 = FakeSlurm(
        [running("r1", "node01", range(8)), pending("1", 4, NOW - 9, comment="gpus=2-8", num_tasks=1)]
    )
    fake2.fail_next("accounting_limits", CommandFailed("'sacctmgr show qos' failed (exit 1): no slurmdbd"))
    d2 = make(tmp_path / "two", fake2, StartOn("1", [(2, range(4)), (3, range(4))]))
    d2.cycle()
    assert fake2.writes("set_gpus") == []
    assert "cannot be read" in audit(tmp_path / "two", "refused")[0]["reason"]
