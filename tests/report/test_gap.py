"""Gap closure: (H - P) / (H - O), H the best deployable heuristic, O the clairvoyant reference."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmrl.cli import main
from slurmrl.report import render_report
from slurmrl.report.gap import GapClosure, GapRow, closure, format_gaps, gap_closures, table_row, verdicts
from slurmrl.sim.seeds import seed_stat
from tests.report.sitedata import FOUR_JOBS_SJF, build_results, write_run


def row(
    label: str, jct: float, *, bound: float = 1000.0, deployable: bool = True, learned: bool = False
) -> GapRow:
    return GapRow(label, label.split("+")[0], jct, bound, deployable, learned, False)


def test_closure_is_zero_at_the_heuristic_one_at_the_reference_negative_below() -> None:
    assert closure(10.0, 6.0, 10.0) == 0.0
    assert closure(10.0, 6.0, 6.0) == 1.0
    assert closure(10.0, 6.0, 8.0) == 0.5
    assert closure(10.0, 6.0, 12.0) == -0.5
    assert math.isnan(closure(10.0, 10.0, 9.0))  # no gap to close


def test_h_is_the_best_deployable_heuristic_and_o_depends_on_the_run() -> None:
    rows = [
        row("fifo+first-fit", 12.0),
        row("qssf+topology", 10.0),
        row("sjf-oracle+first-fit", 7.0, deployable=False),
        row("srtf-oracle+first-fit", 6.0, deployable=False),
        row("srtf-oracle-elastic+topology", 5.0, deployable=False),
        row("topdrl+topology", 9.0, learned=True),
        row("harmony+interference-aware", 9.5, learned=True),
    ]
    rigid = {g.policy: g for g in gap_closures([rows], elastic=False)}
    assert set(rigid) == {"topdrl+topology", "harmony+interference-aware"}  # the learned rows only
    g = rigid["topdrl+topology"]
    assert (g.heuristic, g.reference) == ("qssf+topology", "sjf-oracle+first-fit")
    assert g.jct.mean == pytest.approx((10 - 9) / (10 - 7))
    # Every row has the same bound here, so excess over run time gives the same closure.
    assert g.excess.mean == pytest.approx(g.jct.mean)
    elastic = {g.policy: g for g in gap_closures([rows], elastic=True)}["topdrl+topology"]
    assert elastic.reference == "srtf-oracle-elastic+topology"  # the tighter of the two srtf references
    assert elastic.jct.mean == pytest.approx(1 / 5)


def test_three_seeds_give_a_mean_with_a_t_interval() -> None:
    seeds = [
        [
            row("qssf+first-fit", h),
            row("sjf-oracle+first-fit", o, deployable=False),
            row("topdrl+topology", p, learned=True),
        ]
        for h, o, p in ((10.0, 6.0, 8.0), (11.0, 6.0, 9.0), (10.0, 5.0, 9.0))
    ]
    (g,) = gap_closures(seeds, elastic=False)
    expected = seed_stat([0.5, 0.4, 0.2])
    assert g.jct.n == 3 and g.jct.mean == pytest.approx(expected.mean)
    assert g.jct.half_width == pytest.approx(expected.half_width)
    assert "over 3 seeds" in format_gaps([g]) and "±" in format_gaps([g])


def test_a_heuristic_below_the_class_reference_is_measured_against_the_tightest_one() -> None:
    """A preemptive heuristic can beat sjf-oracle: then a non-preemptive policy is judged against srtf."""
    rows = [
        row("srtf-limit+topology", 3.13),
        row("sjf-oracle+topology", 3.41, deployable=False),
        row("srtf-oracle+topology", 3.09, deployable=False),
        row("topdrl+topology", 3.40, learned=True),
    ]
    (g,) = gap_closures([rows], elastic=False)
    assert g.reference == "srtf-oracle+topology"
    assert g.jct.mean == pytest.approx((3.13 - 3.40) / (3.13 - 3.09))
    assert g.headroom.mean == pytest.approx(0.04 / 3.13) and g.vs_heuristic.mean == pytest.approx(0.27 / 3.13)


def test_no_gap_without_a_heuristic_or_a_reference() -> None:
    assert (
        gap_closures(
            [[row("topdrl+topology", 9.0, learned=True), row("fifo+first-fit", 10.0)]], elastic=False
        )
        == ()
    )
    assert gap_closures([[row("topdrl+topology", 9.0, learned=True)]], elastic=False) == ()


def test_compare_prints_gap_closure_when_a_learned_policy_and_an_oracle_ran(tmp_path: Path) -> None:
    args = ["compare", "--limit", "150", "--cluster", "1x2x8", "--no-progress"]
    policies = "fifo-backfill,sjf-limit,sjf-oracle,srtf-oracle,topdrl"
    result = CliRunner().invoke(main, [*args, "--policies", policies])
    assert result.exception is None, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("gap closure of topdrl+type-aware"))
    # topdrl preempts (led by gittins-limit), so its reference is the preemptive bound.
    assert "of avg JCT" in line and "excess over run time" in line and "O = srtf-oracle+first-fit*" in line
    plain = CliRunner().invoke(main, [*args, "--policies", "fifo-backfill,sjf-oracle"])
    assert plain.exception is None and "gap closure" not in plain.output
    as_json = CliRunner().invoke(main, [*args, "--json", "--policies", "fifo-backfill,sjf-oracle,topdrl"])
    assert as_json.exception is None and "gap closure" not in as_json.output


def test_a_preemptive_learned_row_is_measured_against_the_preemptive_reference() -> None:
    figures = {"avg_jct_lower_bound": 1000.0}
    rows = [
        table_row({"policy": "qssf", "placement": "topology", "avg_jct": 10.0, **figures}),
        table_row(
            {"policy": "sjf-oracle", "placement": "topology", "deployable": False, "avg_jct": 8.0, **figures}
        ),
        table_row(
            {"policy": "srtf-oracle", "placement": "topology", "deployable": False, "avg_jct": 6.0, **figures}
        ),
        table_row(
            {
                "policy": "led",
                "placement": "topology",
                "learned": True,
                "preemptive": True,
                "avg_jct": 9.0,
                **figures,
            }
        ),
    ]
    (g,) = gap_closures([rows], elastic=False)
    assert g.reference == "srtf-oracle+topology" and g.jct.mean == pytest.approx(0.25)
    calm = [
        *rows[:3],
        table_row({"policy": "led", "placement": "topology", "learned": True, "avg_jct": 9.0, **figures}),
    ]
    assert gap_closures([calm], elastic=False)[0].reference == "sjf-oracle+topology"


def test_compare_rows_say_whether_a_policy_is_learned_and_preemptive() -> None:
    args = ["compare", "--limit", "150", "--cluster", "1x2x8", "--no-progress", "--json"]
    result = CliRunner().invoke(main, [*args, "--policies", "tiresias,sjf-oracle,topdrl"])
    assert result.exception is None, result.output
    flags = {r["policy"]: (r["deployable"], r["learned"], r["preemptive"]) for r in json.loads(result.output)}
    assert flags == {
        "tiresias": (True, False, True),
        "sjf-oracle": (False, False, False),
        "topdrl": (True, True, True),  # led by gittins-limit
    }


def _results_with_topdrl(root: Path) -> Path:
    """The site's results plus a topdrl run on the compared scenario (avg JCT 3,750 s)."""
    root = build_results(root)
    write_run(
        root / "cmp" / "runs" / "topdrl+topology",
        policy="topdrl",
        placement="topology",
        workload="tiny-cmp",
        jobs=FOUR_JOBS_SJF,
        avg_jct=3750.0,
    )
    return root


def test_report_page_shows_gap_closure(tmp_path: Path) -> None:
    root = _results_with_topdrl(tmp_path / "res")
    index = render_report([root / "cmp"], tmp_path / "site")
    page = next(p for p in index.parent.glob("scenario-*.html"))
    html = page.read_text()
    assert 'id="gap-closure"' in html and "topdrl+topology" in html
    assert "+50.0%" in html  # (4000 - 3750) / (4000 - 3500)


def test_targets_judge_closure_where_headroom_is_large_else_the_loss_to_h() -> None:
    def gap(h: float, o: float, p: float) -> GapClosure:
        rows = [
            row("qssf+topology", h),
            row("sjf-oracle+topology", o, deployable=False),
            row("x+topology", p, learned=True),
        ]
        return gap_closures([rows], elastic=False)[0]

    wide = verdicts(gap(100.0, 50.0, 80.0), makespan=(104.0, 100.0), ftf=(3.0, 2.0))
    assert [v.met for v in wide] == [True, True, True]  # 40% closed (headroom 50%)
    assert "gap closure" in str(wide[0]) and "+40.0%" in str(wide[0])
    narrow = verdicts(gap(100.0, 90.0, 103.0), makespan=(106.0, 100.0), ftf=(5.0, 2.0))
    assert [v.met for v in narrow] == [False, False, False]  # 3% worse than H, makespan +6%, ftf 2.5x
    assert "avg JCT vs H" in str(narrow[0]) and str(narrow[2]).endswith(": 2.50x (missed)")
    assert verdicts(gap(100.0, 90.0, 101.0), makespan=(100.0, 100.0), ftf=(2.0, 1.0))[0].met


def test_on_a_warm_start_the_inherited_backlog_is_set_beside_h() -> None:
    def warm(label: str, jct: float, backlog: float, **kw: bool) -> GapRow:
        return replace(row(label, jct, **kw), backlog_jct=backlog)

    seeds = [
        [
            warm("sjf-limit+topology", 10.0, 100.0),
            warm("sjf-oracle+topology", 7.0, 90.0, deployable=False),
            warm("topdrl+topology", 9.0, b, learned=True),
        ]
        for b in (110.0, 130.0)
    ]
    (g,) = gap_closures(seeds, elastic=False)
    assert g.backlog_vs_heuristic.mean == pytest.approx(0.2)  # (110 - 100) / 100, (130 - 100) / 100
    assert "inherited backlog P vs H +20.0%" in format_gaps([g])
    (cold,) = gap_closures([[row("sjf-limit+topology", 10.0), *seeds[0][1:]]], elastic=False)
    assert math.isnan(cold.backlog_vs_heuristic.mean) and "backlog" not in format_gaps([cold])
    summary = {"avg_jct": 9.0, "avg_jct_lower_bound": 1.0, "backlog_avg_jct": 110.0}
    assert table_row({"policy": "topdrl", "placement": "topology", **summary}).backlog_jct == 110.0


def test_the_report_page_sets_the_backlog_beside_h_on_warm_starts_only(tmp_path: Path) -> None:
    root = _results_with_topdrl(tmp_path / "res")
    html = next(render_report([root / "cmp"], tmp_path / "cold").parent.glob("scenario-*.html")).read_text()
    assert 'id="gap-closure"' in html and "inherited backlog, P vs H" not in html
    for run in (root / "cmp" / "runs").iterdir():
        summary = json.loads((run / "summary.json").read_text())
        summary.update(backlog_jobs=3, backlog_avg_jct=5000.0 if run.name.startswith("topdrl") else 4000.0)
        (run / "summary.json").write_text(json.dumps(summary))
    html = next(render_report([root / "cmp"], tmp_path / "warm").parent.glob("scenario-*.html")).read_text()
    assert "inherited backlog, P vs H" in html and "+25.0%" in html
