"""Trained-policy cards (``policies/<name>/card.md``) as HTML fragments.

The ``markdown`` package is used when installed; like any full Markdown
implementation it passes inline HTML through, which is fine for cards that
live in the repository. Without it a small converter handles what cards use —
headings, paragraphs, lists, pipe tables, fenced code, inline code, emphasis
and links — and escapes everything else, so a card cannot inject markup.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

from slurmrl.errors import SlurmrlError

CARD_FILE = "card.md"


@dataclass(frozen=True)
class Card:
    name: str  # the policy folder name
    slug: str
    title: str
    html: str
    source: Path


def find_cards(folder: Path | None) -> tuple[Card, ...]:
    """Every ``<folder>/*/card.md``, by folder name; none when ``folder`` is None or absent."""
    if folder is None or not folder.is_dir():
        return ()
    cards = []
    for path in sorted(folder.glob(f"*/{CARD_FILE}")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SlurmrlError(f"cannot read policy card: {exc}", file=str(path)) from None
        name = path.parent.name
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "card"
        cards.append(Card(name, slug, _title(text, name), markdown_to_html(text), path))
    return tuple(cards)


def _title(text: str, default: str) -> str:
    for line in text.splitlines():
        m = re.match(r"#\s+(.+?)\s*#*\s*$", line)
        if m:
            return m.group(1)
    return default


def markdown_to_html(text: str, *, prefer_package: bool = True) -> str:
    if prefer_package:
        try:
            import markdown
        except ImportError:
            pass
        else:
            return markdown.markdown(text, extensions=["tables", "fenced_code", "sane_lists"])
    return simple_markdown(text)


# ---------------------------------------------------------------------------
# The fallback converter

_INLINE_CODE = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_ITALIC = re.compile(r"(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?!\*)|(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)")
_SAFE_URL = re.compile(r"^(https?:|mailto:|#|[^:]*$)", re.IGNORECASE)


def _inline(text: str) -> str:
    codes: list[str] = []

    def stash(m: re.Match[str]) -> str:
        codes.append(f"<code>{html.escape(m.group(1), quote=False)}</code>")
        return f"\x00{len(codes) - 1}\x00"

    out = html.escape(_INLINE_CODE.sub(stash, text), quote=False)

    def link(m: re.Match[str]) -> str:
        url = html.unescape(m.group(2))
        if not _SAFE_URL.match(url):
            return m.group(1)
        return f'<a href="{html.escape(url, quote=True)}">{m.group(1)}</a>'

    out = _LINK.sub(link, out)
    out = _BOLD.sub(lambda m: f"<strong>{m.group(1) or m.group(2)}</strong>", out)
    out = _ITALIC.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", out)
    return re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], out)


def _cells(line: str) -> list[str]:
    core = line.strip()
    if core.startswith("|"):
        core = core[1:]
    if core.endswith("|"):
        core = core[:-1]
    return [c.strip() for c in core.split("|")]


_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s+(.*)$")


def simple_markdown(text: str) -> str:
    lines = text.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    para: list[str] = []
    i = 0

    def flush() -> None:
        if para:
            out.append("<p>" + _inline(" ".join(s.strip() for s in para)) + "</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            lang = stripped[3:].strip()
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            cls = f' class="language-{html.escape(lang)}"' if re.fullmatch(r"[\w+-]+", lang) else ""
            out.append(f"<pre><code{cls}>{html.escape(chr(10).join(body), quote=False)}</code></pre>")
            i += 1
            continue
        heading = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", stripped)
        if heading:
            flush()
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            i += 1
            continue
        if "|" in stripped and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
            flush()
            head = _cells(stripped)
            rows = []
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append(_cells(lines[i]))
                i += 1
            parts = ["<table><thead><tr>", *(f"<th>{_inline(c)}</th>" for c in head), "</tr></thead><tbody>"]
            for row in rows:
                row = (row + [""] * len(head))[: len(head)]
                parts += ["<tr>", *(f"<td>{_inline(c)}</td>" for c in row), "</tr>"]
            parts.append("</tbody></table>")
            out.append("".join(parts))
            continue
        item = _LIST_ITEM.match(line)
        if item:
            flush()
            tag = "ol" if item.group(1)[0].isdigit() else "ul"
            items: list[str] = []
            while i < len(lines):
                m = _LIST_ITEM.match(lines[i])
                if m:
                    items.append(m.group(2))
                elif lines[i].strip() and lines[i].startswith((" ", "\t")) and items:
                    items[-1] += " " + lines[i].strip()
                else:
                    break
                i += 1
            out.append(f"<{tag}>" + "".join(f"<li>{_inline(x)}</li>" for x in items) + f"</{tag}>")
            continue
        if not stripped:
            flush()
        else:
            para.append(stripped)
        i += 1
    flush()
    return "\n".join(out)
