"""meta-rl's adaptation target on the held-out suite's shifts: the adapt commands, and the card's table.

The suite's meta-rl entries (``slurmrl/scenarios/data/heldout.toml``) are
Chronus VCs; the entries of one Chronus trace make one shift (MIX2, SLO).
Each shift adapts on a training-side VC of its own trace (``ADAPT_VC``, the
adaptation VC of the MIX1 curve, role train), ``--episodes`` episodes per
suite seed, then the greedy policy replays the shift's suite VCs whole with
that seed (``slurmrl adapt --eval-scenario``), as the suite rows do. The
curve ``slurmrl adapt`` writes holds three starts: the meta-weights adapted,
a fresh network given the same episodes (scratch), and the meta-weights
unadapted.

The table: avg JCT (mean of the shift's VCs) over the seeds with its 95%
interval, and the paired differences. The target (the learned-policies
issue): after the episodes, better than both scratch and unadapted by more
than their 95% intervals, read here as the adapted interval's upper end
below the lower end of each of the other two.

    python benchmarks/meta_adapt.py --out DIR [--run] [--policy meta-rl] [--episodes 5]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from slurmrl.scenarios.suite import load_suite
from slurmrl.sim.seeds import seed_stat

ADAPT_VC = "ed69ec"
STARTS = ("unadapted", "meta", "scratch")


@dataclass(frozen=True)
class Shift:
    trace: str  # the scenario prefix, e.g. chronus-mix2
    evals: tuple[str, ...]  # the suite's VCs of that trace

    @property
    def name(self) -> str:
        return self.trace.removeprefix("chronus-").upper()

    @property
    def adapt_on(self) -> str:
        return f"{self.trace}-{ADAPT_VC}"


def shifts() -> list[Shift]:
    """The suite's meta-rl entries grouped by trace, in the suite's order."""
    groups: dict[str, list[str]] = {}
    for run in load_suite().for_family("meta-rl"):
        trace = run.scenario.rsplit("-", 1)[0]
        groups.setdefault(trace, []).append(run.scenario)
    return [Shift(trace, tuple(evals)) for trace, evals in groups.items()]


def command(shift: Shift, seed: int, out: Path, policy: str, episodes: int) -> list[str]:
    return [
        "slurmrl",
        "adapt",
        "--policy",
        policy,
        "--scenario",
        shift.adapt_on,
        "--episodes",
        str(episodes),
        "--eval-scenario",
        ",".join(shift.evals),
        "--seed",
        str(seed),
        "--out",
        str(out),
    ]


def folder(out: Path, shift: Shift, seed: int) -> Path:
    return out / f"{shift.trace.removeprefix('chronus-')}-{seed}"


def curve_jcts(path: Path, episodes: int) -> dict[str, float]:
    """Each start's avg JCT after ``episodes`` episodes (unadapted: at any count)."""
    points = json.loads(path.read_text())["points"]
    found = {p["init"]: float(p["avg_jct"]) for p in points if p["episodes"] == episodes}
    missing = [s for s in STARTS if s not in found]
    if missing:
        sys.exit(f"{path}: no point after {episodes} episodes for {', '.join(missing)}")
    return found


def table(shift_rows: Sequence[tuple[Shift, list[dict[str, float]]]], episodes: int) -> list[str]:
    lines = [
        f"| shift | unadapted | meta + {episodes} episodes | scratch + {episodes} episodes "
        "| adapted - unadapted | adapted - scratch | target |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for shift, rows in shift_rows:
        stats = {s: seed_stat([r[s] for r in rows]) for s in STARTS}
        diffs = [seed_stat([r["meta"] - r[other] for r in rows]) for other in ("unadapted", "scratch")]
        top = stats["meta"].mean + stats["meta"].half_width
        met = all(top < stats[o].mean - stats[o].half_width for o in ("unadapted", "scratch"))
        cells = [f"{stats[s].mean:.1f} ± {stats[s].half_width:.1f}" for s in STARTS]
        cells += [f"{d.mean:+.1f} ± {d.half_width:.1f}" for d in diffs]
        lines.append(
            f"| {shift.name} ({', '.join(shift.evals)}) | {' | '.join(cells)} | {'met' if met else 'missed'} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, required=True, help="folder of the adapt runs, one per shift and seed"
    )
    parser.add_argument("--policy", default="meta-rl", help="meta-rl or a Harmony-format checkpoint folder")
    parser.add_argument("--episodes", type=int, default=5, help="adaptation episodes (the target's 5)")
    parser.add_argument("--run", action="store_true", help="run the adapt commands whose curve is missing")
    args = parser.parse_args(argv)
    seeds = load_suite().seeds
    shift_rows = []
    for shift in shifts():
        rows = []
        for seed in seeds:
            where = folder(args.out, shift, seed)
            cmd = command(shift, seed, where, args.policy, args.episodes)
            print(shlex.join(cmd))
            curve = where / "curve.json"
            if args.run and not curve.exists():
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            if curve.exists():
                rows.append(curve_jcts(curve, args.episodes))
        if len(rows) == len(seeds):
            shift_rows.append((shift, rows))
    print()
    if shift_rows:
        print(f"Avg JCT (s), mean of each shift's VCs over seeds {seeds[0]}-{seeds[-1]} with 95% interval:")
        print()
        print("\n".join(table(shift_rows, args.episodes)))
    else:
        print("(not run yet)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
