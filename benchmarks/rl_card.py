"""The evaluation tables of policies/topdrl-philly/card.md, from `slurmrl compare --out DIR` folders.

Reads each folder's comparison.json (folders of the same workload are merged:
the simulator is deterministic, so a row is the same whichever run made it)
and prints, per week, every row sorted by
average JCT (with finish-time fairness and the distance to the best deployable
heuristic and to the avg-JCT lower bound), then the learned rows (checkpoint
folders, or the registered ``topdrl``) against the best deployable heuristic:
avg JCT, makespan and ftf_rho_max per checkpoint and their mean. Prints only;
the runs themselves are the compare commands the card lists.

    python benchmarks/rl_card.py /tmp/cmp-week3 /tmp/cmp-week4
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Row:
    policy: str
    placement: str
    deployable: bool
    avg_jct: float
    p95_jct: float
    makespan: float
    ftf_rho_max: float
    lower_bound: float

    @property
    def learned(self) -> bool:
        """A trained network: a checkpoint folder or the registered ``topdrl`` (not its no-network baseline)."""
        return self.policy != "topdrl-first" and "topdrl" in self.policy

    @property
    def label(self) -> str:
        return f"{self.policy}{'' if self.deployable else '*'}"


def load_rows(folder: Path) -> tuple[str, list[Row]]:
    data = json.loads((folder / "comparison.json").read_text())
    rows = [
        Row(
            str(r["policy"]),
            str(r["placement"]),
            bool(r["deployable"]),
            float(r["avg_jct"]),
            float(r["p95_jct"]),
            float(r["makespan"]),
            float(r["ftf_rho_max"]) if r.get("ftf_rho_max") is not None else float("nan"),
            float(r["avg_jct_lower_bound"]),
        )
        for r in data["rows"]
    ]
    return str(data["meta"].get("workload", folder.name)), rows


def best_heuristic(rows: list[Row]) -> Row:
    return min((r for r in rows if r.deployable and not r.learned), key=lambda r: r.avg_jct)


def pct(value: float, base: float) -> str:
    return f"{100.0 * (value / base - 1.0):+.1f}%"


def table(rows: list[Row]) -> list[str]:
    best = best_heuristic(rows)
    out = [
        "| policy | placement | avg JCT (s) | p95 JCT (s) | makespan (s) | ftf_rho_max | JCT vs best deployable | JCT / lower bound |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: r.avg_jct):
        out.append(
            f"| {r.label} | {r.placement} | {r.avg_jct:,.0f} | {r.p95_jct:,.0f} | {r.makespan:,.0f} | "
            f"{r.ftf_rho_max:.2f} | {pct(r.avg_jct, best.avg_jct)} | {r.avg_jct / r.lower_bound:.2f} |"
        )
    return out


def learned_summary(rows: list[Row]) -> list[str]:
    best = best_heuristic(rows)
    learned = [r for r in rows if r.learned]
    out = [
        f"best deployable heuristic: {best.policy}+{best.placement} (avg JCT {best.avg_jct:,.0f} s, "
        f"makespan {best.makespan:,.0f} s, ftf_rho_max {best.ftf_rho_max:.2f}); "
        f"avg-JCT lower bound {best.lower_bound:,.0f} s",
        "",
        "| checkpoint | avg JCT (s) | vs best | makespan (s) | vs best | ftf_rho_max | vs best |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in learned:
        out.append(
            f"| {r.policy} | {r.avg_jct:,.0f} | {pct(r.avg_jct, best.avg_jct)} | {r.makespan:,.0f} | "
            f"{pct(r.makespan, best.makespan)} | {r.ftf_rho_max:.2f} | {pct(r.ftf_rho_max, best.ftf_rho_max)} |"
        )
    out += ["", *gap_lines(rows, learned, best)]
    if len(learned) > 1:
        jct = statistics.fmean(r.avg_jct for r in learned)
        mk = statistics.fmean(r.makespan for r in learned)
        ftf = statistics.fmean(r.ftf_rho_max for r in learned)
        out.append(
            f"| mean of {len(learned)} | {jct:,.0f} | {pct(jct, best.avg_jct)} | {mk:,.0f} | "
            f"{pct(mk, best.makespan)} | {ftf:.2f} | {pct(ftf, best.ftf_rho_max)} |"
        )
    return out


def gap_lines(rows: list[Row], learned: list[Row], best: Row) -> list[str]:
    """Gap closure (slurmrl.report.gap.closure) of each learned row against both clairvoyant references."""
    from slurmrl.report.gap import closure

    out = []
    for ref_name in ("srtf-oracle", "sjf-oracle"):
        refs = [r for r in rows if r.policy == ref_name]
        if not refs:
            continue
        ref = min(refs, key=lambda r: r.avg_jct)
        headroom = (best.avg_jct - ref.avg_jct) / best.avg_jct
        for r in learned:
            gap = closure(best.avg_jct, ref.avg_jct, r.avg_jct)
            out.append(
                f"gap closure of {r.policy} against {ref_name} ({ref.avg_jct:,.0f} s; headroom "
                f"{100 * headroom:.1f}% of H): {100 * gap:+.1f}%"
            )
    return out


def merged(rows: list[Row]) -> list[Row]:
    """One row per policy and placement: the simulator is deterministic, so repeats are the same run."""
    seen: dict[tuple[str, str], Row] = {}
    for r in rows:
        seen.setdefault((r.policy, r.placement), r)
    return list(seen.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "folders",
        nargs="+",
        type=Path,
        help="`slurmrl compare --out` folders; rows of one workload are merged",
    )
    args = parser.parse_args()
    weeks: dict[str, list[Row]] = {}
    for folder in args.folders:
        workload, rows = load_rows(folder)
        weeks.setdefault(workload, []).extend(rows)
    for workload, rows in weeks.items():
        rows = merged(rows)
        print(f"### {workload}\n")
        print("\n".join(table(rows)))
        print()
        print("\n".join(learned_summary(rows)))
        print()


if __name__ == "__main__":
    main()
