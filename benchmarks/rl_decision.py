"""Speed of the trained TopDRL policy: prints its figures.

1. One decision on a 64-node (8x8x8 V100) cluster, half busy, with a
   128-job window over a 600-job queue: building the observation, one
   network forward pass, and a whole ``decide`` pass (picks until nothing
   fits). Target: one decision <= 5 ms on CPU.
2. Replaying the full 46,070-job shared Philly window on 8x8x8 V100 under the
   policy. Target: <= 120 s.

    python benchmarks/rl_decision.py [--policy DIR] [--skip-replay]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.rl.topdrl import TopDRLPolicy, shipped_policy_dir
from slurmrl.scenarios.catalog import PHILLY
from slurmrl.sim.experiment import prepare, run_policy
from slurmrl.traces.store import locate

DECISION_TARGET_MS = 5.0
REPLAY_TARGET_S = 120.0


def synthetic_view(seed: int = 0, pending: int = 600) -> ClusterView:
    rng = np.random.default_rng(seed)
    cluster = load_cluster("8x8x8:v100")
    pool = GpuPool(cluster)
    running = []
    for node in range(0, len(cluster.nodes), 2):  # every other node full: half the GPUs busy
        p = Placement.of([(node, list(range(8)))])
        pool.allocate(p)
        running.append(
            JobView(f"r{node}", 8, 0.0, group="vc0", time_limit=36000.0, start_time=100.0, placement=p)
        )
    jobs = [
        JobView(
            f"p{i}",
            int(rng.choice([1, 1, 1, 2, 4, 8, 16])),
            float(i),
            group=f"vc{i % 7}",
            time_limit=float(rng.choice([900.0, 3600.0, 14400.0, 86400.0])),
        )
        for i in range(pending)
    ]
    return ClusterView(now=5000.0, cluster=cluster, pool=pool.readonly(), pending=jobs, running=running)


def bench_decision(policy_dir: Path, repeats: int = 200) -> None:
    policy = TopDRLPolicy.from_dir(policy_dir, window=128)
    view = synthetic_view()
    for _ in range(10):
        policy.scores(view)
    one = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        policy.scores(view)
        one.append((time.perf_counter() - t0) * 1e3)
    whole, picks = [], 0
    for _ in range(max(1, repeats // 10)):
        fresh = TopDRLPolicy.from_dir(policy_dir, window=128)
        t0 = time.perf_counter()
        d = fresh.decide(view)
        whole.append((time.perf_counter() - t0) * 1e3)
        picks = len(d.starts)
    med = statistics.median(one)
    print(
        f"one decision (window 128, 600 queued, 64 nodes): median {med:.2f} ms, "
        f"p95 {np.percentile(one, 95):.2f} ms  [target <= {DECISION_TARGET_MS} ms: "
        f"{'ok' if med <= DECISION_TARGET_MS else 'MISSED'}]"
    )
    print(
        f"whole decide pass ({picks} starts): median {statistics.median(whole):.1f} ms "
        f"({statistics.median(whole) / max(picks, 1):.2f} ms per start)"
    )


def bench_replay(policy_dir: Path) -> None:
    workload = prepare(trace=str(locate(PHILLY)), cluster="8x8x8:v100")
    policy = TopDRLPolicy.from_dir(policy_dir)
    t0 = time.perf_counter()
    out = run_policy(workload, policy)
    wall = time.perf_counter() - t0
    print(
        f"full Philly window ({len(workload.trace.jobs)} jobs, 8x8x8 V100): {wall:.1f} s, "
        f"{out.meta['decisions']} passes, avg JCT {out.summary['avg_jct']:.0f} s  "
        f"[target <= {REPLAY_TARGET_S:.0f} s: {'ok' if wall <= REPLAY_TARGET_S else 'MISSED'}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", type=Path, default=None, help="checkpoint folder (default: shipped)")
    parser.add_argument("--skip-replay", action="store_true")
    args = parser.parse_args()
    policy_dir = args.policy or shipped_policy_dir()
    bench_decision(policy_dir)
    if not args.skip_replay:
        bench_replay(policy_dir)


if __name__ == "__main__":
    main()
