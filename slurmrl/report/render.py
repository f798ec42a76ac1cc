"""Write the report site: an index, one page per scenario, one per policy card.

Every page is a single self-contained HTML file — stylesheet, sorting script
and SVG plots inline — so the folder opens from ``file://`` with no network
and any one page can be mailed on its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jinja2

from slurmrl._version import __version__
from slurmrl.errors import SlurmrlError
from slurmrl.report import plots
from slurmrl.report.cards import HISTORY_FILE, Card, find_cards, markdown_to_html
from slurmrl.report.fidelity import build_fidelity, fidelity_markdown, has_live_runs
from slurmrl.report.gap import format_stat, gap_closures, gap_row
from slurmrl.report.runs import Run, Scenario, load_scenarios
from slurmrl.report.site_files import read_asset, site_dir
from slurmrl.report.table import METRICS, build_table

_REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ScenarioPage:
    scenario: Scenario
    file: str  # relative to the site root
    best_jct: str  # deployable run with the lowest mean JCT, for the index


def default_cards_dir() -> Path | None:
    """``policies/`` of the source checkout this package runs from, when there is one."""
    cards = _REPO_ROOT / "policies"
    return cards if (_REPO_ROOT / "pyproject.toml").is_file() and cards.is_dir() else None


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(site_dir() / "templates")),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "j2"), default=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env


def _best_jct(scenario: Scenario) -> str:
    pool = [r for r in scenario.runs if r.deployable] or list(scenario.runs)
    scored = [(r.results.summary.avg_jct, r.label) for r in pool if math.isfinite(r.results.summary.avg_jct)]
    return min(scored)[1] if scored else "–"


def _fidelity_html(scenario: Scenario) -> str | None:
    """The fidelity table as sanitised HTML from the same Markdown the text form shares; None without live runs."""
    if not has_live_runs(scenario):
        return None
    return markdown_to_html(fidelity_markdown(build_fidelity(scenario)))


@dataclass(frozen=True)
class GapLine:
    """One learned policy's gap closure as the scenario page shows it."""

    policy: str
    jct: str
    excess: str
    heuristic: str
    reference: str
    headroom: str  # (H - O) / H
    vs_heuristic: str  # (P - H) / H
    backlog: str  # the same on a warm start's inherited backlog ("" without one)


def _gaps(scenario: Scenario) -> tuple[GapLine, ...]:
    """Gap closure of the learned runs of a scenario (simulated runs only)."""
    runs = [r for r in scenario.runs if not r.live]
    if not runs:
        return ()
    rows = [gap_row(r.label, r.results.summary.to_dict(), r.results.meta) for r in runs]
    elastic = str(runs[0].results.meta.get("elastic", "off")) != "off"
    return tuple(
        GapLine(
            g.policy,
            format_stat(g.jct),
            format_stat(g.excess),
            g.heuristic,
            g.reference,
            format_stat(g.headroom),
            format_stat(g.vs_heuristic),
            format_stat(g.backlog_vs_heuristic) if math.isfinite(g.backlog_vs_heuristic.mean) else "",
        )
        for g in gap_closures([rows], elastic=elastic)
    )


def live_note(run: Run) -> str:
    """Tooltip of a live run's badge: the Slurm version and replay speed-up its metadata records."""
    meta = dict(run.results.meta)
    parts = ["measured on a live Slurm cluster"]
    if meta.get("slurm_version"):
        parts.append(f"Slurm {meta['slurm_version']}")
    speedup = meta.get("speedup")
    if isinstance(speedup, (int, float)) and not isinstance(speedup, bool) and math.isfinite(speedup):
        parts.append(f"trace replayed {speedup:g}x faster")
    parts.append("slurmrl daemon in the loop" if run.daemon else "Slurm scheduling on its own")
    return "; ".join(parts)


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise SlurmrlError(
            f"cannot write report page: {exc.strerror or exc}",
            file=str(exc.filename or path),
            hint="choose an --out folder you can write to",
        ) from None


def render_report(inputs: Sequence[Path], out: Path, *, cards: Path | None = None) -> Path:
    """Render the runs below ``inputs`` into a static site in ``out``; returns ``out/index.html``.

    Each input is a run folder or a folder holding run folders up to two
    levels down (``DIR/runs/*``). ``cards`` is the folder of trained-policy
    folders (``*/card.md``); it defaults to ``policies/`` beside the
    repository when that exists.
    """
    if not inputs:
        raise SlurmrlError(
            "no result folders given", hint="pass at least one folder written by a simulation run"
        )
    scenarios = load_scenarios([Path(p) for p in inputs])
    if cards is not None and not Path(cards).is_dir():
        raise SlurmrlError(
            "policy card folder does not exist",
            file=str(cards),
            hint="pass the folder holding <policy>/card.md, or leave --cards out",
        )
    card_list = find_cards(Path(cards) if cards is not None else default_cards_dir())
    env = _environment()
    common = {
        "css": read_asset("site.css"),
        "js": read_asset("table-sort.js"),
        "version": __version__,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "metrics": METRICS,
    }
    out = Path(out)
    pages = [ScenarioPage(sc, f"scenario-{sc.slug}.html", _best_jct(sc)) for sc in scenarios]
    card_pages = {c.name: f"card-{c.slug}.html" for c in card_list}

    index = out / "index.html"
    nav = {"scenarios": pages, "cards": card_list, "card_pages": card_pages}
    _write(
        index,
        env.get_template("index.html.j2").render(
            **common, **nav, title="Policy comparison", page="index.html"
        ),
    )
    for page in pages:
        _write(out / page.file, _scenario_html(env, common, nav, page))
    for card in card_list:
        history = f"card-{card.slug}-history.html" if card.history_html is not None else None
        _write(
            out / card_pages[card.name], _card_html(env, common, nav, card, card_pages[card.name], history)
        )
        if history is not None:
            _write(out / history, _history_html(env, common, nav, card, history, card_pages[card.name]))
    return index


def _scenario_html(env: jinja2.Environment, common: dict, nav: dict, page: ScenarioPage) -> str:
    sc = page.scenario
    colors = plots.colors_for(sc.runs)
    fairness_svg, group_noun = plots.fairness(sc, colors)
    figures = {
        "jct_cdf": plots.jct_cdf(sc, colors),
        "wait_by_gpus": plots.wait_by_gpus(sc, colors),
        "over_time": plots.over_time(sc, colors),
        "locality": plots.locality(sc),
        "fairness": fairness_svg,
    }
    meta = dict(sc.runs[0].results.meta)
    return env.get_template("scenario.html.j2").render(
        **common,
        **nav,
        title=sc.name,
        page=page.file,
        scenario=sc,
        table=build_table(sc),
        figures=figures,
        group_noun=group_noun,
        colors=colors,
        offered_load=meta.get("offered_load"),
        seed=meta.get("seed"),
        time_bins=plots.TIME_BINS,
        has_oracle=any(not r.deployable for r in sc.runs),
        has_deployable=any(r.deployable for r in sc.runs),
        fidelity_html=_fidelity_html(sc),
        gaps=_gaps(sc),
        live_notes={r.label: live_note(r) for r in sc.runs if r.live},
    )


def _card_html(
    env: jinja2.Environment, common: dict, nav: dict, card: Card, file: str, history: str | None
) -> str:
    return env.get_template("card.html.j2").render(
        **common,
        **nav,
        title=card.title,
        page=file,
        card=card,
        source=str(card.source),
        history_page=history,
    )


def _history_html(
    env: jinja2.Environment, common: dict, nav: dict, card: Card, file: str, card_page: str
) -> str:
    return env.get_template("history.html.j2").render(
        **common,
        **nav,
        title=f"{card.title}: history",
        page=file,
        card=card,
        card_page=card_page,
        source=str(card.source.with_name(HISTORY_FILE)),
    )
