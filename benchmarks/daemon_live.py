"""The daemon against a live Slurm: cycles until a queue of N pending jobs holds its order,
Slurm calls and wall per cycle, slurmctld's RPC counts (``sdiag``) and the revert; prints them.

Every node is filled first by jobs outside the daemon's scope, so the N jobs it ranks stay
pending; the daemon then runs back-to-back cycles (policy fifo: every job gets a new value)
until one has nothing left to send, and gives everything back. All jobs are cancelled at
the end. Run it on the test cluster, holding its lock:

    eval "$(contrib/testcluster/testcluster env)"
    flock /tmp/slurmlive.lock python benchmarks/daemon_live.py --jobs 300 1000 3000

Target: a 3,000-job queue converged within 3 cycles with fewer Slurm calls than jobs, and
nothing left after the revert. Times are wall seconds on a shared host, with the daemon
process's CPU seconds beside them; slurmctld's work shows in its RPC counts.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from slurmrl.daemon.config import DaemonConfig, ScopeConfig, SlurmSettings
from slurmrl.daemon.factors import keyed_like, read_factors
from slurmrl.daemon.loop import Daemon, make_backend
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.plan import NOTE_PREFIX

ACCOUNT = f"slurmrl-bench{os.getpid()}"
FILL = f"{ACCOUNT}-fill"
MAX_CYCLES = 8
# RPCs the daemon causes: its writes, and its reads (squeue, sinfo/scontrol show, sprio).
RPCS = ("REQUEST_UPDATE_JOB", "REQUEST_JOB_INFO", "REQUEST_NODE_INFO", "REQUEST_PRIORITY_FACTORS")
_RPC_LINE = re.compile(r"^\s*([A-Z_]+)\s+\(\s*\d+\)\s+count:(\d+)\s+ave_time:(\d+)\s+total_time:(\d+)")


def run(*cmd: str, timeout: float = 120) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed: {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout


def sdiag() -> dict[str, tuple[int, int]]:
    """RPC type -> (count, total microseconds) since slurmctld's last reset."""
    counts: dict[str, tuple[int, int]] = {}
    for line in run("sdiag").split("Remote Procedure Call statistics by message type", 1)[-1].splitlines():
        if "statistics by user" in line:
            break
        if m := _RPC_LINE.match(line):
            counts[m.group(1)] = (int(m.group(2)), int(m.group(4)))
    return counts


def sbatch(account: str, *args: str) -> str:
    return run(
        "sbatch",
        "--parsable",
        "--chdir=/tmp",
        "--output=/dev/null",
        f"--account={account}",
        f"--job-name={account}",
        "-p",
        "gpu",
        *args,
        "--wrap",
        "sleep 3600",
    ).split(";")[0]


def gpus_per_node() -> dict[str, int]:
    out: dict[str, int] = {}
    for line in run("sinfo", "-h", "-N", "-p", "gpu", "-o", "%N %G").splitlines():
        name, gres = line.split()
        if m := re.search(r"gpu(?::[^:(,]+)?:(\d+)", gres):
            out[name] = int(m.group(1))
    return out


def fill_every_node() -> None:
    """One job per node holding all its GPUs, outside the daemon's scope; waits until they run."""
    nodes = gpus_per_node()
    for node, n in nodes.items():
        sbatch(FILL, f"-w{node}", "-N1", f"--gres=gpu:{n}")
    end = time.time() + 120
    while time.time() < end:
        states = run("squeue", "-h", "-A", FILL, "-o", "%T").split()
        if len(states) == len(nodes) and all(s == "RUNNING" for s in states):
            return
        time.sleep(1)
    raise SystemExit("filler jobs did not start within 120 s")


def submit(n: int) -> None:
    """``n`` one-GPU jobs, several sbatch at a time (each is one submission RPC)."""
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: sbatch(ACCOUNT, "-N1", "--gres=gpu:1", "-t", "60"), range(n)))


def cancel_all() -> None:
    for account in (ACCOUNT, FILL):
        subprocess.run(["scancel", "-A", account], capture_output=True, timeout=120)
    end = time.time() + 120
    while time.time() < end and run("squeue", "-h", "-A", f"{ACCOUNT},{FILL}", "-o", "%i").strip():
        time.sleep(1)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def left_behind(daemon: Daemon) -> int:
    """Jobs of the benchmark still showing a SiteFactor or a note after the revert."""
    snap = daemon.backend.snapshot()
    factors = keyed_like(read_factors(daemon.backend, daemon.config), snap.jobs)
    ours = [j for j in snap.jobs if j.account == ACCOUNT and j.is_pending]
    return sum(
        1
        for j in ours
        if (factors.get(j.job_id) and factors[j.job_id].site_factor) or NOTE_PREFIX in (j.admin_comment or "")
    )


def rpc_diff(before: dict, after: dict) -> str:
    parts = []
    for name in RPCS:
        count = after.get(name, (0, 0))[0] - before.get(name, (0, 0))[0]
        micros = after.get(name, (0, 0))[1] - before.get(name, (0, 0))[1]
        parts.append(f"{name} {count} ({micros / max(count, 1) / 1000:.2f} ms avg)")
    total = sum(c for c, _ in after.values()) - sum(c for c, _ in before.values())
    return ", ".join(parts) + f"; all types {total}"


def bench(n: int, tmp: Path) -> None:
    cfg = DaemonConfig(
        policy="fifo",
        placement="first-fit",
        interval=1.0,
        state_file=str(tmp / f"state-{n}.json"),
        audit_log="",
        scope=ScopeConfig(partitions=("gpu",), accounts=(ACCOUNT,)),
        slurm=SlurmSettings(conf=os.environ.get("SLURM_CONF"), timeout=60.0),
    )
    t0 = time.perf_counter()
    submit(n)
    print(f"\nN={n}: submitted in {time.perf_counter() - t0:.1f} s", flush=True)
    time.sleep(3)  # the scheduler has looked at the new jobs once
    d = Daemon(cfg, make_backend(cfg), metrics=DaemonMetrics())
    before = sdiag()
    cycles = 0
    converged = None
    try:
        for k in range(1, MAX_CYCLES + 1):
            w0, c0 = time.perf_counter(), cpu()
            out = d.cycle()
            wall, used = time.perf_counter() - w0, cpu() - c0
            r = out.result
            assert r is not None
            cycles = k
            print(
                f"  cycle {k}: {out.plan.ranked} ranked, {len(r.sent)} changes sent in {r.calls} calls "
                f"({r.updates} job updates, {r.seconds:.2f} s sending), {len(r.failed)} failed, "
                f"{out.plan.deferred + r.unsent} left; cycle {wall:.2f} s wall, {used:.2f} s CPU",
                flush=True,
            )
            if r.stopped_by is not None:
                print(f"  cycle {k} stopped: {r.stopped_by.format()}")
            if not r.sent and not r.failed and out.plan.deferred + r.unsent == 0:
                converged = k - 1
                break
        after = sdiag()
        print(
            f"  converged after {converged} cycle(s)"
            if converged is not None
            else f"  not converged in {cycles} cycles"
        )
        print(f"  slurmctld RPCs over {cycles} cycles (sdiag): {rpc_diff(before, after)}")
        w0, c0 = time.perf_counter(), cpu()
        rev = d.revert("benchmark done")
        print(
            f"  revert: {rev.reverted} jobs given back, {rev.remaining} remaining, "
            f"{time.perf_counter() - w0:.2f} s wall, {cpu() - c0:.2f} s CPU; "
            f"jobs still showing a daemon value: {left_behind(d)}",
            flush=True,
        )
        print(f"  slurmctld RPCs with the revert (sdiag): {rpc_diff(after, sdiag())}")
    finally:
        d.close()
        subprocess.run(["scancel", "-A", ACCOUNT], capture_output=True, timeout=120)
        end = time.time() + 120
        while time.time() < end and run("squeue", "-h", "-A", ACCOUNT, "-o", "%i").strip():
            time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[300, 1000, 3000])
    args = parser.parse_args()
    if not os.environ.get("SLURM_CONF"):
        raise SystemExit('SLURM_CONF is not set: eval "$(contrib/testcluster/testcluster env)" first')
    version = run("sinfo", "--version").strip()
    print(f"{version}; {len(gpus_per_node())} nodes filled; daemon defaults (batch list calls, bands)")
    try:
        fill_every_node()
        with tempfile.TemporaryDirectory() as tmp:
            for n in args.jobs:
                bench(n, Path(tmp))
    finally:
        cancel_all()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
