"""``benchmarks/rl_card.py``: each learned row in a compare of its own, so a checkpoint added later runs alone."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "rl_card.py"


def _card(
    tmp_path: Path, *learned: str, only: str = "philly-448-weeks3-4"
) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(SCRIPT), "topdrl", "--out", str(tmp_path), "--only", only]
    for name in learned:
        args += ["--learned", name]
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_each_learned_row_has_a_folder_named_for_it(tmp_path: Path) -> None:
    done = _card(tmp_path, "policies/topdrl-philly+", "policies/topdrl-philly/gittins-led-seeds/0+topology")
    assert done.returncode == 0, done.stderr
    outs = dict(re.findall(r"--out \S+/(learned-\S+) --policies (\S+)", done.stdout))
    assert outs == {
        "learned-policies-topdrl-philly+": "policies/topdrl-philly+",
        "learned-policies-topdrl-philly-gittins-led-seeds-0+topology": "policies/topdrl-philly/gittins-led-seeds/0+topology",
    }
    assert re.search(r"--out \S+/heuristics --policies ", done.stdout)  # shared by every learned row


def test_two_learned_rows_that_would_share_a_folder_are_refused(tmp_path: Path) -> None:
    done = _card(tmp_path, "a/b+", "a-b+")
    assert done.returncode != 0
    assert done.stderr.strip() == "--learned a-b+: its folder learned-a-b+ is that of another --learned"


def test_an_entry_not_in_the_suite_is_named_with_the_entries_there_are(tmp_path: Path) -> None:
    done = _card(tmp_path, only="philly-448-week3-4")
    assert done.returncode != 0 and not done.stdout
    assert done.stderr.startswith("--only: no topdrl entry philly-448-week3-4 in the suite (its entries: ")
    assert "philly-448-weeks3-4," in done.stderr


def test_the_second_suite_is_asked_by_name(tmp_path: Path) -> None:
    args = [sys.executable, str(SCRIPT), "maifs", "--suite", "heldout-late", "--out", str(tmp_path)]
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.findall(r"^### (\S+)", done.stdout, flags=re.M) == [
        "philly-280-weeks5-6",
        "philly-280-weeks7-8-warm",
        "philly-hetero416-weeks5-6",
    ]
    assert "--elastic fraction:0.5" in done.stdout
