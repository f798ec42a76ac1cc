"""The report site in a real browser: pages load offline, plots have size, sorting works.

Uses Playwright with the system Chromium (Debian package ``chromium``); no
browser download. Skipped only outside CI when Chromium or Playwright is
missing; in CI (``CI`` set) a missing browser is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmrl.report import render_report
from tests.report import sitedata as data

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parent / "output"


def _browser_missing() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not installed (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "playwright not installed (pip install playwright)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests must run in CI: {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield instance
        instance.close()


# A card that tries every way in: inline script, event handlers, script links,
# an image and a frame that would load over the network.
HOSTILE_CARD = """# Hostile <script>window.pwned = 1</script> card

Text <script>window.pwned = 2</script> and <img src="x.png" onerror="window.pwned = 3">.

[click me](javascript:window.pwned=4) <a href="JaVaScRiPt:window.pwned=5">again</a>
<iframe src="https://example.org/"></iframe><svg onload="window.pwned = 6"></svg>
<p onmouseover="window.pwned = 7" style="position:fixed;inset:0">cover</p>
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = data.build_results(tmp_path_factory.mktemp("results"))
    cards = data.build_cards(root)
    (cards / "hostile").mkdir()
    (cards / "hostile" / "card.md").write_text(HOSTILE_CARD, encoding="utf-8")
    render_report([root / "cmp", root / "single"], root / "site", cards=cards)
    return root / "site"


@pytest.fixture(scope="module")
def tab(browser) -> Iterator[tuple[object, list[str]]]:
    """One browser tab for all tests (opening tabs is the slow part) and the problems it saw."""
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1366, "height": 850})
    page.on(
        "console",
        lambda msg: errors.append(f"{msg.type}: {msg.text}") if msg.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on(
        "request",
        lambda req: (
            errors.append(f"network: {req.url}")
            if not req.url.startswith(("file://", "data:", "about:"))
            else None
        ),
    )
    yield page, errors
    page.close()


def _open(tab, path: Path, scheme: str = "light"):
    page, errors = tab
    errors.clear()
    page.emulate_media(color_scheme=scheme)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page


def test_every_page_loads_offline_without_errors(tab, site: Path) -> None:
    pages = sorted(site.glob("*.html"))
    assert len(pages) == 5
    for scheme in ("light", "dark"):
        for path in pages:
            _open(tab, path, scheme)
            assert tab[1] == [], f"{path.name} ({scheme}): {tab[1]}"


def test_plots_have_size_and_themed_text(tab, site: Path) -> None:
    for name in ("scenario-tiny-cmp.html", "scenario-one-job.html"):
        page = _open(tab, site / name)
        boxes = page.eval_on_selector_all(
            "svg.plot",
            "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })",
        )
        assert len(boxes) == 5
        assert all(w > 100 and h > 50 for w, h in boxes), boxes
        light = page.eval_on_selector("svg.plot text", "e => getComputedStyle(e).fill")
        page.emulate_media(color_scheme="dark")
        dark = page.eval_on_selector("svg.plot text", "e => getComputedStyle(e).fill")
        assert light != dark  # CSS picks a plot text colour per theme
        for color in (light, dark):
            assert color not in ("rgb(0, 0, 0)", "rgb(255, 255, 255)")
        assert tab[1] == []


def _column_values(page, index: int) -> list[str]:
    return page.eval_on_selector_all(
        "#comparison tbody tr", f"rows => rows.map(r => r.cells[{index}].getAttribute('data-value'))"
    )


def test_clicking_a_header_sorts_rows(tab, site: Path) -> None:
    page = _open(tab, site / "scenario-tiny-cmp.html")
    headers = page.eval_on_selector_all("#comparison thead th", "els => els.map(e => e.textContent.trim())")
    jct = next(i for i, h in enumerate(headers) if h.startswith("mean JCT"))
    header = page.locator("#comparison thead th").nth(jct)

    header.click()
    values = [float(v) for v in _column_values(page, jct)]
    assert values == sorted(values) == [3500.0, 4000.0, 5000.0]
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    values = [float(v) for v in _column_values(page, jct)]
    assert values == [5000.0, 4000.0, 3500.0]
    assert header.get_attribute("aria-sort") == "descending"

    page.locator("#comparison thead th").first.click()  # text column
    labels = page.eval_on_selector_all("#comparison tbody tr", "rows => rows.map(r => r.dataset.label)")
    assert labels == ["fifo+first-fit", "fifo-backfill+first-fit", "sjf-oracle+first-fit"]
    # the lower-bound row stays in the footer
    assert page.eval_on_selector("#comparison tfoot tr", "r => r.className") == "bound"
    assert tab[1] == []


def test_screenshots(tab, site: Path, tmp_path: Path) -> None:
    """Saved under tests/report/output/ (not tracked) for a human to look at."""
    SCREENSHOTS.mkdir(exist_ok=True)
    for name, scheme in (
        ("index.html", "light"),
        ("scenario-tiny-cmp.html", "light"),
        ("scenario-tiny-cmp.html", "dark"),
    ):
        page = _open(tab, site / name, scheme)
        shot = tmp_path / f"{Path(name).stem}-{scheme}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert tab[1] == []
        shutil.copy(shot, SCREENSHOTS / shot.name)


def test_hostile_card_runs_nothing_and_loads_nothing(tab, site: Path) -> None:
    page, errors = tab
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    _open(tab, site / "card-hostile.html")
    card = page.locator("article.card")
    card.hover()  # would fire an onmouseover that survived
    for link in card.locator("a").all():
        link.click(force=True, timeout=5000)  # would run a javascript: URL that survived
    assert page.url.endswith("card-hostile.html")
    assert page.evaluate("window.pwned") is None
    assert dialogs == []
    assert card.locator("script, img, iframe, svg, [style]").count() == 0
    handlers = page.eval_on_selector_all(
        "article.card *", "els => els.flatMap(e => e.getAttributeNames().filter(n => n.startsWith('on')))"
    )
    assert handlers == []
    hrefs = page.eval_on_selector_all("article.card a", "els => els.map(e => e.getAttribute('href'))")
    assert all(h is None for h in hrefs), hrefs
    assert "click me" in card.inner_text() and "cover" in card.inner_text()
    assert errors == []
