"""Live Slurm runs beside simulated ones: labels, pairing, numbers, rankings, CLI and site."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from slurmrl.cli import main
from slurmrl.errors import SlurmrlError
from slurmrl.report import render_report
from slurmrl.report.cards import markdown_to_html
from slurmrl.report.fidelity import (
    build_fidelity,
    fidelity_markdown,
    format_fidelity,
    kendall_tau_b,
    load_fidelity,
    pair_runs,
    relative_difference,
)
from slurmrl.report.plots import colors_for
from slurmrl.report.runs import load_scenarios
from tests.report import livedata as live

LABELS = {
    "fifo+first-fit",
    "fifo-backfill+first-fit",
    "slurm+first-fit",
    "fifo+first-fit (Slurm)",
    "fifo-backfill+first-fit (Slurm)",
    "stock Slurm",
}


@pytest.fixture
def agreeing(tmp_path: Path) -> list[Path]:
    root = live.build(tmp_path / "ok")
    return [root / "live", root / "sim"]


@pytest.fixture
def disagreeing(tmp_path: Path) -> list[Path]:
    root = live.build(tmp_path / "bad", live.LIVE_DISAGREEING)
    return [root / "live", root / "sim"]


def test_live_and_simulated_runs_share_a_scenario_with_distinct_labels(agreeing: list[Path]) -> None:
    (scenario,) = load_scenarios(agreeing)
    assert scenario.name == live.WORKLOAD
    runs = {r.label: r for r in scenario.runs}
    assert set(runs) == LABELS
    assert runs["fifo+first-fit"].source == "simulator" and not runs["fifo+first-fit"].live
    assert runs["fifo+first-fit (Slurm)"].source == "slurm" and runs["fifo+first-fit (Slurm)"].daemon
    stock = runs["stock Slurm"]
    assert stock.live and stock.stock and (stock.policy, stock.placement) == ("slurm", "slurm")
    assert runs["fifo+first-fit (Slurm)"].name == runs["fifo+first-fit"].name == "fifo+first-fit"


def test_repeated_replays_keep_the_live_mark_and_get_their_folder(tmp_path: Path) -> None:
    for rep in ("rep1", "rep2"):
        live.write(tmp_path / rep, policy="fifo", live=True, avg_jct=5500.0)
    live.write(tmp_path / "sim", policy="fifo", avg_jct=5000.0)
    (scenario,) = load_scenarios([tmp_path])
    labels = [r.label for r in scenario.runs]
    assert labels == ["fifo+first-fit", "fifo+first-fit (Slurm, rep1)", "fifo+first-fit (Slurm, rep2)"]
    fid = build_fidelity(scenario)
    # both replays pair with the one simulated run, named by their own labels
    assert [(r.name, r.sim_label) for r in fid.rows] == [
        ("fifo+first-fit (Slurm, rep1)", "fifo+first-fit"),
        ("fifo+first-fit (Slurm, rep2)", "fifo+first-fit"),
    ]


def test_explicit_simulator_source_and_a_bad_source(tmp_path: Path) -> None:
    run = live.write(tmp_path / "a", policy="fifo", avg_jct=1.0)
    payload = json.loads((run / "summary.json").read_text())
    payload["meta"]["source"] = "simulator"
    (run / "summary.json").write_text(json.dumps(payload))
    (scenario,) = load_scenarios([tmp_path])
    assert scenario.runs[0].source == "simulator" and scenario.runs[0].label == "fifo+first-fit"
    payload["meta"]["source"] = "kubernetes"
    (run / "summary.json").write_text(json.dumps(payload))
    with pytest.raises(SlurmrlError, match="field 'meta.source' should be one of simulator, slurm") as info:
        load_scenarios([tmp_path])
    assert info.value.file == str(run / "summary.json") and "'kubernetes'" in info.value.message


def test_pairing_rule(agreeing: list[Path]) -> None:
    (scenario,) = load_scenarios(agreeing)
    pairs, unpaired = pair_runs(scenario)
    assert {(a.label, b.label) for a, b in pairs} == {
        ("fifo+first-fit (Slurm)", "fifo+first-fit"),
        ("fifo-backfill+first-fit (Slurm)", "fifo-backfill+first-fit"),
        ("stock Slurm", "slurm+first-fit"),
    }
    assert unpaired == ()


def test_stock_slurm_pairs_with_the_slurm_policy_whatever_its_placement(tmp_path: Path) -> None:
    live.write(tmp_path / "stock", policy="slurm", placement="slurm", live=True, daemon=False, avg_jct=10.0)
    live.write(tmp_path / "sim-topo", policy="slurm", placement="topology", avg_jct=8.0)
    # a daemon run needs the same placement: topology's twin is missing here
    live.write(tmp_path / "live-fifo", policy="fifo", placement="topology", live=True, avg_jct=10.0)
    live.write(tmp_path / "sim-fifo", policy="fifo", placement="first-fit", avg_jct=8.0)
    (scenario,) = load_scenarios([tmp_path])
    fid = build_fidelity(scenario)
    assert [(r.name, r.sim_label, r.stock) for r in fid.rows] == [("stock Slurm", "slurm+topology", True)]
    assert [(u.label, u.reason) for u in fid.unpaired] == [
        ("fifo+topology (Slurm)", "no simulated run of fifo+topology")
    ]


def test_several_candidates_are_not_guessed(tmp_path: Path) -> None:
    live.write(tmp_path / "stock", policy="slurm", placement="slurm", live=True, daemon=False, avg_jct=10.0)
    live.write(tmp_path / "a", policy="slurm", placement="first-fit", avg_jct=8.0)
    live.write(tmp_path / "b", policy="slurm", placement="topology", avg_jct=9.0)
    (scenario,) = load_scenarios([tmp_path])
    fid = build_fidelity(scenario)
    assert fid.rows == () and fid.ranking is None
    (left,) = fid.unpaired
    assert left.label == "stock Slurm"
    assert (
        left.reason == "2 simulated runs of policy slurm could be its twin: slurm+first-fit, slurm+topology"
    )


def test_relative_differences(disagreeing: list[Path]) -> None:
    (scenario,) = load_scenarios(disagreeing)
    rows = {r.name: r for r in build_fidelity(scenario).rows}
    assert set(rows) == {"fifo+first-fit", "fifo-backfill+first-fit", "stock Slurm"}
    assert rows["fifo+first-fit"].avg_jct_diff == pytest.approx(0.10)
    assert rows["fifo-backfill+first-fit"].avg_jct_diff == pytest.approx(0.50)  # 6000 s live vs 4000 s
    stock = rows["stock Slurm"]
    assert (stock.live_avg_jct, stock.sim_avg_jct) == (4950.0, 4500.0)
    assert (stock.live_p95_jct, stock.sim_p95_jct) == (9900.0, 9000.0)
    assert (stock.live_makespan, stock.sim_makespan) == (13200.0, 12000.0)
    assert (stock.live_finished, stock.sim_finished) == (3, 3)
    assert relative_difference(90.0, 100.0) == pytest.approx(-0.1)
    assert math.isnan(relative_difference(5.0, 0.0))
    assert math.isnan(relative_difference(math.nan, 5.0))


def test_ranking_agrees(agreeing: list[Path]) -> None:
    (scenario,) = load_scenarios(agreeing)
    ranking = build_fidelity(scenario).ranking
    order = ("fifo-backfill+first-fit", "stock Slurm", "fifo+first-fit")
    assert ranking is not None
    assert (ranking.live_order, ranking.sim_order, ranking.same_order) == (order, order, True)
    assert ranking.kendall_tau == pytest.approx(1.0)


def test_ranking_disagrees(disagreeing: list[Path]) -> None:
    (scenario,) = load_scenarios(disagreeing)
    ranking = build_fidelity(scenario).ranking
    assert ranking is not None and not ranking.same_order
    assert ranking.live_order == ("stock Slurm", "fifo+first-fit", "fifo-backfill+first-fit")
    assert ranking.sim_order == ("fifo-backfill+first-fit", "stock Slurm", "fifo+first-fit")
    # one concordant pair (fifo, stock) and two discordant ones
    assert ranking.kendall_tau == pytest.approx(-1 / 3)


def test_runs_without_finished_jobs_are_left_out_of_the_ranking(tmp_path: Path) -> None:
    live.write(tmp_path / "l1", policy="fifo", live=True, avg_jct=math.nan, finished=0)
    live.write(tmp_path / "s1", policy="fifo", avg_jct=5000.0)
    live.write(tmp_path / "l2", policy="fifo-backfill", live=True, avg_jct=4400.0)
    live.write(tmp_path / "s2", policy="fifo-backfill", avg_jct=4000.0)
    (scenario,) = load_scenarios([tmp_path])
    fid = build_fidelity(scenario)
    assert len(fid.rows) == 2 and fid.ranking is None
    assert "needs two paired policies" in format_fidelity(fid)
    assert fid.to_dict()["rows"][0]["live_avg_jct"] is None  # strict JSON: NaN becomes null


def test_kendall_tau_b() -> None:
    assert kendall_tau_b([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert kendall_tau_b([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    # a tie in x: sum of sign products 2 over sqrt(2 untied pairs in x * 3 in y)
    assert kendall_tau_b([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    assert math.isnan(kendall_tau_b([1, 1], [1, 2]))


def test_text_table(disagreeing: list[Path]) -> None:
    (scenario,) = load_scenarios(disagreeing)
    text = format_fidelity(build_fidelity(scenario))
    lines = text.splitlines()
    header = lines[0].split("  ")
    # live and simulated columns of one metric share a unit
    for name in ("live avg_jct [min]", "sim avg_jct [min]", "live makespan [h]", "sim makespan [h]"):
        assert name in lines[0], lines[0]
    assert re.fullmatch(r"[- ]+", lines[1]) and len(lines[1].split()) == len([h for h in header if h])
    backfill = next(line for line in lines if line.startswith("fifo-backfill+first-fit "))
    assert re.search(r"\b100\.0\s+66\.7\s+\+50\.0%", backfill)  # 6000 s, 4000 s in minutes
    stock = next(line for line in lines if line.startswith("stock Slurm "))
    assert "slurm+first-fit" in stock and "+10.0%" in stock
    assert "a different order (Kendall tau -0.33)" in text
    assert "  live: stock Slurm < fifo+first-fit < fifo-backfill+first-fit" in lines
    assert "  sim:  fifo-backfill+first-fit < stock Slurm < fifo+first-fit" in lines


def test_markdown_matches_the_text_table_and_escapes_labels(agreeing: list[Path], tmp_path: Path) -> None:
    (scenario,) = load_scenarios(agreeing)
    fid = build_fidelity(scenario)
    md = fidelity_markdown(fid)
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(fid.rows)
    assert table[1] == "|---|---|" + "---:|" * 9
    assert "| stock Slurm | slurm+first\\-fit |" not in md  # only what could become markup is escaped
    assert "| stock Slurm | slurm+first-fit | 82.5 | 75.0 | +10.0% |" in md
    assert "the same order in both worlds (Kendall tau 1.00)" in md

    weird = "a|b<script>*x*"
    live.write(tmp_path / "w" / "l", policy=weird, live=True, avg_jct=2.0, workload="w")
    live.write(tmp_path / "w" / "s", policy=weird, avg_jct=1.0, workload="w")
    (odd,) = load_scenarios([tmp_path / "w"])
    html = markdown_to_html(fidelity_markdown(build_fidelity(odd)))
    assert "<script>" not in html and "<em>" not in html
    assert "<td>a|b&lt;script&gt;*x*+first-fit</td>" in html
    assert html.count("<td") == 11  # one row, the pipe did not split a cell


def assert_one_line_error(result: Result, message: str) -> None:
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: ") and message in lines[0], lines[0]


def test_cli_prints_the_table_and_json(disagreeing: list[Path]) -> None:
    runner = CliRunner()
    text = runner.invoke(main, ["report", "fidelity", *map(str, disagreeing)])
    assert text.exit_code == 0, text.output
    assert text.output.splitlines()[0] == f"{live.WORKLOAD} on {live.CLUSTER}"
    assert "+50.0%" in text.output and "a different order" in text.output
    as_json = runner.invoke(main, ["report", "fidelity", "--json", *map(str, disagreeing)])
    assert as_json.exit_code == 0, as_json.output
    (scenario,) = json.loads(as_json.output)["scenarios"]
    rows = {r["name"]: r for r in scenario["rows"]}
    assert rows["fifo-backfill+first-fit"]["avg_jct_diff"] == pytest.approx(0.5)
    assert rows["stock Slurm"]["sim_label"] == "slurm+first-fit" and rows["stock Slurm"]["stock"] is True
    assert scenario["ranking"]["same_order"] is False
    assert scenario["ranking"]["kendall_tau"] == pytest.approx(-1 / 3)


def test_cli_errors_when_nothing_pairs(agreeing: list[Path]) -> None:
    live_dir, sim_dir = agreeing
    runner = CliRunner()
    only_sim = runner.invoke(main, ["report", "fidelity", str(sim_dir)])
    assert_one_line_error(only_sim, f"no live Slurm run in {sim_dir}")
    only_live = runner.invoke(main, ["report", "fidelity", "--json", str(live_dir)])
    assert_one_line_error(only_live, f"no live run in {live_dir} has a simulated twin")
    assert "stock Slurm: no simulated run of policy slurm" in only_live.output
    with pytest.raises(SlurmrlError, match="has a simulated twin"):
        load_fidelity([live_dir])


def test_cli_site_subcommand_and_bare_form(agreeing: list[Path], tmp_path: Path) -> None:
    runner = CliRunner()
    for args in (["report", "site"], ["report"]):
        out = tmp_path / "-".join(args)
        result = runner.invoke(main, [*args, *map(str, agreeing), "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert result.output.strip() == str((out / "index.html").resolve())


def test_fidelity_needs_no_plotting_library(agreeing: list[Path]) -> None:
    code = (
        "import sys\n"
        "from slurmrl.cli import main\n"
        "try:\n"
        f"    main(['report', 'fidelity', {str(agreeing[0])!r}, {str(agreeing[1])!r}])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print('matplotlib' in sys.modules, 'jinja2' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False False"


def test_site_shows_fidelity_and_marks_live_runs(disagreeing: list[Path], tmp_path: Path) -> None:
    index = render_report(disagreeing, tmp_path / "site")
    page = (index.parent / f"scenario-{live.WORKLOAD}.html").read_text()
    assert '<h2 id="fidelity">Simulator fidelity</h2>' in page
    section = page.split('<div class="fidelity">', 1)[1].split("</div>", 1)[0]
    assert "<td>stock Slurm</td>\n<td>slurm+first-fit</td>" in section
    assert '<td align="right">+50.0%</td>' in section
    assert "a different order (Kendall tau -0.33)" in section
    assert "<li>live: stock Slurm &lt; fifo+first-fit &lt; fifo-backfill+first-fit</li>" in section
    rows = re.findall(r'<tr class="([^"]+)" data-label="([^"]+)">(.*?)</tr>', page, re.S)
    live_rows = {label for cls, label, _ in rows if "live" in cls.split()}
    assert live_rows == {"fifo+first-fit (Slurm)", "fifo-backfill+first-fit (Slurm)", "stock Slurm"}
    badges = {
        label: re.search(r'<span class="tag live" title="([^"]+)">Slurm</span>', body)
        for _, label, body in rows
    }
    assert badges["fifo+first-fit"] is None
    assert badges["stock Slurm"].group(1) == (
        "measured on a live Slurm cluster; Slurm 22.05.8; trace replayed 60x faster; Slurm scheduling on its own"
    )
    # live runs are drawn dashed in the line plots
    cdf = re.search(r'<svg[^>]*aria-labelledby="jct-cdf-title".*?</svg>', page, re.S).group(0)
    assert "stroke-dasharray" in cdf
    index_page = index.read_text()
    assert '<span class="chip live">stock Slurm</span>' in index_page


def test_site_without_live_runs_is_unchanged(tmp_path: Path) -> None:
    root = live.build(tmp_path)
    index = render_report([root / "sim"], tmp_path / "site")
    page = (index.parent / f"scenario-{live.WORKLOAD}.html").read_text()
    assert 'id="fidelity"' not in page and "tag live" not in page.split("</style>", 1)[1]
    cdf = re.search(r'<svg[^>]*aria-labelledby="jct-cdf-title".*?</svg>', page, re.S).group(0)
    assert "stroke-dasharray" not in cdf


def test_live_runs_take_their_twins_colour(tmp_path: Path) -> None:
    root = live.build(tmp_path)
    live.write(root / "live" / "lonely", policy="qssf", live=True, avg_jct=1.0)
    (scenario,) = load_scenarios([root / "live", root / "sim"])
    colors = colors_for(scenario.runs)
    assert colors["fifo+first-fit (Slurm)"] == colors["fifo+first-fit"]
    assert colors["stock Slurm"] == colors["slurm+first-fit"]
    sims = {colors[r.label] for r in scenario.runs if not r.live}
    assert len(sims) == 3 and colors["qssf+first-fit (Slurm)"] not in sims
