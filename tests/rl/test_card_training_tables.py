"""Each card's training table is what its printed command prints from the runs' own logs.

A card names the ``benchmarks/training_log.py`` command behind its training
table; the logs ship beside the checkpoints, so the table can be checked
without training again, and a log or a card edited apart from the other fails
here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CARDS = sorted((ROOT / "policies").glob("*/card.md"))
# The command as a card prints it, possibly broken over two lines, folders in shell braces.
COMMAND = re.compile(r"`python benchmarks/training_log\.py\s+([^`]+)`")


def _expand(word: str) -> list[str]:
    """``a/{0,1}`` -> ``a/0``, ``a/1`` (the brace form the cards use; one brace group)."""
    m = re.fullmatch(r"(.*)\{([^{}]+)\}(.*)", word)
    return [f"{m.group(1)}{part}{m.group(3)}" for part in m.group(2).split(",")] if m else [word]


def _commands(card: Path) -> list[list[str]]:
    text = card.read_text(encoding="utf-8")
    return [
        [folder for word in m.group(1).split() for folder in _expand(word)] for m in COMMAND.finditer(text)
    ]


def test_every_card_names_its_training_command() -> None:
    assert CARDS, "no policy cards found"
    for card in CARDS:
        assert _commands(card), f"{card.relative_to(ROOT)} prints no training_log.py command"


@pytest.mark.parametrize("card", CARDS, ids=lambda p: p.parent.name)
def test_training_table_matches_the_logs(card: Path) -> None:
    text = card.read_text(encoding="utf-8")
    for folders in _commands(card):
        out = subprocess.run(
            [sys.executable, "benchmarks/training_log.py", *folders],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        lines = out.strip().splitlines()
        assert len(lines) == len(folders) + 2
        for line in lines:
            assert line in text, f"{card.relative_to(ROOT)} lacks the row: {line}"
