"""Training throughput of topdrl's shipped recipe: decisions per CPU-second, and what 30 CPU-minutes buy.

Runs the recipe of ``policies/topdrl-philly`` (led by ``sjf-limit``,
episodes from ``philly-512-week1`` and ``philly-512-week2-head``, the greedy
policy replayed on ``philly-448-week2-val`` every 15 updates) for a few
updates as a user would (``slurmrl train`` in a fresh process, into a
temporary folder), then reads the CPU seconds the run logged after each
update (``log.csv``: every thread of the process) and prints:

    cpu_s            CPU of the whole run (update 0's validation included)
    per_1024         CPU per update of 1,024 decisions, the validations in between
                     counted in, from the first validation after update 0 on
    in_30_cpu_min    decisions 30 CPU-minutes buy at that rate
    target           819,200 (ten times the 81,920 decisions of the first recipe)

It also times one minibatch of the recipe (256 observations of the 8x8x8
cluster) forward and backward through TopDRL's network on one thread, the
grain of the PPO update:

    minibatch_ms     best of five rounds of 20, random inputs of the recipe's shapes

and the recipe's environment alone (``topdrl-philly-v2`` led by ``sjf-limit``,
no network: uniformly random picks among the allowed actions, seeded), the
rollout's share that is not the network:

    env_ms           CPU milliseconds per step over 3,000 steps, the resets
                     (each a warm-up of up to 6,144 jobs under ``slurm``) included
    handover_mb      memory one hand-over kept by ``--start-stride`` holds (the
                     simulator at the hand-over and the lead's paired replay)

Run the code before and after a change alternately (``PYTHONPATH=...``
picks the package) on an otherwise idle machine: CPU time of one run moves
by several percent with what the other core does.

With ``--start-stride N`` the recipe starts episodes only at every N-th job,
so each start's warm-up and paired replay are played once and reused: the
saving grows with the run (more episodes revisit a start), so compare strides
over runs of the same length, the longer the closer to a whole training run.

With ``--update-epochs E`` the PPO update passes E times over each rollout
instead of the recipe's 4 (the update's share of the CPU shrinks with E).

    python benchmarks/train_speed.py [--updates 30] [--seed 0] [--env-only] [--start-stride N] [--update-epochs E]
"""

from __future__ import annotations

import argparse
import csv
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECIPE = [
    "train",
    "--policy",
    "topdrl",
    "--lead",
    "sjf-limit",
    "--scenario",
    "philly-512-week1,philly-512-week2-head",
    "--validate",
    "philly-448-week2-val",
    "--no-progress",
]
DECISIONS_PER_UPDATE = 1024  # the recipe's 2 environments x 512 steps
VALIDATE_EVERY = 15
TARGET_DECISIONS = 819_200
BUDGET_CPU_S = 30 * 60


def run(updates: int, seed: int, out: Path, extra: list[str]) -> float:
    """Train into ``out``; the process wall in seconds."""
    steps = updates * DECISIONS_PER_UPDATE
    # -P: the package from PYTHONPATH or the install, never the current folder's.
    argv = [sys.executable, "-P", "-c", "import sys; from slurmrl.cli import run; sys.exit(run())", *RECIPE]
    argv += ["--steps", str(steps), "--seed", str(seed), "--out", str(out), *extra]
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def cpu_by_update(log: Path) -> dict[int, float]:
    with log.open() as f:
        return {int(row["update"]): float(row["cpu_s"]) for row in csv.DictReader(f)}


def minibatch_ms(batch: int = 256, rounds: int = 5, reps: int = 20) -> float:
    """Milliseconds of one forward and backward pass of TopDRL's network over ``batch`` observations."""
    import torch

    from slurmrl.rl.nets.config import NetConfig
    from slurmrl.rl.nets.torch_nets import TopDRLNet

    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = TopDRLNet(NetConfig(cluster_channels=7, conv=16, global_features=6, hidden=64, job_features=41))
    jobs, grid, glob = torch.rand(batch, 32, 41), torch.rand(batch, 7, 8, 8, 8), torch.rand(batch, 6)

    def step() -> None:
        logits, values = net(jobs, grid, glob)
        (logits.sum() + values.sum()).backward()

    step()
    best = math.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            step()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e3


def env_ms(steps: int = 3000) -> float:
    """CPU milliseconds per step of the recipe's environment under seeded random allowed actions."""
    import numpy as np

    from slurmrl.rl.env import make_env

    env = make_env("topdrl-philly-v2", lead="sjf-limit")
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=1)
    t0 = time.process_time()
    for step in range(steps):
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs["mask"]))))
        if terminated or truncated:
            obs, _ = env.reset(seed=2 + step)
    return (time.process_time() - t0) / steps * 1e3


def print_env_ms() -> None:
    print(f"env_ms {env_ms():.2f} (CPU per step of the recipe's environment, random picks, resets included)")


def handover_mb(starts: int = 4) -> float:
    """Memory one kept hand-over of ``--start-stride`` holds (simulator at the hand-over and paired replay)."""
    import gc
    import tracemalloc

    from slurmrl.rl.env import make_env

    env = make_env("topdrl-philly-v2", lead="sjf-limit", start_stride=256)
    env.reset(seed=1, options={"start": 28 * 256})  # every start here has the full warm-up
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(1, starts + 1):
        env.reset(seed=1, options={"start": (28 + i) * 256})
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return grown / starts / 1e6


def print_handover_mb() -> None:
    print(f"handover_mb {handover_mb():.1f} (memory of one hand-over kept by --start-stride)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--updates", type=int, default=30, help="a multiple of 15 (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env-only", action="store_true", help="only the environment's figure (env_ms)")
    parser.add_argument(
        "--start-stride",
        type=int,
        default=1,
        help="the recipe with `--start-stride N` (episodes start at every N-th job, warm-ups reused)",
    )
    parser.add_argument(
        "--update-epochs",
        type=int,
        default=0,
        help="the recipe with `--update-epochs E` (default: the recipe's own, 4)",
    )
    args = parser.parse_args()
    if args.env_only:
        print_env_ms()
        print_handover_mb()
        return
    if args.updates < 2 * VALIDATE_EVERY or args.updates % VALIDATE_EVERY:
        parser.error(f"--updates must be a multiple of {VALIDATE_EVERY}, at least {2 * VALIDATE_EVERY}")
    with tempfile.TemporaryDirectory() as tmp:
        extra = ["--start-stride", str(args.start_stride)] if args.start_stride != 1 else []
        extra += ["--update-epochs", str(args.update_epochs)] if args.update_epochs else []
        wall = run(args.updates, args.seed, Path(tmp) / "run", extra)
        cpu = cpu_by_update(Path(tmp) / "run" / "log.csv")
    last = max(cpu)
    per_update = (cpu[last] - cpu[VALIDATE_EVERY]) / (last - VALIDATE_EVERY)
    per_1024 = per_update * 1024 / DECISIONS_PER_UPDATE
    decisions = BUDGET_CPU_S / per_update * DECISIONS_PER_UPDATE
    verdict = "met" if decisions >= TARGET_DECISIONS else "missed"
    flags = f", --start-stride {args.start_stride}" if args.start_stride != 1 else ""
    flags += f", --update-epochs {args.update_epochs}" if args.update_epochs else ""
    print(
        f"topdrl recipe{flags}, seed {args.seed}: {last} updates, {last * DECISIONS_PER_UPDATE:,} decisions"
    )
    print(f"wall_s {wall:.1f}  cpu_s {cpu[last]:.1f}  per_1024 {per_1024:.2f} CPU-s (validation included)")
    print(f"in_30_cpu_min {decisions:,.0f} decisions  target {TARGET_DECISIONS:,}: {verdict}")
    print(f"minibatch_ms {minibatch_ms():.1f} (256 observations, forward and backward, one thread)")
    print_env_ms()
    print_handover_mb()


if __name__ == "__main__":
    main()
