"""Trained-policy cards (``policies/<name>/card.md``) as HTML fragments.

A card states what holds today; its folder may keep a ``history.md`` beside
it (earlier recipes and kept alternatives, with the figures of their time),
rendered the same way, so the site can link a card to its history.

Cards are Markdown, rendered by the ``markdown`` package. Like any full
Markdown implementation it passes inline HTML through, and a card may come
with a checkpoint from anywhere, so its HTML is then cleaned with ``nh3``
(bindings to the Rust ``ammonia`` sanitiser) against an allow-list: the tags
cards use (headings, paragraphs, lists, tables, code, emphasis, links), no
event handlers, no ``style``, and links only to http(s), mailto or relative
addresses. Scripts and their content, ``javascript:`` links, ``on*=``
attributes and images (which would load over the network) are dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from slurmrl.errors import SlurmrlError

CARD_FILE = "card.md"
HISTORY_FILE = "history.md"


@dataclass(frozen=True)
class Card:
    name: str  # the policy folder name
    slug: str
    title: str
    html: str
    source: Path
    history_html: str | None = None  # history.md beside the card, if there is one


def find_cards(folder: Path | None) -> tuple[Card, ...]:
    """Every ``<folder>/*/card.md``, by folder name; none when ``folder`` is None or absent."""
    if folder is None or not folder.is_dir():
        return ()
    cards = []
    for path in sorted(folder.glob(f"*/{CARD_FILE}")):
        text = _read(path)
        history = path.with_name(HISTORY_FILE)
        history_html = markdown_to_html(_read(history)) if history.is_file() else None
        name = path.parent.name
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "card"
        cards.append(Card(name, slug, _title(text, name), markdown_to_html(text), path, history_html))
    return tuple(cards)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        what = "policy card" if path.name == CARD_FILE else "policy card history"
        raise SlurmrlError(f"cannot read {what}: {exc}", file=str(path)) from None


def _title(text: str, default: str) -> str:
    for line in text.splitlines():
        m = re.match(r"#\s+(.+?)\s*#*\s*$", line)
        if m:
            return m.group(1)
    return default


# What a card may contain after rendering; everything else is removed.
ALLOWED_TAGS = frozenset(
    {
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "p",
        "br",
        "hr",
        "blockquote",
        "ul",
        "ol",
        "li",
        "dl",
        "dt",
        "dd",
        "pre",
        "code",
        "strong",
        "em",
        "b",
        "i",
        "del",
        "sub",
        "sup",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "a",
        "abbr",
    }
)
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "code": {"class"},  # language-NAME from fenced code; other classes are dropped
    "th": {"align"},
    "td": {"align"},
    "ol": {"start"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
_LANGUAGE_CLASS = re.compile(r"language-[\w+-]+")


def _keep_attribute(tag: str, attribute: str, value: str) -> str | None:
    if attribute == "class":
        return value if _LANGUAGE_CLASS.fullmatch(value) else None
    return value


def markdown_to_html(text: str) -> str:
    """Card Markdown as an HTML fragment that carries no script and loads nothing."""
    import markdown
    import nh3

    raw = markdown.markdown(
        text,
        extensions=["tables", "fenced_code", "sane_lists"],
        # align="..." rather than style="text-align: ...": no style attribute is let through
        extension_configs={"tables": {"use_align_attribute": True}},
    )
    return nh3.clean(
        raw,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        attribute_filter=_keep_attribute,
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
    )
