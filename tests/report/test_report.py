from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from slurmrl.cli import main
from slurmrl.errors import SlurmrlError
from slurmrl.report import render_report
from slurmrl.report.plots import TEXT_GRAY
from slurmrl.report.runs import find_run_dirs, load_scenarios, slugify
from slurmrl.report.table import METRICS, WARM_ONLY, build_table
from tests.report import sitedata as data


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = data.build_results(tmp_path_factory.mktemp("results"))
    cards = data.build_cards(root)
    out = root / "site"
    index = render_report([root / "cmp", root / "single"], out, cards=cards)
    assert index == out / "index.html"
    return out


def _table_rows(page: str) -> dict[str, list[str]]:
    """policy label -> the cells of its row in the comparison table (raw HTML per cell)."""
    body = page.split('<table class="metrics sortable"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = {}
    for tr in re.findall(r"<tr[^>]*data-label=\"([^\"]+)\"[^>]*>(.*?)</tr>", body, re.S):
        rows[tr[0]] = re.findall(r"<td[^>]*>.*?</td>", tr[1], re.S)
    return rows


def _column(key: str, warm: bool = False) -> int:
    return [m.key for m in METRICS if warm or m.key not in WARM_ONLY].index(key)


def test_pages_exist_and_link(site: Path) -> None:
    names = sorted(p.name for p in site.iterdir())
    assert names == ["card-rl-ppo.html", "index.html", "scenario-one-job.html", "scenario-tiny-cmp.html"]
    index = (site / "index.html").read_text()
    for target in ("scenario-one-job.html", "scenario-tiny-cmp.html", "card-rl-ppo.html"):
        assert f'href="{target}"' in index
    assert "lower bound" in index.lower() or "Lower bounds" in index
    # self-contained: no external fetches
    for page in site.glob("*.html"):
        text = page.read_text()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), page.name
        assert "<link" not in text and "@import" not in text


def test_comparison_table_lists_policies_and_marks_best(site: Path) -> None:
    page = (site / "scenario-tiny-cmp.html").read_text()
    rows = _table_rows(page)
    assert set(rows) == {"fifo+first-fit", "fifo-backfill+first-fit", "sjf-oracle+first-fit"}
    jct = _column("avg_jct")
    # lower is better; the oracle (3500 s) is a bound and is not ranked, so backfill (4000 s) wins
    assert 'class="num best"' in rows["fifo-backfill+first-fit"][jct]
    assert "best" not in rows["sjf-oracle+first-fit"][jct]
    assert "best" not in rows["fifo+first-fit"][jct]
    util = _column("gpu_utilization")  # higher is better
    assert 'class="num best"' in rows["fifo-backfill+first-fit"][util]
    assert "best" not in rows["fifo+first-fit"][util]
    queue = _column("avg_queue_length")  # lower is better
    assert 'class="num best"' in rows["fifo+first-fit"][queue]
    assert "best" not in rows["fifo-backfill+first-fit"][queue]
    jobs = _column("jobs")  # neutral: never marked
    assert not any("best" in r[jobs] for r in rows.values())
    # durations in the unit named by the header: 4000 s -> 66.67 min
    assert 'data-value="4000.0"' in rows["fifo-backfill+first-fit"][jct]
    assert "66.67" in rows["fifo-backfill+first-fit"][jct]
    assert "mean JCT [min]" in page
    # oracle rows and the bound row are labelled
    assert "oracle bound" in page
    assert '<tr class="bound">' in page and "lower bound" in page


def test_table_without_deployable_runs_ranks_all(tmp_path: Path) -> None:
    root = tmp_path / "r"
    data.write_run(
        root / "a", policy="a", workload="w", deployable=False, jobs=data.FOUR_JOBS_FIFO, avg_jct=10.0
    )
    data.write_run(
        root / "b", policy="b", workload="w", deployable=False, jobs=data.FOUR_JOBS_FIFO, avg_jct=20.0
    )
    (scenario,) = load_scenarios([root])
    table = build_table(scenario)
    best = {row.label: row.cells[_column("avg_jct")].best for row in table.rows}
    assert best == {"a+first-fit": True, "b+first-fit": False}


def test_single_policy_single_job_scenario(site: Path) -> None:
    page = (site / "scenario-one-job.html").read_text()
    rows = _table_rows(page)
    assert list(rows) == ["fifo+first-fit"]
    assert 'class="num best"' not in page  # nothing to compare against
    assert page.count("<svg") == 5


def test_plots_are_inline_svg_with_gray_text(site: Path) -> None:
    page = (site / "scenario-tiny-cmp.html").read_text()
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    assert len(svgs) == 5
    ids: list[str] = []
    for svg in svgs:
        tree = ET.fromstring(svg)
        ns = {"s": "http://www.w3.org/2000/svg"}
        texts = tree.findall(".//s:text", ns)
        assert texts, "text must be real <text> elements so CSS can recolour it"
        for t in texts:
            # a text's colour sits on the element or, for mathtext, on each of its tspans
            styled = [t] if "fill" in t.get("style", "") else t.findall("s:tspan", ns)
            assert styled, ET.tostring(t)
            for el in styled:
                fill = re.search(r"fill:\s*(#[0-9a-fA-F]{6})", el.get("style", ""))
                assert fill is not None and fill.group(1).lower() not in ("#000000", "#ffffff")
                assert fill.group(1).lower() == TEXT_GRAY
        bg = tree.find(".//s:g[@id]/s:path", ns)
        assert bg is None or "fill: #ffffff" not in (bg.get("style") or "")
        ids += [el.get("id") for el in tree.iter() if el.get("id")]
    assert len(ids) == len(set(ids)), "element ids must be unique across the page's figures"
    for label in ("hours, log scale", "[GPUs]", "[fraction]", "mean wait [hours]"):
        assert label in page
    assert "svg.plot text" in page  # stylesheet recolours plot text per theme
    assert "prefers-color-scheme: dark" in page


def test_a_card_with_history_links_its_history_page(tmp_path: Path) -> None:
    root = data.build_results(tmp_path)
    cards = data.build_cards(root)
    (cards / "rl-ppo" / "history.md").write_text(
        "# rl-ppo: history\n\n## An earlier recipe\n", encoding="utf-8"
    )
    out = root / "site"
    render_report([root / "cmp"], out, cards=cards)
    card, history = (out / "card-rl-ppo.html").read_text(), (out / "card-rl-ppo-history.html").read_text()
    assert 'href="card-rl-ppo-history.html"' in card
    assert "<h2>An earlier recipe</h2>" in history and 'href="card-rl-ppo.html"' in history
    assert "history.md" in history  # its source


def test_card_page_renders_markdown(site: Path) -> None:
    page = (site / "card-rl-ppo.html").read_text()
    assert "<h1>rl-ppo: a PPO ordering policy</h1>" in page
    assert "<strong>PPO</strong>" in page and "<code>philly-64-week1</code>" in page
    assert "<table>" in page and "<li>observation: the first 32 pending jobs</li>" in page


def test_compare_layout_and_run_folder_inputs(tmp_path: Path) -> None:
    root = data.build_results(tmp_path)
    assert len(find_run_dirs([root / "cmp"])) == 3  # DIR/runs/* is two levels down
    assert len(find_run_dirs([root / "cmp" / "runs" / "fifo+first-fit"])) == 1
    assert len(find_run_dirs([root])) == 1  # depth 3 is too deep; only single/run is found
    names = [s.name for s in load_scenarios([root / "cmp", root / "single" / "run", root / "cmp"])]
    assert names == ["one job", "tiny-cmp"]


def test_error_no_results_names_paths(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SlurmrlError, match="no simulation results found in .*empty"):
        render_report([tmp_path / "empty"], tmp_path / "out")
    with pytest.raises(SlurmrlError, match=r"not a result folder: .*nowhere \(does not exist\)"):
        render_report([tmp_path / "nowhere"], tmp_path / "out")
    (tmp_path / "jobs.csv").write_text("")
    with pytest.raises(SlurmrlError, match=r"jobs.csv \(a file: pass the folder that holds it\)"):
        render_report([tmp_path / "jobs.csv"], tmp_path / "out")


def test_error_missing_or_bad_summary_names_file(tmp_path: Path) -> None:
    run = data.write_run(tmp_path / "r", policy="fifo", workload="w", jobs=data.ONE_JOB)
    (run / "summary.json").unlink()
    with pytest.raises(SlurmrlError) as info:
        render_report([tmp_path], tmp_path / "out")
    assert info.value.file == str(run / "summary.json")
    (run / "summary.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(SlurmrlError, match="invalid JSON") as info:
        render_report([tmp_path], tmp_path / "out")
    assert info.value.file == str(run / "summary.json")


@pytest.mark.parametrize("key", ["cluster", "trace"])
def test_error_mismatched_runs_names_both(tmp_path: Path, key: str) -> None:
    a = data.write_run(tmp_path / "a", policy="fifo", workload="w", jobs=data.ONE_JOB)
    b = data.write_run(tmp_path / "b", policy="sjf", workload="w", jobs=data.ONE_JOB, **{key: "other"})
    with pytest.raises(SlurmrlError, match=f"different {key}s") as info:
        render_report([tmp_path], tmp_path / "out")
    assert str(a) in info.value.message and str(b) in info.value.message and "'other'" in info.value.message


def test_duplicate_labels_get_folder_names(tmp_path: Path) -> None:
    data.write_run(tmp_path / "seed1", policy="fifo", workload="w", jobs=data.ONE_JOB)
    data.write_run(tmp_path / "seed2", policy="fifo", workload="w", jobs=data.ONE_JOB)
    (scenario,) = load_scenarios([tmp_path])
    assert [r.label for r in scenario.runs] == ["fifo+first-fit (seed1)", "fifo+first-fit (seed2)"]


def test_cli_report(tmp_path: Path) -> None:
    root = data.build_results(tmp_path)
    runner = CliRunner()
    ok = runner.invoke(
        main,
        [
            "report",
            str(root / "cmp"),
            "--out",
            str(tmp_path / "site"),
            "--cards",
            str(tmp_path / "nocards-here"),
        ],
    )
    assert ok.exit_code == 1 and "policy card folder does not exist" in ok.output
    ok = runner.invoke(main, ["report", str(root / "cmp"), "--out", str(tmp_path / "site")])
    assert ok.exit_code == 0, ok.output
    assert ok.output.strip() == str((tmp_path / "site" / "index.html").resolve())
    bad = runner.invoke(main, ["report", str(tmp_path / "site"), "--out", str(tmp_path / "x")])
    assert bad.exit_code == 1 and "Error: no simulation results found" in bad.output
    assert "Traceback" not in bad.output


def test_rerender_is_stable_apart_from_timestamp(site: Path, tmp_path: Path) -> None:
    root = site.parent
    render_report([root / "cmp", root / "single"], tmp_path / "again", cards=root / "policies")
    strip = re.compile(r"on \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    for name in ("index.html", "scenario-tiny-cmp.html", "scenario-one-job.html"):
        one = strip.sub("", (site / name).read_text())
        two = strip.sub("", (tmp_path / "again" / name).read_text())
        assert one == two, name


@given(st.text(max_size=40))
def test_slugify_is_url_safe(text: str) -> None:
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", slugify(text))


def test_json_summary_nulls_render_as_dash(tmp_path: Path) -> None:
    run = data.write_run(tmp_path / "r", policy="fifo", workload="w", jobs=data.ONE_JOB)
    payload = json.loads((run / "summary.json").read_text())
    payload["p99_jct"] = None
    (run / "summary.json").write_text(json.dumps(payload))
    (scenario,) = load_scenarios([tmp_path])
    assert build_table(scenario).rows[0].cells[_column("p99_jct")].text == "–"


def _old_summary_file(run: Path) -> None:
    """Rewrite a run's summary.json as written before finished and killed jobs were told apart."""
    payload = json.loads((run / "summary.json").read_text())
    payload["completed"] = payload.pop("finished") + payload["killed"]
    payload["killed_at_limit"] = payload.pop("killed")
    for key in ("last_end", "idle_gpu_hours_waiting", "ftf_rho_max", "ftf_unfair_fraction", "steady_jobs"):
        del payload[key]
    for key in ("steady_avg_jct", "steady_p95_jct", "steady_utilization"):
        del payload[key]
    (run / "summary.json").write_text(json.dumps(payload))


def test_runs_written_before_finished_and_killed_render_beside_new_ones(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    old = data.write_run(
        root / "old",
        policy="fifo",
        workload="w",
        jobs=[line.removesuffix(",4000.0") for line in data.FOUR_JOBS_FIFO[:1]],
        job_header=data.OLD_JOB_HEADER,
        finished=0,
        killed=1,
    )
    _old_summary_file(old)
    data.write_run(root / "new", policy="sjf", workload="w", jobs=data.FOUR_JOBS_SJF, finished=3, killed=1)
    (scenario,) = load_scenarios([root])
    table = build_table(scenario)
    cells = {row.label: row.cells for row in table.rows}
    assert cells["fifo+first-fit"][_column("killed")].text == "1"
    assert cells["fifo+first-fit"][_column("finished")].text == "0"
    assert cells["fifo+first-fit"][_column("steady_avg_jct")].text == "–"  # not in the old file
    assert cells["sjf+first-fit"][_column("finished")].text == "3"
    assert cells["sjf+first-fit"][_column("steady_avg_jct")].text == "83.33"  # 5000 s in minutes
    index = render_report([root], tmp_path / "site")
    page = (index.parent / "scenario-w.html").read_text()
    assert ">killed<" in page and ">finished<" in page


def test_the_backlog_columns_show_for_warm_started_runs_only(tmp_path: Path) -> None:
    cold = data.write_run(tmp_path / "cold" / "r", policy="fifo", workload="w", jobs=data.ONE_JOB)
    (scenario,) = load_scenarios([cold.parent])
    assert not WARM_ONLY & {c.metric.key for c in build_table(scenario).columns}
    warm = data.write_run(tmp_path / "warm" / "r", policy="fifo", workload="w", jobs=data.ONE_JOB)
    payload = json.loads((warm / "summary.json").read_text())
    payload.update(backlog_jobs=12, backlog_avg_jct=7200.0)
    (warm / "summary.json").write_text(json.dumps(payload))
    (scenario,) = load_scenarios([warm.parent])
    table = build_table(scenario)
    assert [c.metric.key for c in table.columns] == [m.key for m in METRICS]
    assert table.rows[0].cells[_column("backlog_avg_jct", warm=True)].value == 7200.0
