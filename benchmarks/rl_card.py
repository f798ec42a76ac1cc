"""A learned policy family on its held-out suite: the compare commands, and the card's tables from their output.

For every entry of the family in a frozen suite (``--suite``: the first,
``slurmrl/scenarios/data/heldout.toml``, by default; ``heldout-late``, the
second; ``heldout-tail``, the third) two ``slurmrl compare`` runs are made over the suite's seeds:

* every deployable heuristic (each registered ordering x each placement) and
  the clairvoyant references (``sjf-oracle``, ``srtf-oracle``, and
  ``srtf-oracle-elastic`` on elastic runs) on every placement, so H and O
  are the strongest rows there are. On a cluster of one GPU type
  ``type-aware`` is left out: it then places exactly as ``topology`` does
  (``slurmrl/policy/placement/type_aware.py``), so its rows would repeat
  topology's;
* each learned policy asked for (``--learned``, compare's NAME[+PLACEMENT]) in a
  compare of its own, ``OUT/<entry>/learned-<NAME+PLACEMENT as one path component>``.

Kept apart so a new checkpoint re-runs only its own rows, over the same
heuristic runs, and the tables show the learned rows asked for; ``--apart NAME``
runs a heuristic ordering (on every placement) in a compare of its own,
``OUT/<entry>/heuristics-NAME``, so an ordering registered after the
heuristics ran adds its rows, and may become H, without re-running the rest. ``--run`` runs
the commands whose folder has no result yet; without it the script only
prints the commands and the tables of what is there. The tables: every row
(mean over the seeds, 95% interval on avg JCT), then per learned row the gap
closure (:mod:`slurmrl.report.gap`), makespan and ftf_rho_max against H,
and the verdict on the learned-policy targets (:class:`slurmrl.report.gap.Targets`).

    python benchmarks/rl_card.py topdrl --learned policies/topdrl-philly+topology --out DIR --run
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from slurmrl.report.gap import GapClosure, format_stat, gap_closures, table_row, verdicts
from slurmrl.scenarios.suite import DEFAULT_SUITE, SHIPPED_SUITES, SuiteRun, load_suite
from slurmrl.sim.results import run_folder
from slurmrl.sim.seeds import SeedStat, seed_stat

REFERENCES = ("sjf-oracle", "srtf-oracle")
ELASTIC_REFERENCE = "srtf-oracle-elastic"
SHOWN = ("avg_jct", "p95_jct", "makespan", "ftf_rho_max")


@dataclass(frozen=True)
class Entry:
    """One suite run of the family and where its two compare runs go."""

    run: SuiteRun
    seeds: tuple[int, ...]
    folder: Path

    @property
    def elastic(self) -> bool:
        return self.run.elastic != "off"

    @property
    def title(self) -> str:
        extra = [f"speed model {self.run.speed_model}"]
        if self.elastic:
            extra.append(f"elastic {self.run.elastic}")
        return f"{self.run.scenario} ({', '.join(extra)}; seeds {self.seeds[0]}-{self.seeds[-1]})"

    def command(self, policies: Sequence[str], part: str) -> list[str]:
        return [
            "slurmrl",
            "compare",
            "--scenario",
            self.run.scenario,
            "--seed",
            str(self.seeds[0]),
            "--seeds",
            str(len(self.seeds)),
            "--speed-model",
            self.run.speed_model,
            "--elastic",
            self.run.elastic,
            "--no-progress",
            "--out",
            str(self.folder / part),
            "--policies",
            ",".join(policies),
        ]


def entries(family: str, out: Path, suite_name: str) -> list[Entry]:
    suite = load_suite(suite_name)
    seeds = suite.seeds
    if list(seeds) != list(range(seeds[0], seeds[0] + len(seeds))):
        sys.exit(f"{suite.source}: 'seeds' must be consecutive for compare --seeds")
    runs = suite.for_family(family)
    if not runs:
        sys.exit(f"{suite.source}: no entry for '{family}' (families: {', '.join(suite.families())})")
    return [Entry(r, seeds, out / _key(r)) for r in runs]


def _key(run: SuiteRun) -> str:
    key = run.scenario
    if run.speed_model != "placement":
        key += f"-{run.speed_model}"
    if run.elastic != "off":
        key += "-elastic-" + run.elastic.removeprefix("fraction:")
    return key


def heuristic_rows(entry: Entry, apart: Sequence[str] = ()) -> list[str]:
    """Every deployable ordering but those run ``apart`` and every clairvoyant reference, each on every placement that differs."""
    from slurmrl.policy.registry import policy_entry, policy_names

    references = REFERENCES + ((ELASTIC_REFERENCE,) if entry.elastic else ())
    orderings = [
        n
        for n in policy_names()
        if policy_entry(n).deployable and not policy_entry(n).learned and n not in apart
    ]
    return [f"{n}+{p}" for n in (*orderings, *references) for p in placements_of(entry)]


def placements_of(entry: Entry) -> list[str]:
    """Every placement; ``type-aware`` only where the cluster has several GPU types (else it is ``topology``)."""
    from slurmrl.cluster.spec import load_cluster
    from slurmrl.policy.registry import placement_names
    from slurmrl.scenarios.catalog import get_scenario

    cluster = load_cluster(get_scenario(entry.run.scenario).cluster_spec())
    return [p for p in placement_names() if p != "type-aware" or len(cluster.gpu_types) > 1]


def parts_of(entry: Entry, apart: Sequence[str], learned: Sequence[str]) -> dict[str, list[str]]:
    """The compare runs of an entry: the heuristics, each ordering run apart, the learned rows."""
    parts = {"heuristics": heuristic_rows(entry, apart)}
    for name in apart:
        parts[f"heuristics-{name}"] = [f"{name}+{p}" for p in placements_of(entry)]
    for policy in learned:
        part = learned_part(policy)
        if part in parts:
            sys.exit(f"--learned {policy}: its folder {part} is that of another --learned")
        parts[part] = [policy]
    return parts


def learned_part(policy: str) -> str:
    """One learned row's folder, named for it as compare names a run's (the heuristics' folders are shared)."""
    return "learned-" + run_folder(policy)


def run_missing(entry: Entry, parts: dict[str, list[str]]) -> None:
    for part, policies in parts.items():
        if policies and not (entry.folder / part / "aggregate.json").exists():
            print(f"running: {shlex.join(entry.command(policies, part))}", file=sys.stderr, flush=True)
            subprocess.run(entry.command(policies, part), check=True, stdout=subprocess.DEVNULL)


def per_seed_rows(entry: Entry, parts: Sequence[str]) -> list[list[dict[str, object]]]:
    """Each seed's rows of every run (a row is keyed by policy+placement; the first run's copy wins)."""
    out = []
    for seed in entry.seeds:
        rows: dict[str, dict[str, object]] = {}
        for part in parts:
            path = entry.folder / part / f"seed-{seed}" / "comparison.json"
            if path.exists():
                for r in json.loads(path.read_text())["rows"]:
                    rows.setdefault(f"{r['policy']}+{r['placement']}", r)
        out.append(list(rows.values()))
    return out


def stats(per_seed: list[list[dict[str, object]]]) -> dict[str, dict[str, SeedStat]]:
    """Per row label, mean and 95% interval of the shown figures over the seeds that have the row."""
    labels = {f"{r['policy']}+{r['placement']}": r for rows in per_seed for r in rows}
    out = {}
    for label in labels:
        runs = [r for rows in per_seed for r in rows if f"{r['policy']}+{r['placement']}" == label]
        out[label] = {k: seed_stat([_num(r.get(k)) for r in runs]) for k in SHOWN}
    return out


def _num(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def _pct(value: float, base: float) -> str:
    return f"{100.0 * (value / base - 1.0):+.1f}%" if base and math.isfinite(value * base) else "n/a"


def rows_table(per_seed: list[list[dict[str, object]]]) -> list[str]:
    """Every row, best first; H is the best deployable heuristic, as the gap closure chooses it."""
    figures = stats(per_seed)
    kinds = {f"{r['policy']}+{r['placement']}": r for r in per_seed[0]}
    heuristics = [table_row(r) for r in per_seed[0]]
    h = min(
        (figures[r.label]["avg_jct"].mean for r in heuristics if r.deployable and not r.learned),
        default=math.nan,
    )
    out = [
        "| policy | placement | avg JCT (s) | p95 JCT (s) | makespan (s) | ftf_rho_max | avg JCT vs H |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for label in sorted(figures, key=lambda k: figures[k]["avg_jct"].mean):
        r, f = kinds.get(label, {}), figures[label]
        star = "" if r.get("deployable", True) else "*"
        jct = f"{f['avg_jct'].mean:,.0f} ± {f['avg_jct'].half_width:,.0f}"
        out.append(
            f"| {r.get('policy', label)}{star} | {r.get('placement', '')} | {jct} | {f['p95_jct'].mean:,.0f} | "
            f"{f['makespan'].mean:,.0f} | {f['ftf_rho_max'].mean:,.2f} | {_pct(f['avg_jct'].mean, h)} |"
        )
    return out


def verdict(g: GapClosure, figures: dict[str, dict[str, SeedStat]]) -> str:
    """The learned-policy targets (:class:`slurmrl.report.gap.Targets`), each with its figure."""
    p, h = figures[g.policy], figures[g.heuristic]
    makespan = (p["makespan"].mean, h["makespan"].mean)
    ftf = (p["ftf_rho_max"].mean, h["ftf_rho_max"].mean)
    return "; ".join(map(str, verdicts(g, makespan, ftf)))


def learned_lines(gaps: Sequence[GapClosure], figures: dict[str, dict[str, SeedStat]]) -> list[str]:
    if not gaps:
        return ["(no learned row with both a heuristic and a reference yet)"]
    g0 = gaps[0]
    out = [
        f"H = {g0.heuristic} ({g0.heuristic_jct.mean:,.0f} s), headroom (H - O) / H {format_stat(g0.headroom)}",
        "",
        "| learned policy | O | gap closure, avg JCT | gap closure, excess over run time | avg JCT vs H | targets |",
        "|---|---|---:|---:|---:|---|",
    ]
    for g in gaps:
        out.append(
            f"| {g.policy} | {g.reference}* | {format_stat(g.jct)} | {format_stat(g.excess)} | "
            f"{format_stat(g.vs_heuristic)} | {verdict(g, figures)} |"
        )
    return out


def card(entry: Entry, commands: dict[str, list[str]]) -> list[str]:
    per_seed = per_seed_rows(entry, list(commands))
    out = [f"### {entry.title}", "", "```sh"]
    out += [shlex.join(entry.command(p, part)) for part, p in commands.items() if p]
    out += ["```", ""]
    if not any(per_seed):
        return [*out, "(not run yet)", ""]
    gaps = gap_closures([[table_row(r) for r in rows] for rows in per_seed], elastic=entry.elastic)
    return [*out, *rows_table(per_seed), "", *learned_lines(gaps, stats(per_seed)), ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family", help="a family of the suite: topdrl, harmony, maifs, meta-rl")
    parser.add_argument(
        "--learned", action="append", default=[], help="compare's NAME[+PLACEMENT] (repeatable)"
    )
    parser.add_argument("--out", type=Path, required=True, help="folder of the compare runs")
    parser.add_argument(
        "--suite",
        default=DEFAULT_SUITE,
        help=f"a shipped suite ({', '.join(SHIPPED_SUITES)}) or a suite file; default: {DEFAULT_SUITE}",
    )
    parser.add_argument("--run", action="store_true", help="run the commands whose results are missing")
    parser.add_argument("--only", default="", help="comma-separated scenarios: only these entries")
    parser.add_argument(
        "--apart",
        default="",
        help="comma-separated orderings run in a compare of their own (heuristics-NAME), "
        "so one registered after the heuristics ran adds its rows without re-running the rest",
    )
    args = parser.parse_args()
    apart = [n for n in args.apart.split(",") if n]
    chosen = set(filter(None, args.only.split(",")))
    family = entries(args.family, args.out, args.suite)
    unknown = sorted(chosen - {e.run.scenario for e in family})
    if unknown:
        known = ", ".join(e.run.scenario for e in family)
        sys.exit(f"--only: no {args.family} entry {', '.join(unknown)} in the suite (its entries: {known})")
    for entry in family:
        if chosen and entry.run.scenario not in chosen:
            continue
        commands = parts_of(entry, apart, args.learned)
        if args.run:
            run_missing(entry, commands)
        print("\n".join(card(entry, commands)), flush=True)


if __name__ == "__main__":
    main()
