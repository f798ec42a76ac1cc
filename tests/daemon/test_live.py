"""The daemon against the local Slurm 22.05 test cluster (contrib/testcluster).

Run with ``eval "$(contrib/testcluster/testcluster env)"; pytest -m slurm tests/daemon``.
Skipped only when no cluster is reachable and ``CI`` is unset. Jobs submitted
here carry a private account, and the daemon's scope is that account, so
other jobs on the cluster are never touched; every job is cancelled at the end.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import live_slurm  # loaded by tests/conftest.py
import pytest
from live_slurm import (
    Released,
    StartOnFree,
    cancel,
    daemon_config,
    every_node,
    show,
    site,
    state,
    wait_for,
    write_toml,
)

from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.loop import Daemon, make_backend
from slurmrl.daemon.metrics import DaemonMetrics

pytestmark = pytest.mark.slurm
ACCOUNT = f"slurmrl-d{os.getpid()}"
FILL = f"{ACCOUNT}-fill"


def sbatch(*args: str, account: str = ACCOUNT, wrap: str = "sleep 600") -> str:
    return live_slurm.sbatch(*args, account=account, wrap=wrap)


@pytest.fixture(scope="module", autouse=True)
def cleanup():
    yield
    live_slurm.clean_up(heal=True)  # the controller-crash test can leave GPUs counted as used


def make_config(tmp: Path, **kw) -> DaemonConfig:
    return daemon_config(tmp, ACCOUNT, **kw)


def fill_nodes(layout: dict[str, list[int]]) -> list[str]:
    return live_slurm.fill_nodes(layout, account=FILL)


def test_topology_pins_a_multi_gpu_job_inside_one_nvlink_island(tmp_path: Path) -> None:
    # node01 ends with GPUs 2-5 free (two half NVLink quads), node02 with 4-7 (one whole quad);
    # every other node is full.
    fill = live_slurm.fill_leaving({"node01": {2, 3, 4, 5}, "node02": {4, 5, 6, 7}}, account=FILL)
    job = sbatch("-H", "-N1", "--gres=gpu:4", "-t", "30")
    cfg = make_config(tmp_path, policy="fifo-backfill")
    backend = Released(make_backend(cfg), {job})
    snap = backend.snapshot()
    node01 = next(n for n in snap.nodes if n.name == "node01")
    assert node01.used_indices == (0, 1, 6, 7)  # the scattered free GPUs were built as intended
    d = Daemon(cfg, backend, metrics=DaemonMetrics())
    out = d.cycle()
    assert out.error is None
    fields = show(job)
    assert fields["ReqNodeList"] == "node02", fields
    assert "slurmrl:" in fields["AdminComment"] and "nodes=node02" in fields["AdminComment"]
    d.revert()
    assert show(job)["ReqNodeList"] == "(null)" and show(job)["AdminComment"] in ("", "(null)")
    d.cycle()
    subprocess.run(["scontrol", "release", job], check=True, timeout=30)
    wait_for(lambda: state(job) == "RUNNING", 30, "the pinned job to start")
    assert show(job)["NodeList"] == "node02"
    cancel(fill + [job])


def test_ordering_dry_run_scope_and_start_order(tmp_path: Path) -> None:
    fill = fill_nodes(every_node())
    long_job = sbatch("-N1", "--gres=gpu:8", "-t", "120")
    short_job = sbatch("-N1", "--gres=gpu:8", "-t", "10")  # submitted later; qssf ranks it first
    debug_job = sbatch("-N1", "--gres=gpu:8", "-t", "5", "-p", "debug")
    opted = sbatch("-N1", "--gres=gpu:8", "-t", "5", "--comment=please slurmrl=off")
    ours = [long_job, short_job, debug_job, opted]
    wait_for(lambda: all(state(j) == "PENDING" for j in ours), 20, "jobs to queue")

    dry = Daemon(
        make_config(tmp_path / "dry", dry_run=True),
        make_backend(make_config(tmp_path)),
        metrics=DaemonMetrics(),
    )
    out = dry.cycle()
    assert len(out.plan.changes) >= 2  # it would change something ...
    assert [site(j) for j in ours] == [0, 0, 0, 0]  # ... but changed nothing
    assert all(show(j)["AdminComment"] in ("", "(null)") for j in ours)
    assert not (tmp_path / "dry" / "state.json").exists()

    d = Daemon(make_config(tmp_path), make_backend(make_config(tmp_path)), metrics=DaemonMetrics())
    assert d.cycle().error is None
    assert site(short_job) == 1000 and site(long_job) == 0
    assert "sf=1000" in show(short_job)["AdminComment"]
    for j in (debug_job, opted):  # outside the scope: never touched
        assert site(j) == 0 and show(j)["AdminComment"] in ("", "(null)")
    assert d.cycle().plan.changes == ()  # nothing new to send
    # one node frees up: the short job, submitted later, starts first
    cancel([fill[0]])
    wait_for(lambda: state(short_job) == "RUNNING", 40, "the promoted job to start")
    assert state(long_job) == "PENDING"
    d.cycle()  # the started job leaves the record
    assert set(d.record.jobs) == {long_job} or set(d.record.jobs) == set()
    cancel(fill[1:] + ours)


def revert_again(cfg_path: Path) -> bool:
    """``slurmrl daemon revert`` from the state file; whether it left nothing."""
    out = subprocess.run(
        [*live_slurm.CLI, "daemon", "revert", "--config", str(cfg_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode == 0


def test_daemon_survives_a_controller_crash_and_reverts_on_sigterm(tmp_path: Path) -> None:
    fill = fill_nodes(every_node())
    a = sbatch("-N1", "--gres=gpu:8", "-t", "5")  # ranked first: gets the top site factor
    b = sbatch("-N1", "--gres=gpu:8", "-t", "60")
    subprocess.run(["scontrol", "update", f"JobId={a}", "AdminComment=ticket 7"], check=True, timeout=30)
    cfg_path = tmp_path / "daemon.toml"
    cfg = make_config(tmp_path)
    write_toml(cfg_path, cfg)
    audit = tmp_path / "audit.jsonl"

    def cycles() -> list[dict]:
        return [r for r in live_slurm.audit_lines(audit) if r.get("kind") == "cycle"]

    proc = live_slurm.start_daemon(cfg_path)
    try:
        # The factor and the note are separate updates, each recorded before it is sent.
        wait_for(lambda: site(a) == 1000, 30, "the daemon's first changes")
        wait_for(lambda: show(a)["AdminComment"].startswith("ticket 7 | slurmrl: sf=1000"), 30, "the note")
        before = len(cycles())
        subprocess.run(
            [str(live_slurm.TESTCLUSTER), "restart-controller", "--kill"],
            check=True,
            timeout=90,
            capture_output=True,
        )
        wait_for(lambda: [c for c in cycles()[before:] if c.get("ok")], 45, "a good cycle after the restart")
        assert proc.poll() is None  # still running
        # slurmctld recovers its last saved state: jobs from before that save (cancelled since, by
        # this or an earlier test module) can come back. Cancel every job that is not this test's.
        keep = {a, b, *fill}
        queued = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, timeout=30)
        cancel([j for j in queued.stdout.split() if j not in keep])
        if state(a) == "":
            # Killed before its periodic state save, slurmctld forgot the recent jobs (as after a
            # real crash): the daemon must drop them from its record. Queue new ones to revert.
            wait_for(
                lambda: a not in json.loads((tmp_path / "state.json").read_text())["jobs"],
                20,
                "the vanished job to leave the record",
            )
            cancel([j for j in fill if state(j) in ("PENDING", "RUNNING")])
            fill += fill_nodes(every_node())
            a = sbatch("-N1", "--gres=gpu:8", "-t", "5")
            b = sbatch("-N1", "--gres=gpu:8", "-t", "60")
            subprocess.run(
                ["scontrol", "update", f"JobId={a}", "AdminComment=ticket 7"], check=True, timeout=30
            )
        try:
            wait_for(lambda: site(a) == 1000, 30, "the top site factor after the restart")
        except BaseException:
            queue = subprocess.run(
                ["squeue", "-h", "-o", "%i %T %r %N %Q"], capture_output=True, text=True, timeout=30
            )
            print(f"a={a} {state(a)} site={site(a)} b={b} {state(b)} site={site(b)}\nqueue:\n{queue.stdout}")
            print("last cycles:", *cycles()[-3:], sep="\n")
            raise
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        output = proc.stdout.read() if proc.stdout else ""
        if code != 0 and "the DB index is being set" in output:
            # After the kill, slurmctld refuses a job's updates until slurmdbd has indexed it; the
            # daemon exits naming what is left, and the runbook's second revert gives it back.
            wait_for(lambda: revert_again(cfg_path), 300, "a second revert once slurmdbd has indexed the job")
            code = 0
        assert code == 0, output
        assert "revert done" in output
        assert site(b) == 0 and site(a) == 0
        assert show(b)["AdminComment"] in ("", "(null)") and show(a)["AdminComment"] == "ticket 7"
        assert json.loads((tmp_path / "state.json").read_text())["jobs"] == {}
    finally:
        if proc.poll() is None:
            proc.kill()
        cancel(fill + [a, b])


def test_bad_config_fails_fast_naming_keys(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('policy = "srtf-oracle"\nintervall = 5\n[scope]\npartitions = "gpu"\n')
    t0 = time.time()
    out = subprocess.run(
        [sys.executable, "-c", "from slurmrl.cli import main; main()", "daemon", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and time.time() - t0 < 20
    for needle in (
        "intervall: unknown key; did you mean 'interval'?",
        "[scope].partitions",
        "cannot be deployed",
    ):
        assert needle in out.stderr
    assert "Traceback" not in out.stderr


def test_revert_batches_jobs_per_call(tmp_path: Path) -> None:
    from slurmrl.slurm.run import STATS

    fill = fill_nodes(every_node())
    jobs = [sbatch("-N1", "--gres=gpu:8", "-t", str(5 + i)) for i in range(20)]
    cfg = make_config(tmp_path, max_changes_per_cycle=1000)
    d = Daemon(cfg, make_backend(cfg), metrics=DaemonMetrics())
    assert d.cycle().error is None
    touched = [j for j in jobs if site(j) > 0]
    assert len(touched) >= 15, touched
    updates = STATS.by_command["scontrol update"]
    before = updates.calls
    out = d.revert()
    assert out.remaining == 0
    calls = updates.calls - before
    assert calls < len(touched), (calls, len(touched))  # SiteFactor=0 and notes: a few list calls
    assert [j for j in jobs if site(j) not in (0, -1) or "slurmrl:" in show(j)["AdminComment"]] == []
    cancel(fill + jobs)


def test_priority_mode_gives_a_users_nice_back(tmp_path: Path) -> None:
    fill = fill_nodes(every_node())
    nice = sbatch("-N1", "--gres=gpu:8", "--nice=50")
    other = sbatch("-N1", "--gres=gpu:8")
    cfg = make_config(tmp_path, mode="priority", max_site_factor=100, priority_base=50_000)
    d = Daemon(cfg, make_backend(cfg), metrics=DaemonMetrics())
    assert d.cycle().error is None
    fields = show(nice)
    assert int(fields["Priority"]) >= 50_000 and fields["Nice"] == "0", fields  # Priority= cleared nice
    d.revert()
    fields = show(nice)
    assert fields["Nice"] == "50" and int(fields["Priority"]) < 50_000, fields

    def sprio_nice() -> list[str] | None:
        """The job's nice once sprio lists it again; until then sprio says it finds no such job."""
        out = subprocess.run(
            ["sprio", "-h", "-j", nice, "-o", "%N"], capture_output=True, text=True, timeout=30
        )
        words = out.stdout.split()
        return words if out.returncode == 0 and words and "Unable" not in words else None

    assert wait_for(sprio_nice, 60, "sprio to list the released job") == ["50"]
    cancel(fill + [nice, other])


def request(jid: str) -> dict[str, str]:
    """A job's request as ``scontrol -d -o show job`` prints it."""
    out = live_slurm.slurm("scontrol", "-d", "-o", "show", "job", jid)
    assert out.returncode == 0, out.stderr
    line = out.stdout
    fields = dict(re.findall(r"(?:^| )(TresPerNode|NumNodes|NumCPUs|ReqNodeList)=(\S*)", line))
    # 22.05 spells the GPU request gres:gpu:8; 23.02 and later gres/gpu:8.
    fields["TresPerNode"] = fields.get("TresPerNode", "").replace("gres/", "gres:", 1)
    fields["AdminComment"] = (
        line.split(" AdminComment=", 1)[1].split(" ", 1)[0] if " AdminComment=" in line else ""
    )
    return fields


def test_elastic_job_gets_its_gpu_request_changed_and_given_back(tmp_path: Path) -> None:
    fill = fill_nodes(every_node(node02=[6], node03=[6]))  # two GPUs free on node02 and on node03
    elastic = sbatch("-H", "-N1", "--gres=gpu:8", "-t", "30", "--comment=model=resnet50 gpus=2-8")
    rigid = sbatch("-H", "-N1", "--gres=gpu:8", "-t", "30", "--comment=model=resnet50")
    before = {j: request(j) for j in (elastic, rigid)}
    assert before[elastic]["TresPerNode"] == "gres:gpu:8" and before[elastic]["NumNodes"] == "1-1", before
    cfg = make_config(tmp_path)
    policy = StartOnFree({elastic: ("node02", "node03"), rigid: ("node02", "node03")}, 2)
    backend = Released(make_backend(cfg), {elastic, rigid})  # held: Slurm cannot start them meanwhile
    assert (
        Daemon(cfg, backend, policy=policy, metrics=DaemonMetrics()).run(once=True, install_signals=False)
        == 0
    )
    after = request(elastic)
    assert after["TresPerNode"] == "gres:gpu:2" and after["NumNodes"] == "2-2", after
    assert after["ReqNodeList"] == "node02,node03" and after["AdminComment"] == "slurmrl:", after
    assert request(rigid) == before[rigid]  # no tag: never resized, never pinned
    audit = [json.loads(x) for x in Path(cfg.audit_log).read_text().splitlines()]
    refused = [r for r in audit if r["kind"] == "refused"]
    assert [(r["job"], r["gpus"]) for r in refused] == [(rigid, 4)], refused
    reverting = Daemon(cfg, backend, policy=policy, metrics=DaemonMetrics())  # as `slurmrl daemon revert`
    assert reverting.revert().remaining == 0
    reverting.close()
    assert request(elastic) == before[elastic], request(elastic)
    # Decided again and released: Slurm starts it on the count and the nodes the policy chose.
    assert (
        Daemon(cfg, backend, policy=policy, metrics=DaemonMetrics()).run(once=True, install_signals=False)
        == 0
    )
    subprocess.run(["scontrol", "release", elastic], check=True, timeout=30)
    wait_for(lambda: state(elastic) == "RUNNING", 30, "the resized job to start")
    assert show(elastic)["NodeList"] == "node[02-03]" and request(elastic)["TresPerNode"] == "gres:gpu:2"
    cancel(fill + [elastic, rigid])


class FirstView:
    """fifo, keeping the first view the daemon hands it."""

    name, deployable = "first-view", True

    def __init__(self) -> None:
        from slurmrl.policy import make_policy

        self.inner = make_policy("fifo", "first-fit")
        self.first = None

    def bind_oracle(self, durations) -> None:
        pass

    def decide(self, view):
        if self.first is None:
            self.first = view
        return self.inner.decide(view)


def test_a_started_daemon_hands_its_policy_the_jobs_accounting_kept(tmp_path: Path) -> None:
    """sacct through the CLI backend to the policy's first view, the run time Slurm recorded."""
    done = sbatch("--gres=gpu:2", "-t", "3", wrap="sleep 2")
    backend = make_backend(make_config(tmp_path))
    wait_for(
        lambda: any(j.job_id == done for j in backend.finished_jobs(time.time() - 600, time.time() + 1).jobs),
        60,
        f"job {done} in sacct",
    )
    policy = FirstView()
    daemon = Daemon(
        make_config(tmp_path, history_days=1.0, dry_run=True), backend, policy=policy, metrics=DaemonMetrics()
    )
    assert daemon.cycle().error is None
    seen = {f.job.job_id: f for f in policy.first.finished}
    assert seen[done].job.gpus == 2 and seen[done].job.group == ACCOUNT and 1.0 <= seen[done].run_time <= 30.0
    assert daemon.metrics.history_jobs._value.get() == len(policy.first.finished)
