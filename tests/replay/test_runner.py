"""The replay loop against an in-memory controller: on time, to the end, nothing left behind."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from slurmrl.replay.plan import plan_replay
from slurmrl.replay.runner import LEDGER, Interrupted, Replay, clear_leftovers
from slurmrl.slurm.snapshot import SlurmJob
from slurmrl.traces.schema import Trace, TraceJob


class FakeJobs:
    """Runs each submitted job for its sleep, from its submission, with no queueing."""

    def __init__(self, interrupt_after: int | None = None, leftovers: tuple[str, ...] = ()) -> None:
        self.submitted: dict[str, tuple[float, float, str]] = {}
        self.cancelled: list[str] = []
        self.interrupt_after = interrupt_after
        self._left = list(leftovers)

    def submit(self, job, partition: str = "") -> str:
        jid = str(100 + len(self.submitted))
        self.submitted[jid] = (time.time(), job.sleep, job.name)
        if self.interrupt_after is not None and len(self.submitted) == self.interrupt_after:
            signal.raise_signal(signal.SIGINT)
        return jid

    def jobs(self) -> tuple[SlurmJob, ...]:
        now, out = time.time(), []
        for jid, (t, sleep, name) in self.submitted.items():
            done = now >= t + sleep
            out.append(
                SlurmJob(
                    jid,
                    name=name,
                    state="COMPLETED" if done else "RUNNING",
                    submit_time=t,
                    start_time=t,
                    end_time=t + sleep if done else None,
                    nodes=("node001",),
                )
            )
        return tuple(out)

    def leftovers(self) -> tuple[str, ...]:
        return tuple(self._left)

    def cancel(self, ids) -> None:
        ids = list(ids)
        self.cancelled.extend(ids)
        self._left = [j for j in self._left if j not in ids]


def _plan(n: int = 5):
    jobs = tuple(TraceJob(f"j{i}", submit_time=i * 2.0, duration=3.0, num_gpus=1) for i in range(n))
    return plan_replay(Trace(jobs=jobs, source="t", format="t"), speedup=100.0, gpus_per_node=8, floor=0.05)


def test_every_job_submitted_once_and_followed_to_its_end(tmp_path: Path) -> None:
    fake = FakeJobs()
    plan = _plan()
    state = Replay(plan, fake, tmp_path, poll=0.02).run()
    assert sorted(state.ids) == [f"j{i}" for i in range(5)]
    assert len(fake.submitted) == 5 and all(s.ended for s in state.seen.values())
    assert state.done(plan) == 5
    lines = [json.loads(x) for x in (tmp_path / LEDGER).read_text().splitlines()]
    assert [x["trace_id"] for x in lines if "slurm_id" in x] == [f"j{i}" for i in range(5)]
    assert all(x["intent"] == "submit" for x in lines if "slurm_id" not in x)  # intent before each sbatch
    assert fake.cancelled == []


def test_interrupt_cancels_every_submitted_job(tmp_path: Path) -> None:
    fake = FakeJobs(interrupt_after=2)
    with pytest.raises(Interrupted, match="cancelled the 2 job"):
        Replay(_plan(), fake, tmp_path, poll=0.02).run()
    assert sorted(fake.cancelled) == sorted(fake.submitted)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers given back


def test_leftovers_of_an_earlier_replay_are_cancelled_first() -> None:
    fake = FakeJobs(leftovers=("7", "8"))
    said: list[str] = []
    clear_leftovers(fake, said.append)
    assert fake.cancelled == ["7", "8"] and "2 job(s)" in said[0]


class ForgetfulJobs(FakeJobs):
    """A controller that lets ended jobs go at once (MinJobAge 0); accounting still has them."""

    def jobs(self) -> tuple[SlurmJob, ...]:
        return tuple(j for j in super().jobs() if j.state != "COMPLETED")

    def accounted(self, ids) -> tuple[SlurmJob, ...]:
        return tuple(j for j in super().jobs() if j.job_id in set(ids) and j.state == "COMPLETED")


def test_jobs_let_go_before_a_poll_saw_them_end_are_read_from_accounting(tmp_path: Path) -> None:
    plan = _plan(3)
    state = Replay(plan, ForgetfulJobs(), tmp_path, poll=0.02).run()
    assert state.done(plan) == 3 and all(s.end is not None for s in state.seen.values())
