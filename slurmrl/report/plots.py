"""Scenario plots as inline SVG strings.

The site must open offline from ``file://`` and look right in both light and
dark themes, so every figure is vector SVG embedded in the page, on a
transparent background, with text as real ``<text>`` elements in a mid gray
(which the stylesheet may recolour) and mid-tone series colours that keep
their contrast on white and on near-black.

Live runs (replayed on a real Slurm cluster) take the colour of their
simulated twin and are drawn dashed (lines) or hatched (bars), so each
policy's measured and simulated figures sit side by side in one hue.

One policy far off the others (strict fifo waits days where the rest wait
hours) would flatten every other curve against the axis. Linear value axes are
then cut above the others (:func:`axis_cut`), the cut runs are marked where
they leave the plot, and a note on the figure says where the axis is cut and
how far each cut run goes.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from slurmrl.report.fidelity import twin_of  # noqa: E402
from slurmrl.report.runs import Run, Scenario  # noqa: E402
from slurmrl.sim.metrics import per_group  # noqa: E402
from slurmrl.sim.records import Sample  # noqa: E402

TEXT_GRAY = "#8a8f98"
GRID_GRAY = "#8a8f9840"
# Mid-tone colours that stay readable on white and on near-black backgrounds.
PALETTE = (
    "#3b82f6",
    "#f97316",
    "#22a35a",
    "#e0457b",
    "#9b6cf0",
    "#14a3b8",
    "#c99a0e",
    "#8c8c8c",
    "#b0603a",
    "#5b8def",
)
LINK_NAMES = ("NVLink", "PCIe", "same switch", "cross-rack")  # LinkTier values 0..3
LINK_COLORS = ("#22a35a", "#14a3b8", "#c99a0e", "#e0457b")
MAX_GROUPS = 12  # fairness plot: the busiest VCs/users only, so bars stay legible
TIME_BINS = 200
LIVE_DASH = (0, (4, 2))  # line style of live runs
LIVE_HATCH = "////"  # bar hatch of live runs
# A run whose peak is this many times every other run's squeezes them into the bottom fifth
# of a linear axis: the axis is cut instead, CUT_HEADROOM above the highest run it keeps.
OUTLIER_RATIO = 5.0
CUT_HEADROOM = 1.15

_STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "slurmrl-report",
    "font.size": 10,
    "font.family": "sans-serif",
    "text.color": TEXT_GRAY,
    "axes.labelcolor": TEXT_GRAY,
    "axes.edgecolor": TEXT_GRAY,
    "axes.facecolor": "none",
    "figure.facecolor": "none",
    "savefig.facecolor": "none",
    "savefig.transparent": True,
    "xtick.color": TEXT_GRAY,
    "ytick.color": TEXT_GRAY,
    "grid.color": GRID_GRAY,
    "axes.grid": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
}


def colors_for(runs: Sequence[Run]) -> dict[str, str]:
    """A palette colour per label; a live run shares its simulated twin's, or takes the next free one."""
    colors = {run.label: PALETTE[i % len(PALETTE)] for i, run in enumerate(r for r in runs if not r.live)}
    for run in (r for r in runs if r.live):
        twin = twin_of(run, runs)
        colors[run.label] = colors[twin.label] if twin is not None else PALETTE[len(colors) % len(PALETTE)]
    return colors


def _line_style(run: Run) -> object:
    return LIVE_DASH if run.live else "solid"


def _to_svg(fig: Figure, ident: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    # Several figures share a page: give every element id a figure-specific prefix.
    text = re.sub(r'id="([^"]+)"', rf'id="{ident}-\1"', text)
    text = re.sub(r"url\(#([^)]+)\)", rf"url(#{ident}-\1)", text)
    text = re.sub(r'href="#([^"]+)"', rf'href="#{ident}-\1"', text)
    # Let CSS size the figure; the viewBox keeps its aspect ratio.
    text = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r"<svg\1", text, count=1)
    return text.replace("<svg", f'<svg class="plot" role="img" aria-labelledby="{ident}-title"', 1)


def _figure(width: float = 7.5, height: float = 3.6, rows: int = 1) -> tuple[Figure, np.ndarray]:
    with plt.rc_context(_STYLE):
        fig, axes = plt.subplots(
            rows, 1, figsize=(width, height), squeeze=False, sharex=True, layout="constrained"
        )
    return fig, axes[:, 0]


def _titled(svg: str, ident: str, title: str) -> str:
    close = svg.index(">") + 1
    return svg[:close] + f'<title id="{ident}-title">{_escape(title)}</title>' + svg[close:]


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _legend(ax: plt.Axes, n: int, beside: bool = False) -> None:
    """``beside``: right of the axes, where bars cut at the top would run through it inside."""
    if n and beside:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    elif n:
        ax.legend(loc="best", fontsize=8, ncols=1 if n < 6 else 2)


@dataclass(frozen=True)
class AxisCut:
    """A value axis cut at ``top`` so the runs that are not outliers fill it."""

    top: float
    outliers: tuple[tuple[str, float], ...]  # (label, peak) of each run drawn past the top

    def note(self, unit: str) -> str:
        over = "; ".join(f"{label} up to {_short(peak)}{unit}" for label, peak in self.outliers)
        return f"axis cut at {_short(self.top)}{unit}, above: {over}"


def axis_cut(peaks: Mapping[str, float]) -> AxisCut | None:
    """Where to cut a linear axis so outliers do not flatten the other runs; None: no need.

    Runs are sorted by peak; the cut goes under the widest set of top runs (at
    most half of them) whose lowest peak is over OUTLIER_RATIO times the next
    run's, so at least half the runs are always drawn whole.
    """
    ranked = sorted(((v, label) for label, v in peaks.items() if math.isfinite(v)), reverse=True)
    for k in range(len(ranked) // 2, 0, -1):
        above, below = ranked[k - 1][0], ranked[k][0]
        if below > 0 and above > OUTLIER_RATIO * below:
            return AxisCut(below * CUT_HEADROOM, tuple((label, v) for v, label in ranked[:k]))
    return None


def _short(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:.2g}"


def _cut_axis(ax: plt.Axes, cut: AxisCut | None, unit: str) -> None:
    """Cut the y axis (bottom at zero) and note the cut above the plot."""
    if cut is None:
        return
    ax.set_ylim(0, cut.top)
    ax.set_title(cut.note(unit), loc="left", fontsize=8)


def _peak(values: Sequence[float] | np.ndarray) -> float:
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.max()) if finite.size else 0.0


def _render(draw, ident: str, title: str, **fig_kw: float) -> str:
    with plt.rc_context(_STYLE):
        fig, axes = _figure(**fig_kw)
        draw(fig, axes)
        return _titled(_to_svg(fig, ident), ident, title)


def jct_cdf(scenario: Scenario, colors: dict[str, str], ident: str = "jct-cdf") -> str:
    """Empirical CDF of finished jobs' JCT per run, hours on a log axis (killed jobs left out)."""

    spans: list[float] = []

    def draw(fig: Figure, axes: np.ndarray) -> None:
        ax = axes[0]
        for run in scenario.runs:
            ended = [
                r.jct for r in run.results.records if math.isfinite(r.end_time) and not r.killed_at_limit
            ]
            jct = np.array(ended) / 3600.0
            jct = np.sort(jct[np.isfinite(jct)])
            if not jct.size:
                continue
            jct = np.maximum(jct, 1.0 / 3600.0)  # log axis: a zero JCT shows at one second
            y = np.arange(1, jct.size + 1) / jct.size
            spans.extend((float(jct[0]), float(jct[-1])))
            ax.step(
                np.concatenate(([jct[0]], jct)),
                np.concatenate(([0.0], y)),
                where="post",
                color=colors[run.label],
                label=run.label,
                linewidth=1.6,
                linestyle=_line_style(run),
            )
        _log_hours_axis(ax, spans)
        ax.set_xlabel("job completion time [hours, log scale]")
        ax.set_ylabel("fraction of finished jobs")
        ax.set_ylim(0, 1.02)
        _legend(ax, len(scenario.runs))

    return _render(draw, ident, "Cumulative distribution of job completion time per policy")


def _plain_number(x: float, _pos: int) -> str:
    return f"{x:g}"


def _two_and_five(x: float, _pos: int) -> str:
    if x <= 0:
        return ""
    lead = round(x / 10 ** math.floor(math.log10(x)))
    return f"{x:g}" if lead in (2, 5) else ""


def _log_hours_axis(ax: plt.Axes, spans: Sequence[float]) -> None:
    """Log axis labelled 0.1, 1, 10 rather than powers; 2s and 5s too when it spans little."""
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(_plain_number))
    narrow = spans and max(spans) / min(spans) < 30
    ax.xaxis.set_minor_formatter(FuncFormatter(_two_and_five) if narrow else NullFormatter())


def _bar_style(run: Run, color: str) -> dict[str, object]:
    """Solid bars for simulated runs; live ones hatched in the same hue over a pale fill."""
    if not run.live:
        return {"color": color}
    return {"facecolor": color + "55", "edgecolor": color, "hatch": LIVE_HATCH, "linewidth": 0.8}


def _grouped_bars(
    ax: plt.Axes, groups: Sequence[str], series: Sequence[tuple[Run, str, Sequence[float]]], unit: str
) -> AxisCut | None:
    """One bar per run in each group; an outlier run's bars are cut at the axis top and marked there."""
    n = max(len(series), 1)
    width = 0.8 / n
    x = np.arange(len(groups))
    cut = axis_cut({run.label: _peak(values) for run, _, values in series})
    for i, (run, color, values) in enumerate(series):
        heights = np.nan_to_num(np.asarray(values, dtype=float), nan=0.0)
        at = x - 0.4 + width * (i + 0.5)
        ax.bar(at, heights, width=width, label=run.label, **_bar_style(run, color))
        if cut is not None and (over := heights > cut.top).any():
            ax.plot(
                at[over], np.full(over.sum(), cut.top), linestyle="none", marker=6, color=color, clip_on=False
            )
    ax.set_xticks(x, groups)
    ax.grid(axis="x", visible=False)
    _cut_axis(ax, cut, unit)
    return cut


def wait_by_gpus(scenario: Scenario, colors: dict[str, str], ident: str = "wait-gpus") -> str:
    """Mean wait per job GPU count, one bar per run in each group."""
    stats = {
        run.label: {g.group: g.avg_wait for g in per_group(run.results.records, "gpus")}
        for run in scenario.runs
    }
    groups = sorted({k for s in stats.values() for k in s}, key=int)

    def draw(fig: Figure, axes: np.ndarray) -> None:
        ax = axes[0]
        series = [
            (run, colors[run.label], [stats[run.label].get(g, math.nan) / 3600.0 for g in groups])
            for run in scenario.runs
        ]
        cut = _grouped_bars(ax, groups, series, " h")
        ax.set_xlabel("GPUs requested by the job [GPUs]")
        ax.set_ylabel("mean wait [hours]")
        _legend(ax, len(series), beside=cut is not None)

    return _render(draw, ident, "Mean wait by job GPU count per policy")


def _total_gpus(cluster: str) -> int | None:
    match = re.search(r"(\d[\d,]*) GPUs", cluster)
    return int(match.group(1).replace(",", "")) if match else None


def _binned(samples: Sequence[Sample], field: str, edges: np.ndarray) -> np.ndarray:
    """Exact time average of a sampled step function over each bin (zero before the first sample)."""
    t = np.array([s.time for s in samples], dtype=float)
    v = np.array([getattr(s, field) for s in samples], dtype=float)
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    cum = np.concatenate(([0.0], np.cumsum(v[:-1] * np.diff(t))))
    idx = np.searchsorted(t, edges, side="right") - 1
    safe = np.clip(idx, 0, None)
    area = np.where(idx < 0, 0.0, cum[safe] + v[safe] * (edges - t[safe]))
    return np.diff(area) / np.diff(edges)


def over_time(scenario: Scenario, colors: dict[str, str], ident: str = "over-time") -> str:
    """Queue length and GPU utilisation (busy GPUs if the cluster size is unknown) against time."""
    total = _total_gpus(scenario.cluster)
    runs = [r for r in scenario.runs if r.results.samples]
    start = min((min(s.time for s in r.results.samples) for r in runs), default=0.0)
    end = max((max(s.time for s in r.results.samples) for r in runs), default=1.0)
    if end <= start:
        end = start + 1.0
    edges = np.linspace(start, end, TIME_BINS + 1)
    hours = ((edges[:-1] + edges[1:]) / 2 - start) / 3600.0

    def draw(fig: Figure, axes: np.ndarray) -> None:
        top, bottom = axes
        pending = {run.label: _binned(run.results.samples, "pending_jobs", edges) for run in runs}
        for run in runs:
            style = {
                "color": colors[run.label],
                "label": run.label,
                "linewidth": 1.3,
                "linestyle": _line_style(run),
            }
            top.plot(hours, pending[run.label], **style)
            busy = _binned(run.results.samples, "busy_gpus", edges)
            bottom.plot(hours, busy / total if total else busy, **style)
        top.set_ylabel("pending jobs [jobs]")
        _cut_axis(top, axis_cut({label: _peak(v) for label, v in pending.items()}), " jobs")
        bottom.set_ylabel("GPU utilization [fraction]" if total else "busy GPUs [GPUs]")
        if total:
            bottom.set_ylim(0, 1.02)
        bottom.set_xlabel("time since first event [hours]")
        _legend(top, len(runs))

    return _render(
        draw, ident, "Queue length and GPU utilization over time per policy", width=12.0, height=5.6, rows=2
    )


def locality(scenario: Scenario, ident: str = "locality") -> str:
    """Share of multi-GPU jobs by the slowest link of their placement, one stacked bar per run."""
    labels = [run.label for run in scenario.runs]
    shares = np.zeros((len(labels), len(LINK_NAMES)))
    for i, run in enumerate(scenario.runs):
        links = [r.worst_link for r in run.results.records if r.gpus > 1 and r.worst_link >= 0]
        if links:
            counts = np.bincount(np.clip(links, 0, len(LINK_NAMES) - 1), minlength=len(LINK_NAMES))
            shares[i] = counts / counts.sum()

    def draw(fig: Figure, axes: np.ndarray) -> None:
        ax = axes[0]
        y = np.arange(len(labels))
        left = np.zeros(len(labels))
        for k, (name, color) in enumerate(zip(LINK_NAMES, LINK_COLORS, strict=True)):
            ax.barh(y, shares[:, k], left=left, color=color, label=name, height=0.6)
            left += shares[:, k]
        ax.set_yticks(y, labels)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of started multi-GPU jobs [fraction]; slowest link in the placement")
        ax.grid(axis="y", visible=False)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncols=4, fontsize=9)

    height = 1.6 + 0.45 * len(labels)
    return _render(draw, ident, "Placement locality of multi-GPU jobs per policy", height=height)


def fairness(scenario: Scenario, colors: dict[str, str], ident: str = "fairness") -> tuple[str, str]:
    """Mean bounded slowdown per VC (per user when there is a single VC); returns (svg, group kind)."""
    records = [rec for run in scenario.runs for rec in run.results.records]
    key = "vc" if len({r.vc for r in records}) > 1 else "user"
    counts: dict[str, int] = {}
    for rec in scenario.runs[0].results.records:
        name = str(getattr(rec, key))
        counts[name] = counts.get(name, 0) + 1
    groups = sorted(counts, key=lambda g: (-counts[g], g))[:MAX_GROUPS]
    stats = {
        run.label: {g.group: g.avg_bounded_slowdown for g in per_group(run.results.records, key)}
        for run in scenario.runs
    }
    noun = "VC" if key == "vc" else "user"

    def draw(fig: Figure, axes: np.ndarray) -> None:
        ax = axes[0]
        series = [
            (run, colors[run.label], [stats[run.label].get(g, math.nan) for g in groups])
            for run in scenario.runs
        ]
        cut = _grouped_bars(ax, groups, series, "×")
        ax.set_xlabel(f"{noun} [busiest {len(groups)} by job count]" if len(counts) > len(groups) else noun)
        ax.set_ylabel("mean bounded slowdown [×]")
        if len(groups) > 5:
            for tick in ax.get_xticklabels():
                tick.set_rotation(35)
                tick.set_horizontalalignment("right")
        _legend(ax, len(series), beside=cut is not None)

    return _render(draw, ident, f"Mean bounded slowdown per {noun} and policy"), noun
