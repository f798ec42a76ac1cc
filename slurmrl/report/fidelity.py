"""How far the simulator's numbers are from a real Slurm cluster's on the same workload.

A live run (``slurmrl replay``, ``meta.source = "slurm"``) is paired with the
one simulated run of the same scenario that scheduled the same way:

* a run with slurmrl's daemon in the loop pairs with the simulated run of the
  same policy *and* placement;
* a run of stock Slurm on its own (``meta.daemon = false``) pairs with the
  simulated ``slurm`` policy (multifactor priority with EASY backfill, the
  simulator's model of stock Slurm) whatever that run's placement label,
  since the placement Slurm itself chose has no slurmrl name.

A live run with no candidate, or with several (say two simulated seeds of the
same policy), is listed as not compared rather than paired by guesswork. Two
live runs may share a twin (replays at two speed-ups, for instance).

Beyond each pair's numbers, what decides whether the simulator can pick a
policy is whether it *ranks* the policies as the cluster does, so the paired
policies are ordered by mean JCT in both worlds and compared, with Kendall's
tau-b as one figure for the agreement (Kendall, "The treatment of ties in
ranking problems", Biometrika 33(3), 1945): 1 for the same order, -1 for the
reverse.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from slurmrl.errors import SlurmrlError
from slurmrl.report.runs import Run, Scenario, load_scenarios
from slurmrl.sim.results import align_table, number_format

SIM_STOCK_POLICY = "slurm"  # the simulated policy that stands for stock Slurm
# (summary key, whether the table shows a relative difference for it)
_PAIRED_METRICS = (("avg_jct", True), ("p95_jct", False), ("makespan", False))


@dataclass(frozen=True)
class FidelityRow:
    """One live run beside its simulated twin; times in seconds, NaN where a run has none."""

    name: str  # the pair's policy, e.g. "fifo+first-fit" or "stock Slurm"
    live_label: str
    sim_label: str
    policy: str
    placement: str
    stock: bool
    live_avg_jct: float
    sim_avg_jct: float
    avg_jct_diff: float  # (live - sim) / sim
    live_p95_jct: float
    sim_p95_jct: float
    live_makespan: float
    sim_makespan: float
    live_finished: int
    sim_finished: int


@dataclass(frozen=True)
class Ranking:
    """The paired policies ordered by mean JCT, best first, in each world."""

    live_order: tuple[str, ...]
    sim_order: tuple[str, ...]
    same_order: bool
    kendall_tau: float  # tau-b; NaN when every policy ties in one world


@dataclass(frozen=True)
class Unpaired:
    """A live run left out of the comparison, and why."""

    label: str
    reason: str


@dataclass(frozen=True)
class Fidelity:
    """The live-versus-simulated comparison of one scenario."""

    scenario: str
    cluster: str
    trace: str
    rows: tuple[FidelityRow, ...]
    ranking: Ranking | None  # None with fewer than two rows with finished jobs in both worlds
    unpaired: tuple[Unpaired, ...]

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready values; NaN becomes ``None`` so the result is strict JSON."""
        return _json_ready(asdict(self))


def _json_ready(value: object) -> object:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def twin_candidates(live: Run, runs: Sequence[Run]) -> tuple[Run, ...]:
    """The simulated runs that ``live`` may be compared with (the pairing rule in the module docstring)."""
    sims = [r for r in runs if not r.live]
    if live.stock:
        return tuple(r for r in sims if r.policy == SIM_STOCK_POLICY)
    return tuple(r for r in sims if r.policy == live.policy and r.placement == live.placement)


def twin_of(live: Run, runs: Sequence[Run]) -> Run | None:
    """The one simulated twin of ``live`` among ``runs``, or None when there is none or several."""
    found = twin_candidates(live, runs)
    return found[0] if len(found) == 1 else None


def pair_runs(scenario: Scenario) -> tuple[tuple[tuple[Run, Run], ...], tuple[Unpaired, ...]]:
    """(live, simulated) pairs of ``scenario`` in run order, and the live runs that have no single twin."""
    pairs: list[tuple[Run, Run]] = []
    unpaired: list[Unpaired] = []
    for live in (r for r in scenario.runs if r.live):
        found = twin_candidates(live, scenario.runs)
        if len(found) == 1:
            pairs.append((live, found[0]))
            continue
        wanted = f"policy {SIM_STOCK_POLICY}" if live.stock else live.name
        if found:
            names = ", ".join(r.label for r in found)
            reason = f"{len(found)} simulated runs of {wanted} could be its twin: {names}"
        else:
            reason = f"no simulated run of {wanted}"
        unpaired.append(Unpaired(live.label, reason))
    return tuple(pairs), tuple(unpaired)


def has_live_runs(scenario: Scenario) -> bool:
    return any(r.live for r in scenario.runs)


def relative_difference(live: float, sim: float) -> float:
    """``(live - sim) / sim``: +0.1 means the cluster was 10% slower than simulated; NaN without a base."""
    if not (math.isfinite(live) and math.isfinite(sim)) or sim == 0:
        return math.nan
    return (live - sim) / sim


def build_fidelity(scenario: Scenario) -> Fidelity:
    """Pair the live runs of ``scenario`` with their simulated twins and compare the rankings."""
    pairs, unpaired = pair_runs(scenario)
    names = [live.name for live, _ in pairs]
    # Two replays of one policy need their own names: fall back to the live labels.
    rows = tuple(
        _row(live, sim, name if names.count(name) == 1 else live.label)
        for (live, sim), name in zip(pairs, names, strict=True)
    )
    return Fidelity(scenario.name, scenario.cluster, scenario.trace, rows, rank(rows), unpaired)


def _row(live: Run, sim: Run, name: str) -> FidelityRow:
    a, b = live.results.summary, sim.results.summary
    return FidelityRow(
        name=name,
        live_label=live.label,
        sim_label=sim.label,
        policy=live.policy,
        placement=live.placement,
        stock=live.stock,
        live_avg_jct=a.avg_jct,
        sim_avg_jct=b.avg_jct,
        avg_jct_diff=relative_difference(a.avg_jct, b.avg_jct),
        live_p95_jct=a.p95_jct,
        sim_p95_jct=b.p95_jct,
        live_makespan=a.makespan,
        sim_makespan=b.makespan,
        live_finished=a.finished,
        sim_finished=b.finished,
    )


def rank(rows: Sequence[FidelityRow]) -> Ranking | None:
    """Orders by mean JCT (ties broken by name, alike in both worlds) and their Kendall tau-b."""
    ranked = [r for r in rows if math.isfinite(r.live_avg_jct) and math.isfinite(r.sim_avg_jct)]
    if len(ranked) < 2:
        return None
    live = tuple(r.name for r in sorted(ranked, key=lambda r: (r.live_avg_jct, r.name)))
    sim = tuple(r.name for r in sorted(ranked, key=lambda r: (r.sim_avg_jct, r.name)))
    tau = kendall_tau_b([r.live_avg_jct for r in ranked], [r.sim_avg_jct for r in ranked])
    return Ranking(live, sim, live == sim, tau)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b: sum of sign products over all pairs, over the root of the untied pair counts."""
    num = tied_free_x = tied_free_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx = (x[i] > x[j]) - (x[i] < x[j])
            dy = (y[i] > y[j]) - (y[i] < y[j])
            num += dx * dy
            tied_free_x += dx * dx
            tied_free_y += dy * dy
    if tied_free_x == 0 or tied_free_y == 0:
        return math.nan
    return num / math.sqrt(tied_free_x * tied_free_y)


# ---------------------------------------------------------------------------
# Tables: the text and Markdown forms share their cells, so both show the same numbers.


@dataclass(frozen=True)
class TextColumn:
    header: str
    cells: tuple[str, ...]
    right: bool  # numbers are right-aligned


def _percent(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x * 100:+.1f}%"


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def table_columns(fid: Fidelity) -> tuple[TextColumn, ...]:
    """The table's columns: each live/simulated pair of a metric shares one unit."""
    rows = fid.rows
    cols = [
        TextColumn("policy", tuple(r.name for r in rows), False),
        TextColumn("simulated as", tuple(r.sim_label for r in rows), False),
    ]
    for key, with_diff in _PAIRED_METRICS:
        live = [_finite(getattr(r, f"live_{key}")) for r in rows]
        sim = [_finite(getattr(r, f"sim_{key}")) for r in rows]
        fmt = number_format(key, [v for v in live + sim if v is not None])
        cols.append(TextColumn(f"live {fmt.header}", tuple(fmt(v) for v in live), True))
        cols.append(TextColumn(f"sim {fmt.header}", tuple(fmt(v) for v in sim), True))
        if with_diff:
            diffs = tuple(_percent(getattr(r, f"{key}_diff")) for r in rows)
            cols.append(TextColumn(f"{key} live vs sim", diffs, True))
    cols.append(TextColumn("live finished", tuple(f"{r.live_finished:,d}" for r in rows), True))
    cols.append(TextColumn("sim finished", tuple(f"{r.sim_finished:,d}" for r in rows), True))
    return tuple(cols)


def ranking_sentence(ranking: Ranking | None) -> str:
    if ranking is None:
        return "Ranking by avg_jct: needs two paired policies with finished jobs in both worlds."
    tau = "n/a" if not math.isfinite(ranking.kendall_tau) else f"{ranking.kendall_tau:.2f}"
    verdict = "the same order in both worlds" if ranking.same_order else "a different order"
    return f"Ranking by avg_jct, best first: {verdict} (Kendall tau {tau})."


def _orders(ranking: Ranking | None) -> tuple[tuple[str, str], ...]:
    if ranking is None:
        return ()
    return (("live", " < ".join(ranking.live_order)), ("sim", " < ".join(ranking.sim_order)))


def format_fidelity(fid: Fidelity) -> str:
    """Plain-text table, ranking verdict with both orders, and the live runs left out."""
    cols = table_columns(fid)
    lines = [
        align_table([c.header for c in cols], [list(c.cells) for c in cols], [c.right for c in cols]),
        "",
        ranking_sentence(fid.ranking),
    ]
    lines += [f"  {world + ':':<5} {order}" for world, order in _orders(fid.ranking)]
    lines += [f"Not compared: {u.label}: {u.reason}." for u in fid.unpaired]
    return "\n".join(lines)


# What could turn cell text into markup inside a table cell or a list item.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|])")


def _md(text: str) -> str:
    """Cell text as literal Markdown: specials backslash-escaped, HTML characters as entities."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def fidelity_markdown(fid: Fidelity) -> str:
    """The same table and verdict as :func:`format_fidelity`, as Markdown (a pipe table)."""
    cols = table_columns(fid)
    out = [
        "| " + " | ".join(_md(c.header) for c in cols) + " |",
        "|" + "|".join("---:" if c.right else "---" for c in cols) + "|",
    ]
    for i in range(len(fid.rows)):
        out.append("| " + " | ".join(_md(c.cells[i]) for c in cols) + " |")
    out += ["", _md(ranking_sentence(fid.ranking))]
    orders = _orders(fid.ranking)
    if orders:
        out.append("")
        out += [f"- {world}: {_md(order)}" for world, order in orders]
    if fid.unpaired:
        out.append("")
        out += [f"- Not compared: {_md(u.label)}: {_md(u.reason)}." for u in fid.unpaired]
    return "\n".join(out) + "\n"


def load_fidelity(inputs: Sequence[Path]) -> tuple[Fidelity, ...]:
    """The comparison of every scenario below ``inputs`` that holds live runs; an error when none pairs."""
    scenarios = load_scenarios(inputs)
    found = tuple(build_fidelity(sc) for sc in scenarios if has_live_runs(sc))
    where = ", ".join(str(p) for p in inputs)
    if not found:
        raise SlurmrlError(
            f"no live Slurm run in {where}: every run there is simulated",
            hint='a live run\'s summary.json has meta.source "slurm", as `slurmrl replay` writes it',
        )
    if not any(f.rows for f in found):
        left = "; ".join(f"{u.label}: {u.reason}" for f in found for u in f.unpaired)
        raise SlurmrlError(
            f"no live run in {where} has a simulated twin ({left})",
            hint="pass the live runs together with the `slurmrl simulate --out` folders of the same policies",
        )
    return found
