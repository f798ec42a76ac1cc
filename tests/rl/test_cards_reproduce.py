"""Each shipped checkpoint's held-out row, as its card prints it, reproduced by the command the card gives.

The cards' tables come from ``benchmarks/rl_card.py``; each card also prints one
``slurmrl evaluate`` command that reproduces the shipped checkpoint's row. A
change to the simulator, the observation or the decision path that moves a
shipped policy's figures must show up here, not in a stale card. The decisions
are float32 products; the figures come out the same to the bit under OpenBLAS's
Prescott (SSE3), Haswell, Zen and SkylakeX kernels (``OPENBLAS_CORETYPE``), so
they do not hang on this machine's CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmrl.cli import main

ROOT = Path(__file__).resolve().parents[2]

# (folder[+placement], scenario, first seed, extra flags, mean avg JCT (s), mean makespan (s)) of each card's
# evaluate command
ROWS = [
    (
        "meta-rl-philly",
        "chronus-slo-2869ce",
        1000,
        ("--speed-model", "full"),
        721,
        30_643,
    ),
    (
        "harmony-philly+type-aware",
        "gavel-msr-6214e9",
        1000,
        ("--speed-model", "full", "--elastic", "off"),
        823_333,
        12_164_857,
    ),
    # topdrl and maifs ship the checkpoints the third suite's rule picked; their rows on each suite's cold entry.
    ("topdrl-philly", "philly-448-weeks3-4", 1000, (), 16_372, 3_690_793),
    ("topdrl-philly", "philly-280-weeks5-6", 1000, (), 28_749, 2_743_567),
    ("topdrl-philly", "philly-224-weeks9-10", 2000, (), 28_572, 2_774_458),
    ("maifs-philly", "philly-448-weeks3-4", 1000, ("--elastic", "fraction:0.5"), 16_264, 3_918_428),
    ("maifs-philly", "philly-280-weeks5-6", 1000, ("--elastic", "fraction:0.5"), 28_601, 2_735_389),
    ("maifs-philly", "philly-224-weeks9-10", 2000, ("--elastic", "fraction:0.5"), 28_246, 2_771_070),
    # The second and third held-out suites: harmony's one entry on each.
    (
        "harmony-philly+type-aware",
        "philly-hetero416-weeks5-6",
        1000,
        ("--speed-model", "full", "--elastic", "off"),
        35_100,
        6_132_390,
    ),
    (
        "harmony-philly+type-aware",
        "philly-hetero320-weeks9-10",
        2000,
        ("--speed-model", "full", "--elastic", "off"),
        38_235,
        6_743_517,
    ),
]


def _card(folder: str) -> str:
    return (ROOT / "policies" / folder.partition("+")[0] / "card.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("folder", "scenario", "seed", "flags", "avg_jct", "makespan"), ROWS)
def test_each_card_prints_the_row_and_its_command(
    folder: str, scenario: str, seed: int, flags: tuple[str, ...], avg_jct: int, makespan: int
) -> None:
    text = _card(folder)
    command = f"slurmrl evaluate --policy policies/{folder} --scenario {scenario} --seed {seed} --seeds 3"
    assert " ".join([command, *flags]) in text
    assert f"| {avg_jct:,} ± " in text and f"| {makespan:,} |" in text


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "scenario", "seed", "flags", "avg_jct", "makespan"), ROWS)
def test_the_shipped_row_of_each_card_reproduces(
    folder: str, scenario: str, seed: int, flags: tuple[str, ...], avg_jct: int, makespan: int
) -> None:
    policy = str(ROOT / "policies" / folder)
    args = ["evaluate", "--policy", policy, "--scenario", scenario, "--seed", str(seed), "--seeds", "3"]
    result = CliRunner().invoke(main, [*args, *flags, "--json", "--no-progress"])
    assert result.exception is None, result.output
    (row,) = json.loads(result.stdout)["rows"]
    assert (round(row["avg_jct"]["mean"]), round(row["makespan"]["mean"])) == (avg_jct, makespan)
