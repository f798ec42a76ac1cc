"""Helpers of the tests that run against the local Slurm test cluster (marked ``slurm``).

Commands are resolved to their binaries once, at import: a test may put
wrappers first on PATH (to act as another Slurm user) while its own reads
and writes keep going to the real binaries.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from slurmrl.cluster.model import Placement
from slurmrl.daemon.config import DaemonConfig, ScopeConfig, SlurmSettings
from slurmrl.policy.view import ClusterView, Decisions, Start
from slurmrl.slurm.cli_backend import parse_version
from slurmrl.slurm.snapshot import Snapshot

REPO = Path(__file__).resolve().parents[1]
TESTCLUSTER = REPO / "contrib" / "testcluster" / "testcluster"
CLI = [sys.executable, "-c", "from slurmrl.cli import main; main()"]
BINARIES = ("sbatch", "scancel", "scontrol", "squeue", "sinfo", "sprio", "sacctmgr", "sacct", "sshare")
REAL = {name: shutil.which(name) or name for name in BINARIES}
# Every job the live tests submitted, for the modules' clean-up.
SUBMITTED: list[str] = []


def slurm(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([REAL.get(name, name), *args], capture_output=True, text=True, timeout=30)


def sbatch(*args: str, account: str, wrap: str = "sleep 600") -> str:
    """Submit ``wrap`` (a 10-minute sleep) under ``account``, named after it; the job id."""
    out = slurm(
        "sbatch",
        "--parsable",
        "--chdir=/tmp",
        "--output=/dev/null",
        f"--account={account}",
        f"--job-name={account}",
        *args,
        "--wrap",
        wrap,
    )
    assert out.returncode == 0, out.stderr
    jid = out.stdout.strip().split(";")[0]
    SUBMITTED.append(jid)
    return jid


def show(jid: str) -> dict[str, str]:
    """``scontrol show job`` as a dict; AdminComment is free text on a line of its own."""
    fields: dict[str, str] = {}
    for line in slurm("scontrol", "show", "job", jid).stdout.splitlines():
        if line.strip().startswith("AdminComment="):
            fields["AdminComment"] = line.strip()[len("AdminComment=") :].strip()
            continue
        fields.update(re.findall(r"(\w+)=(\S*)", line))
    fields.setdefault("AdminComment", "")
    return fields


def site(jid: str) -> int:
    """The job's SiteFactor as sprio shows it; -1 when sprio does not list it (held, not pending)."""
    out = slurm("sprio", "-h", "-j", jid, "-o", "%S")
    words = out.stdout.split()
    return int(words[0]) if out.returncode == 0 and words and words[0].lstrip("-").isdigit() else -1


def state(jid: str) -> str:
    return show(jid).get("JobState", "")


def wait_for(pred, timeout: float, what: str, step: float = 0.5):
    """``pred()``'s first true value within ``timeout`` seconds, else a test failure naming ``what``."""
    end = time.time() + timeout
    while time.time() < end:
        value = pred()
        if value:
            return value
        time.sleep(step)
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}")


def slurm_version() -> tuple[int, int, int]:
    """The running cluster's release (``scontrol --version``: ``slurm 22.05.8``, ``slurm-wlm 24.11.5``)."""
    out = slurm("scontrol", "--version")
    assert out.returncode == 0, out.stderr
    return parse_version(out.stdout)


def node_gpus() -> dict[str, int]:
    """GPUs per node of the running cluster (partition ``gpu``), in node order.

    Read from the cluster, not the spec, so the contention tests fill every
    node of whatever spec the cluster was started with.
    """
    out = slurm("sinfo", "-h", "-N", "-p", "gpu", "-o", "%N %G")
    assert out.returncode == 0, out.stderr
    gpus: dict[str, int] = {}
    for line in out.stdout.splitlines():
        name, _, gres = line.partition(" ")
        count = re.search(r"gpu(?::[^:(,]+)?:(\d+)", gres)
        gpus[name] = int(count.group(1)) if count else 0
    assert gpus, "sinfo lists no node in partition gpu"
    return dict(sorted(gpus.items()))


def gpus_used(node: str) -> int:
    """GPUs slurmctld counts allocated on ``node`` (``AllocTRES`` of ``scontrol show node``): a
    job shown ended may still hold them for a moment while its node completes it."""
    out = slurm("scontrol", "show", "node", node)
    assert out.returncode == 0, out.stderr
    used = re.search(r"AllocTRES=\S*gres/gpu=(\d+)", out.stdout)
    return int(used.group(1)) if used else 0


def every_node(**overrides: list[int]) -> dict[str, list[int]]:
    """A filler layout holding every GPU of every node, except the nodes named here.

    ``every_node(node02=[4])``: one 4-GPU filler on node02, one whole-node filler
    on each other node. Keys keep node order, so fillers come out in that order.
    """
    layout = {name: [n] for name, n in node_gpus().items() if n}
    unknown = set(overrides) - set(layout)
    assert not unknown, f"no GPU node named {sorted(unknown)} in the running cluster"
    return {name: overrides.get(name, counts) for name, counts in layout.items()}


def gpu_indices(jid: str) -> set[int]:
    """The GPU indices a running job holds (``GRES=gpu:v100:2(IDX:0-1)`` of ``scontrol -d show job``)."""
    found: set[int] = set()
    for ranges in re.findall(
        r"GRES=gpu[^(\s]*\(IDX:([\d,-]+)\)", slurm("scontrol", "-d", "show", "job", jid).stdout
    ):
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            found.update(range(int(low), int(high or low) + 1))
    return found


def fill_leaving(free: dict[str, set[int]], account: str) -> list[str]:
    """Running fillers (under ``account``) holding every GPU except ``free[node]`` on the named nodes.

    Slurm, not the job, picks a job's GPU indices, and releases differ: 22.05 hands
    out 0, 1, 2, ... in order; 24.11 spreads a job over the NVLink islands (a
    4-GPU job on an empty node gets 0-1,4-5). So each named node gets one
    single-GPU filler per GPU, and those that hold a GPU meant to be free end.
    """
    layout = every_node(**{node: [1] * node_gpus()[node] for node in free})
    fill = fill_nodes(layout, account)
    ending = [j for j in fill if (node := show(j).get("NodeList")) in free and gpu_indices(j) & free[node]]
    cancel(ending)
    return [j for j in fill if j not in ending]


# States of a job that has ended ("": slurmctld no longer knows the id). FAILED is one: after
# slurmctld loses its state it hands out the same ids again, and a slurmd refuses the credential
# of an id it saw revoked, so an id a test holds can name a new job that failed at once.
ENDED = (
    "",
    "CANCELLED",
    "COMPLETED",
    "FAILED",
    "NODE_FAIL",
    "BOOT_FAIL",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "DEADLINE",
)


def clean_up(heal: bool = False) -> None:
    """Cancel every job the tests submitted; with ``heal``, then clear GPUs slurmctld still
    counts for jobs that are gone (a controller crash can leave them, see testcluster heal)."""
    if SUBMITTED:
        slurm("scancel", *SUBMITTED)
    if heal:
        end = time.time() + 60
        while time.time() < end and still_queued(set(SUBMITTED)):
            time.sleep(0.5)
        subprocess.run([str(TESTCLUSTER), "heal"], capture_output=True, timeout=120)


def still_queued(ids: set[str]) -> bool:
    """Whether any of ``ids`` (job or array ids) is still pending, running or completing."""
    out = slurm("squeue", "-h", "-o", "%A %F")
    return out.returncode != 0 or bool(ids & set(out.stdout.split()))


def start_daemon(cfg_path: Path, path_first: Path | None = None) -> subprocess.Popen:
    """``slurmrl daemon --config cfg_path`` in a child process, its output on one pipe
    (``path_first``: a folder searched first for the Slurm commands, as a stand-in's)."""
    env = None if path_first is None else {**os.environ, "PATH": f"{path_first}:{os.environ['PATH']}"}
    return subprocess.Popen(
        [*CLI, "daemon", "--config", str(cfg_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def audit_lines(path: Path) -> list[dict]:
    """The daemon's audit log, one record a line; none before the file exists."""
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def cancel(ids: list[str]) -> None:
    if ids:
        slurm("scancel", *ids)
        wait_for(lambda: all(state(j) in ENDED for j in ids), 30, "jobs to end")


FILL_SETTLE = 3.0  # seconds fillers must keep running before they count as holding their GPUs


def fill_nodes(layout: dict[str, list[int]], account: str) -> list[str]:
    """Running filler jobs (under ``account``, outside the daemon's scope) holding ``count`` GPUs per entry on each node.

    A filler that ends before it runs, or right after it started, is submitted again: after
    slurmctld loses its state it hands out job ids again, and a slurmd refuses the credential
    of an id it saw revoked, which can fail a job the controller already showed as running.
    So the fillers must still be running a few seconds after they all started.
    """
    wanted = [(node, n) for node, counts in layout.items() for n in counts]
    ids = [sbatch(f"-w{node}", "-N1", f"--gres=gpu:{n}", account=account) for node, n in wanted]

    def running() -> bool:
        for k, (node, n) in enumerate(wanted):
            if state(ids[k]) in ("", "FAILED", "COMPLETED", "CANCELLED", "NODE_FAIL", "BOOT_FAIL"):
                ids[k] = sbatch(f"-w{node}", "-N1", f"--gres=gpu:{n}", account=account)
        return all(state(j) == "RUNNING" for j in ids)

    def settled() -> bool:
        if not running():
            return False
        time.sleep(FILL_SETTLE)
        return running()

    try:
        wait_for(settled, 90, "filler jobs to run")
    except BaseException:
        queue = subprocess.run(
            ["squeue", "-h", "-o", "%i %T %r %N"], capture_output=True, text=True, timeout=30
        )
        nodes = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %T %E"], capture_output=True, text=True, timeout=30
        )
        print(f"queue:\n{queue.stdout}\nnodes:\n{nodes.stdout}")
        raise
    return ids


class Released:
    """Reads the queue with chosen held jobs shown as waiting on resources (and, where asked,
    their ``--constraint`` hidden, as a reader that cannot see it would); writes go to Slurm.

    Holding a job keeps Slurm from starting it before the daemon has placed it.
    """

    def __init__(self, inner, ids: set[str], hide_constraint: bool = False) -> None:
        self.inner, self.ids, self.hide = inner, ids, hide_constraint

    def snapshot(self) -> Snapshot:
        snap = self.inner.snapshot()
        jobs = []
        for j in snap.jobs:
            if j.job_id in self.ids:
                if j.held and j.reason in ("JobHeldUser", "JobHeldAdmin"):
                    j = replace(j, held=False, reason="Resources")
                if self.hide:
                    j = replace(j, constraint="")
            jobs.append(j)
        return replace(snap, jobs=tuple(jobs))

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def daemon_config(tmp: Path, account: str, **kw: object) -> DaemonConfig:
    """The live tests' daemon: qssf + topology, deciding every second, scoped to ``account``'s jobs."""
    base: dict[str, object] = dict(
        policy="qssf",
        placement="topology",
        interval=1.0,
        state_file=str(tmp / "state.json"),
        audit_log=str(tmp / "audit.jsonl"),
        backoff_initial=1.0,
        backoff_max=2.0,
        # Cold: the cluster's accounting holds every earlier test's jobs, and these rank by limits.
        history_days=0.0,
        scope=ScopeConfig(partitions=("gpu",), accounts=(account,)),
        slurm=SlurmSettings(conf=os.environ.get("SLURM_CONF"), timeout=20.0),
    )
    base.update(kw)
    return DaemonConfig(**base)  # type: ignore[arg-type]


class StartOnFree:
    """A test policy: starts each listed job on ``per_node`` free GPUs of each of its nodes."""

    name = "start-on-free"
    deployable = True

    def __init__(self, nodes: dict[str, tuple[str, ...]], per_node: int) -> None:
        self.nodes, self.per_node = nodes, per_node

    def decide(self, view: ClusterView) -> Decisions:
        order = [j.job_id for j in view.pending]
        index = view.cluster.node_index
        starts = tuple(
            Start(
                jid,
                Placement.of(
                    [
                        (index[n], tuple(int(g) for g in view.pool.free_gpus(index[n])[: self.per_node]))
                        for n in names
                    ]
                ),
            )
            for jid, names in self.nodes.items()
            if jid in order
        )
        return Decisions(order=order, starts=starts)

    def bind_oracle(self, durations) -> None:  # pragma: no cover - a deployable policy
        pass


def write_toml(path: Path, cfg: DaemonConfig) -> None:
    """The daemon config file ``slurmrl daemon --config`` reads, for the live tests' ``cfg``."""
    path.write_text(
        f'policy = "{cfg.policy}"\nplacement = "{cfg.placement}"\ninterval = {cfg.interval}\n'
        f'state_file = "{cfg.state_file}"\naudit_log = "{cfg.audit_log}"\n'
        "backoff_initial = 1\nbackoff_max = 2\n"
        f'[scope]\npartitions = ["gpu"]\naccounts = {json.dumps(list(cfg.scope.accounts))}\n'
        f'[slurm]\nconf = "{cfg.slurm.conf}"\ntimeout = 20\n'
    )


def array_states(array: str, timeout: float = 60, tasks: int | None = None) -> dict[str, str]:
    """``sacct``'s state of every task of a job array, once none is pending, running or completing.

    Only rows of the array's tasks count (``ID_N``, ``ID_[N-M]``): after a controller
    restored an older state, job ids are handed out again, and until slurmdbd has the
    array's records ``sacct -j ID`` shows the earlier plain job of that id. ``tasks``
    waits for that many rows.
    """
    busy = {"PENDING", "RUNNING", "COMPLETING", "REQUEUED", "CONFIGURING", "SUSPENDED"}

    def read() -> dict[str, str] | None:
        shown = slurm("sacct", "-X", "-n", "-P", "-j", array, "-o", "JobID,State").stdout
        rows = (line.split("|", 1) for line in shown.splitlines() if line.strip())
        states = {job: state for job, state in rows if job.startswith(f"{array}_")}
        if not states or (tasks is not None and len(states) < tasks):
            return None
        return None if busy & {s.split()[0] for s in states.values()} else states

    return wait_for(read, timeout, f"every task of array {array} to end")
