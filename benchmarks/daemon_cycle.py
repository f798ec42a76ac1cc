"""Cost of one daemon decision cycle on a large synthetic queue: prints its figures.

Builds a snapshot of 10,000 pending jobs on 1,000 nodes x 8 GPUs (about 85%
of GPUs busy, in scattered patterns) and times what the daemon does between
reading Slurm and sending updates: scope filter, policy view, the policy's
decision, and change planning against the record. Slurm's own response time
is excluded. Two cases: a first cycle (empty record: every rank is new) and a
steady cycle (record already holds the previous plan, a few jobs changed).

    python benchmarks/daemon_cycle.py [--jobs 10000] [--nodes 1000] [--runs 5]

Target: at most 0.5 s per cycle (median).
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import time
import tracemalloc
from dataclasses import replace

from slurmrl.cluster.builders import NodeSpec, assemble
from slurmrl.cluster.model import islands_for
from slurmrl.daemon.apply import BATCH, as_updates, plan_calls, record_change
from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.loop import Daemon
from slurmrl.daemon.metrics import DaemonMetrics
from slurmrl.daemon.record import Record
from slurmrl.policy.registry import placement_names, policy_names
from slurmrl.slurm.parse_gres import GpuRequest, GresItem
from slurmrl.slurm.snapshot import SlurmJob, SlurmNode, Snapshot

TARGET_SECONDS = 0.5
RACK_SIZE = 20  # nodes per rack in the synthetic cluster (our choice)


class NoSlurm:
    """Planning never talks to Slurm; any call here would be a bug in the benchmark."""

    def __getattr__(self, name: str):
        raise RuntimeError(f"benchmark must not call Slurm ({name})")


def build(num_jobs: int, num_nodes: int, seed: int = 7) -> Snapshot:
    rng = random.Random(seed)
    specs = [
        NodeSpec(f"gn{i:04d}", 8, "v100", islands_for("nvlink:4", 8), 64, 512000) for i in range(num_nodes)
    ]
    racks = [
        (f"rack{r:03d}", specs[r * RACK_SIZE : (r + 1) * RACK_SIZE])
        for r in range((num_nodes + RACK_SIZE - 1) // RACK_SIZE)
    ]
    cluster = assemble("bench", racks)
    now = 1_700_000_000.0
    jobs: list[SlurmJob] = []
    nodes: list[SlurmNode] = []
    jid = 1
    for spec in specs:
        busy = rng.choice([8, 8, 8, 6, 4, 2, 0, 7, 5])
        taken = sorted(rng.sample(range(8), busy))
        if taken:
            jobs.append(
                SlurmJob(
                    job_id=str(jid),
                    user=f"u{jid % 50}",
                    account=f"a{jid % 7}",
                    partition="gpu",
                    state="RUNNING",
                    submit_time=now - 7200,
                    start_time=now - 3600,
                    time_limit=86400.0,
                    num_nodes=1,
                    nodes=(spec.name,),
                    gpus=GpuRequest(busy, busy, "v100", "tres_per_node"),
                    gpu_alloc=((spec.name, GresItem("v100", busy, tuple(taken))),),
                )
            )
            jid += 1
        nodes.append(
            SlurmNode(
                name=spec.name,
                states=frozenset({"MIXED" if taken else "IDLE"}),
                partitions=("gpu",),
                gpus=(GresItem("v100", 8, tuple(range(8))),),
                gpus_used=(GresItem("v100", len(taken), tuple(taken)),) if taken else (),
                cpus=64,
                memory_mb=512000,
            )
        )
    sizes = [1, 1, 1, 2, 2, 4, 4, 8, 8, 16, 32]
    for i in range(num_jobs):
        gpus = rng.choice(sizes)
        n = max(1, gpus // 8)
        jobs.append(
            SlurmJob(
                job_id=str(jid),
                name=f"train{i}",
                user=f"u{i % 200}",
                account=f"a{i % 7}",
                partition="gpu",
                state="PENDING",
                reason="Priority",
                submit_time=now - num_jobs + i,
                time_limit=float(rng.choice([600, 3600, 4 * 3600, 86400])),
                priority=1000,
                num_nodes=n,
                gpus=GpuRequest(gpus, gpus // n, "v100", "tres_per_node"),
            )
        )
        jid += 1
    return Snapshot(now, "22.05.8", tuple(nodes), tuple(jobs), cluster, "synthetic")


def choose_policy() -> tuple[str, str]:
    if "fifo-backfill" in policy_names() and "topology" in placement_names():
        return "fifo-backfill", "topology"
    return "fifo", "first-fit"


def time_cycle(
    daemon: Daemon, snapshot: Snapshot, runs: int
) -> tuple[list[float], list[float], list[float], int]:
    """Wall and CPU seconds per cycle (CPU time is what a busy shared host cannot inflate)."""
    totals, cpu, policy = [], [], []
    planned = 0
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        plan, _, policy_seconds = daemon.decide(snapshot)
        totals.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        policy.append(policy_seconds)
        planned = len(plan.changes) + plan.deferred
    return totals, cpu, policy, planned


def batching(changes, cap: int) -> str:
    """The batch step: the plan's changes as Slurm calls (one list call per field and value)."""
    t0, c0 = time.perf_counter(), time.process_time()
    calls = plan_calls(as_updates(changes), BATCH)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ids = max((len(c) for c in calls), default=0)
    cycles = -(-len(calls) // cap)
    return (
        f"{len(changes)} changes -> {len(calls)} Slurm calls (up to {ids} jobs per call), "
        f"grouped in {wall * 1000:.1f} ms wall, {cpu * 1000:.1f} ms CPU; {cycles} cycle(s) at "
        f"max_calls_per_cycle={cap}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    t0 = time.perf_counter()
    snap = build(args.jobs, args.nodes)
    built = time.perf_counter() - t0
    policy, placement = choose_policy()
    cfg = DaemonConfig(
        policy=policy, placement=placement, state_file="/nonexistent/slurmrl-bench/state.json", audit_log=""
    )
    daemon = Daemon(cfg, NoSlurm(), metrics=DaemonMetrics(), clock=lambda: snap.time)  # type: ignore[arg-type]
    print(
        f"synthetic snapshot: {args.jobs} pending jobs, {args.nodes} nodes x 8 GPUs, "
        f"{sum(j.is_running for j in snap.jobs)} running jobs; built in {built:.2f} s"
    )
    print(f"policy {policy}+{placement}; {args.runs} runs per case (median)")

    first, first_cpu, first_policy, planned = time_cycle(daemon, snap, args.runs)
    first_plan, _, _ = daemon.decide(snap)
    # Steady state: the record holds the whole previous plan (converged), then
    # the 50 oldest jobs start and 50 new ones arrive.
    full = replace(cfg, max_changes_per_cycle=10**9)
    daemon.config = full
    plan, _, _ = daemon.decide(snap)
    for ch in plan.changes:
        record_change(daemon.record, ch, snap.time)
    daemon.config = cfg

    def applied(job: SlurmJob) -> SlurmJob:  # the job as Slurm shows it once the plan is in
        e = daemon.record.get(job.job_id)
        if e is None:
            return job
        return replace(job, site_factor=e.site_factor, admin_comment=e.admin_comment or job.admin_comment)

    shown = replace(snap, jobs=tuple(applied(j) for j in snap.jobs))
    pend = [j for j in shown.jobs if j.is_pending]
    last = max(int(j.job_id) for j in shown.jobs)
    arrivals = tuple(
        replace(j, job_id=str(last + 1 + i), submit_time=snap.time + 1, site_factor=None, admin_comment="")
        for i, j in enumerate(pend[:50])
    )
    started = {j.job_id for j in pend[:50]}
    moved = replace(
        shown, jobs=tuple(j for j in shown.jobs if j.job_id not in started) + arrivals, time=snap.time + 30
    )
    steady, steady_cpu, steady_policy, replanned = time_cycle(daemon, moved, args.runs)
    steady_plan, _, _ = daemon.decide(moved)
    daemon.record = Record()

    tracemalloc.start()
    daemon.decide(snap)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    for label, totals, cpu, pol, n in (
        ("first cycle", first, first_cpu, first_policy, planned),
        ("steady cycle", steady, steady_cpu, steady_policy, replanned),
    ):
        med = statistics.median(totals)
        verdict = "ok" if med <= TARGET_SECONDS else "OVER TARGET"
        print(
            f"{label:<13} median {med:.3f} s wall (min {min(totals):.3f}, max {max(totals):.3f}), "
            f"{statistics.median(cpu):.3f} s CPU; policy {statistics.median(pol):.3f} s; "
            f"changes planned {n}  [{verdict}, target {TARGET_SECONDS} s]"
        )
    print(f"batching, first cycle:  {batching(first_plan.changes, cfg.max_calls_per_cycle)}")
    print(f"batching, steady cycle: {batching(steady_plan.changes, cfg.max_calls_per_cycle)}")
    print(f"peak traced memory in one cycle: {peak / 2**20:.1f} MiB; process peak RSS {rss_mb:.0f} MiB")


if __name__ == "__main__":
    main()
