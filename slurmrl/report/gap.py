"""Gap closure: how much of the way from the best heuristic to the clairvoyant reference a policy goes.

A learned policy earns its place only by beating what an admin can already
run, and "x% better" means little without knowing how much better anything
could be. So a policy P is judged against

* H, the best deployable heuristic of the run (lowest mean avg JCT over
  every deployable, non-learned row: each ordering x placement that was run),
* O, the clairvoyant reference: ``srtf-oracle`` (or its elastic variant,
  whichever is lower) for a preemptive policy or an elastic run,
  ``sjf-oracle`` otherwise; when H is already no worse than that reference
  (a preemptive heuristic can beat the non-preemptive bound), the lowest of
  all references, so there is a gap to measure,

as ``closure = (H - P) / (H - O)``: 0 = no better than the heuristic, 1 =
as good as the reference, negative = worse than the heuristic. It is given
on avg JCT and on the excess over run time (avg JCT minus the run's avg-JCT
lower bound, :mod:`slurmrl.sim.bounds`), which differ only when the rows'
bounds differ. Over several seeds H and O are chosen once, on the mean, and
the closure is computed per seed, then reduced to its mean with a 95%
Student-t interval (:func:`slurmrl.sim.seeds.seed_stat`). Beside it: the
headroom (H - O) / H, which says whether there is much to close at all, and
P against H, (P - H) / H. On a warm-started run, also P's inherited backlog
against H's (mean JCT of the jobs queued at the hand-over, which are not
measured): a policy that gains on the measured jobs by making that queue
wait shows there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from slurmrl.sim.seeds import SeedStat, seed_stat

PREEMPTIVE_REFERENCES = ("srtf-oracle", "srtf-oracle-elastic")
NON_PREEMPTIVE_REFERENCES = ("sjf-oracle",)


@dataclass(frozen=True)
class GapRow:
    """What the yardstick reads of one run."""

    label: str  # policy+placement
    policy: str
    avg_jct: float
    bound: float  # avg-JCT lower bound of the run (NaN when unknown)
    deployable: bool
    learned: bool
    preemptive: bool
    backlog_jct: float = math.nan  # mean JCT of a warm start's inherited queue (NaN: none)


@dataclass(frozen=True)
class GapClosure:
    policy: str  # P's label
    heuristic: str  # H's label
    reference: str  # O's label
    jct: SeedStat  # closure on avg JCT
    excess: SeedStat  # closure on avg JCT - bound
    policy_jct: SeedStat
    heuristic_jct: SeedStat
    reference_jct: SeedStat
    headroom: SeedStat  # (H - O) / H
    vs_heuristic: SeedStat  # (P - H) / H: negative is better than H
    backlog_vs_heuristic: SeedStat  # the same on the inherited backlog's mean JCT (NaN: no hand-over)


def closure(heuristic: float, reference: float, policy: float) -> float:
    """``(H - P) / (H - O)``; NaN when the reference is no better than the heuristic (no gap to close)."""
    gap = heuristic - reference
    if not (math.isfinite(gap) and math.isfinite(policy)) or gap <= 0:
        return math.nan
    return (heuristic - policy) / gap


def _is_learned(policy: str) -> bool:
    from slurmrl.errors import PolicyError
    from slurmrl.policy.registry import policy_entry

    try:
        return policy_entry(policy.split(":", 1)[0]).learned
    except PolicyError:
        return False


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def gap_row(label: str, summary: Mapping[str, object], meta: Mapping[str, object]) -> GapRow:
    """A run's row from its summary and meta (``learned``/``preemptive`` read from the registry when absent)."""
    policy = str(meta.get("policy", label.split("+", 1)[0]))
    learned = meta.get("learned")
    return GapRow(
        label,
        policy,
        _number(summary.get("avg_jct")),
        _number(summary.get("avg_jct_lower_bound")),
        bool(meta.get("deployable", True)),
        bool(learned) if learned is not None else _is_learned(policy),
        bool(meta.get("preemptive", False)),
        _number(summary.get("backlog_avg_jct")),
    )


def table_row(row: Mapping[str, object]) -> GapRow:
    """A row of ``compare``'s table (policy, placement, what it is and the summary's figures).

    Rows written before they carried ``learned``/``preemptive`` are read by
    name: a checkpoint folder is learned, a registered name as registered.
    """
    policy = str(row["policy"])
    meta = {
        "policy": policy,
        "deployable": row.get("deployable", True),
        "preemptive": row.get("preemptive", False),
    }
    if "learned" in row:
        meta["learned"] = row["learned"]
    elif Path(policy).is_dir():  # a trained checkpoint folder
        meta["learned"] = True
    return gap_row(f"{policy}+{row.get('placement', '')}", row, meta)


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _relative(value: float, base: float) -> float:
    """``(value - base) / base``; NaN when ``base`` is missing or not positive."""
    return (value - base) / base if math.isfinite(base) and base > 0 else math.nan


def _best(labels: Sequence[str], jct: Mapping[str, float]) -> str | None:
    scored = [(jct[label], label) for label in labels if math.isfinite(jct[label])]
    return min(scored)[1] if scored else None


def gap_closures(per_seed: Sequence[Sequence[GapRow]], *, elastic: bool) -> tuple[GapClosure, ...]:
    """One closure per learned row of the run, for every one that has both an H and an O row.

    ``per_seed`` holds the same labels in every seed (rows are matched by label).
    """
    if not per_seed or not per_seed[0]:
        return ()
    seeds = [{row.label: row for row in rows} for rows in per_seed]
    first = per_seed[0]
    jct = {row.label: _mean([s[row.label].avg_jct for s in seeds if row.label in s]) for row in first}
    heuristic = _best([r.label for r in first if r.deployable and not r.learned], jct)
    out: list[GapClosure] = []
    for p in (r for r in first if r.learned):
        names = PREEMPTIVE_REFERENCES if (p.preemptive or elastic) else NON_PREEMPTIVE_REFERENCES
        reference = _best([r.label for r in first if not r.deployable and r.policy in names], jct)
        if heuristic is None or reference is None:
            continue
        if not jct[reference] < jct[heuristic]:
            every = PREEMPTIVE_REFERENCES + NON_PREEMPTIVE_REFERENCES
            reference = _best([r.label for r in first if not r.deployable and r.policy in every], jct)
            if reference is None:
                continue
        h, o, q = ([s[label] for s in seeds] for label in (heuristic, reference, p.label))
        out.append(
            GapClosure(
                p.label,
                heuristic,
                reference,
                seed_stat(
                    [closure(a.avg_jct, b.avg_jct, c.avg_jct) for a, b, c in zip(h, o, q, strict=True)]
                ),
                seed_stat(
                    [
                        closure(a.avg_jct - a.bound, b.avg_jct - b.bound, c.avg_jct - c.bound)
                        for a, b, c in zip(h, o, q, strict=True)
                    ]
                ),
                seed_stat([c.avg_jct for c in q]),
                seed_stat([a.avg_jct for a in h]),
                seed_stat([b.avg_jct for b in o]),
                seed_stat([(a.avg_jct - b.avg_jct) / a.avg_jct for a, b in zip(h, o, strict=True)]),
                seed_stat([(c.avg_jct - a.avg_jct) / a.avg_jct for a, c in zip(h, q, strict=True)]),
                seed_stat([_relative(c.backlog_jct, a.backlog_jct) for a, c in zip(h, q, strict=True)]),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Targets:
    """What a learned policy must reach to earn its place over the heuristics.

    Where the heuristic leaves much to gain (headroom above ``large_headroom``)
    it must close a real share of the gap; where it leaves little, it must
    at least not lose to it. Mean JCT must not be bought with a long tail:
    makespan and the worst finish-time fairness stay near H's.
    """

    large_headroom: float = 0.15  # (H - O) / H above this: judged on closure
    min_closure: float = 0.30
    max_vs_heuristic: float = 0.02  # else: (P - H) / H at most this
    max_makespan: float = 0.05  # P's makespan at most this much above H's
    max_ftf_ratio: float = 2.0  # P's ftf_rho_max at most this times H's


@dataclass(frozen=True)
class Verdict:
    target: str
    value: float  # a relative change, or a ratio when ``ratio``
    met: bool
    ratio: bool = False

    def __str__(self) -> str:
        shown = f"{self.value:.2f}x" if self.ratio else f"{self.value:+.1%}"
        return f"{self.target}: {shown} ({'met' if self.met else 'missed'})"


def verdicts(
    gap: GapClosure, makespan: tuple[float, float], ftf: tuple[float, float], targets: Targets = Targets()
) -> tuple[Verdict, ...]:
    """``gap`` against ``targets``; ``makespan`` and ``ftf`` are (P, H) means of makespan and ftf_rho_max."""
    if gap.headroom.mean > targets.large_headroom:
        first = Verdict(
            f"gap closure >= {targets.min_closure:.0%}", gap.jct.mean, gap.jct.mean >= targets.min_closure
        )
    else:
        vs = gap.vs_heuristic.mean
        first = Verdict(
            f"avg JCT vs H <= {targets.max_vs_heuristic:+.0%}", vs, vs <= targets.max_vs_heuristic
        )
    mk = makespan[0] / makespan[1] - 1.0
    ratio = ftf[0] / ftf[1]
    return (
        first,
        Verdict(f"makespan vs H <= {targets.max_makespan:+.0%}", mk, mk <= targets.max_makespan),
        Verdict(
            f"ftf_rho_max <= {targets.max_ftf_ratio:g}x H's",
            ratio,
            ratio <= targets.max_ftf_ratio,
            ratio=True,
        ),
    )


def format_stat(stat: SeedStat, *, percent: bool = True) -> str:
    scale, unit = (100.0, "%") if percent else (1.0, "")
    if not math.isfinite(stat.mean):
        return "n/a"
    text = f"{stat.mean * scale:+.1f}{unit}" if percent else f"{stat.mean:.4g}"
    if math.isfinite(stat.half_width):
        text += f" ± {stat.half_width * scale:.1f}{unit}" if percent else f" ± {stat.half_width:.2g}"
    return text


def _hours(stat: SeedStat) -> str:
    return f"{stat.mean / 3600:.2f} h" if math.isfinite(stat.mean) else "n/a"


def format_gaps(gaps: Sequence[GapClosure]) -> str:
    """Lines for the terminal: one per learned policy."""
    lines = []
    for g in gaps:
        seeds = f" over {g.jct.n} seeds (mean ± 95% CI)" if g.jct.n > 1 else ""
        lines.append(
            f"gap closure of {g.policy}{seeds}: {format_stat(g.jct)} of avg JCT, "
            f"{format_stat(g.excess)} of excess over run time; "
            f"H = {g.heuristic} ({_hours(g.heuristic_jct)}), O = {g.reference}* ({_hours(g.reference_jct)}), "
            f"headroom (H-O)/H {format_stat(g.headroom)}, P vs H {format_stat(g.vs_heuristic)}"
            + (
                f"; inherited backlog P vs H {format_stat(g.backlog_vs_heuristic)}"
                if math.isfinite(g.backlog_vs_heuristic.mean)
                else ""
            )
        )
    return "\n".join(lines)
