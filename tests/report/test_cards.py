"""Policy cards: Markdown rendered, then cleaned against an allow-list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmrl.errors import SlurmrlError
from slurmrl.report.cards import ALLOWED_TAGS, find_cards, markdown_to_html

HOSTILE = """# Hostile <script>window.pwned = 1</script> card

Text <script>window.pwned = 2</script> and <img src="x" onerror="window.pwned = 3">.

[click](javascript:window.pwned=4) [CLICK](JaVaScRiPt:alert(1)) [data](data:text/html,<b>x</b>)
<a href="https://example.org" onclick="window.pwned = 5" style="position:fixed">styled</a>
<iframe src="https://example.org"></iframe><svg onload="window.pwned = 6"></svg>
<p class="evil" onmouseover="window.pwned = 7">hover</p>

[fine](https://example.org/a) [local](card-other.html#top) [mail](mailto:a@example.org)
"""


def test_hostile_card_loses_scripts_handlers_and_script_links() -> None:
    out = markdown_to_html(HOSTILE)
    low = out.lower()
    for bad in (
        "<script",
        "pwned",
        "javascript:",
        "data:",
        "onerror",
        "onclick",
        "onload",
        "onmouseover",
        "<img",
        "<iframe",
        "<svg",
        "style=",
        "evil",
    ):
        assert bad not in low, bad
    assert '<a href="https://example.org/a" rel="noopener noreferrer">fine</a>' in out
    assert '<a href="card-other.html#top" rel="noopener noreferrer">local</a>' in out
    assert 'href="mailto:a@example.org"' in out
    assert ">styled</a>" in out and ">hover</p>" in out  # the text stays, the markup goes


def test_card_markdown_keeps_what_cards_use() -> None:
    text = (
        "# Title\n\nTrained with **PPO** on `week1`, *twice*.\n\n1. one\n2. two\n\n"
        "```py\na < b\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n"
    )
    out = markdown_to_html(text)
    assert "<h1>Title</h1>" in out
    assert "<strong>PPO</strong>" in out and "<code>week1</code>" in out and "<em>twice</em>" in out
    assert "<ol>\n<li>one</li>\n<li>two</li>\n</ol>" in out
    assert '<pre><code class="language-py">a &lt; b\n</code></pre>' in out
    assert '<th align="right">b</th>' in out and '<td align="right">2</td>' in out


def test_find_cards_sanitises_each_card(tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "card.md").write_text(HOSTILE, encoding="utf-8")
    (card,) = find_cards(tmp_path)
    assert card.slug == "bad" and "<script" not in card.html.lower()
    assert card.history_html is None


def test_find_cards_reads_the_history_beside_a_card_sanitised(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "card.md").write_text("# p\n\ntoday\n", encoding="utf-8")
    (tmp_path / "p" / "history.md").write_text("## An earlier recipe\n\n" + HOSTILE, encoding="utf-8")
    (card,) = find_cards(tmp_path)
    assert card.history_html is not None and "<h2>An earlier recipe</h2>" in card.history_html
    assert "<script" not in card.history_html.lower() and "today" not in card.history_html


def test_an_unreadable_history_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "card.md").write_text("# p\n", encoding="utf-8")
    (tmp_path / "p" / "history.md").write_bytes(b"\xff\xfe not utf-8 \x80")
    with pytest.raises(SlurmrlError) as err:
        find_cards(tmp_path)
    assert "history.md" in err.value.format()


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200))
def test_rendered_cards_hold_only_allowed_tags(text: str) -> None:
    out = markdown_to_html(text)
    for tag in re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", out):
        assert tag.lower() in ALLOWED_TAGS, tag
