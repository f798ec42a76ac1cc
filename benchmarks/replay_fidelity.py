"""Simulator fidelity: one contended Philly window replayed on the live cluster and simulated.

Runs stock Slurm and the daemon with each policy on the cluster of
``$SLURM_CONF`` (``slurmrl replay``), writes each live run to
``OUT/live/<label>`` and its simulated twin (``--speed-model none``, the
same submitted jobs) to ``OUT/sim/<label>``, then prints the fidelity table
(``slurmrl report fidelity OUT``). ``--twins-only`` recomputes the twins
without touching the cluster (the live runs must exist).

    eval "$(contrib/testcluster/testcluster env)"
    python benchmarks/replay_fidelity.py --out /tmp/fidelity

Default window: the embedded Philly week from hour 156, its first 300 jobs,
on the loopback test cluster (64 GPUs), at 200 trace seconds per wall second:
about 6 minutes of wall time per policy.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from slurmrl.replay.daemon_proc import DaemonSetup
from slurmrl.replay.experiment import ReplayRequest, live_cluster, replay, resolve_conf, run_twin, save
from slurmrl.replay.plan import plan_replay
from slurmrl.report.fidelity import format_fidelity, load_fidelity
from slurmrl.sim.experiment import prepare

POLICIES = ("slurm", "fifo-backfill", "qssf", "topdrl")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--trace", default="embedded:philly-sample")
    ap.add_argument("--start", type=float, default=156 * 3600.0)
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--speedup", type=float, default=200.0)
    ap.add_argument("--policies", default=",".join(POLICIES), help="'slurm' = stock Slurm, no daemon")
    ap.add_argument("--twins-only", action="store_true")
    args = ap.parse_args()

    conf = resolve_conf(os.environ.get("SLURM_CONF"))
    live_cluster(conf)
    workload = prepare(trace=args.trace, cluster=conf, start=args.start, limit=args.limit)
    print(f"{len(workload.trace.jobs)} jobs from {args.trace} at hour {args.start / 3600:g}, "
          f"x{args.speedup:g}, on {workload.cluster.describe()}", flush=True)
    for name in args.policies.split(","):
        setup = None if name == "slurm" else DaemonSetup(name)
        label = "stock-slurm" if setup is None else name
        request = ReplayRequest(workload, args.speedup, setup, args.out / "live" / label, conf)
        t0 = time.monotonic()
        if args.twins_only:
            plan = plan_replay(workload.trace, speedup=args.speedup, gpus_per_node=workload.cluster.max_gpus_per_node,
                               submit_user=_user())
            save(args.out / "sim" / label, run_twin(request, plan))
        else:
            replay(request, say=lambda m: print(m, flush=True), twin_out=args.out / "sim" / label)
        print(f"{label}: {time.monotonic() - t0:.0f} s", flush=True)
    for fid in load_fidelity([args.out]):
        print(format_fidelity(fid))
    return 0


def _user() -> str:
    import getpass

    return getpass.getuser()


if __name__ == "__main__":
    sys.exit(main())
