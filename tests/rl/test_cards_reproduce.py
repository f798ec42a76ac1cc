"""Each shipped checkpoint's held-out row, as its card prints it, reproduced by the command the card gives.

The cards' tables come from ``benchmarks/rl_card.py``; each card also names one
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

# (folder, scenario, extra flags, mean avg JCT (s), mean makespan (s), where the card prints them)
ROWS = [
    (
        "meta-rl-philly",
        "chronus-slo-2869ce",
        ("--speed-model", "full"),
        721,
        30_643,
        "card, held-out suite, chronus-slo-2869ce: 721 ± 56 s",
    ),
    (
        "harmony-philly+type-aware",
        "gavel-msr-6214e9",
        ("--speed-model", "full", "--elastic", "off"),
        823_333,
        12_164_857,
        "card, held-out suite, gavel-msr-6214e9: 823,333 ± 7,752 s",
    ),
    (
        "topdrl-philly",
        "philly-448-weeks3-4",
        (),
        17_712,
        4_487_543,
        "card, the shipped checkpoint on the suite's three entries: 17,712 ± 575 s",
    ),
    (
        "maifs-philly",
        "philly-448-weeks3-4",
        ("--elastic", "fraction:0.5"),
        16_834,
        3_819_431,
        "card, held-out suite, philly-448-weeks3-4: 16,834 ± 938 s",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "scenario", "flags", "avg_jct", "makespan", "card"), ROWS)
def test_the_shipped_row_of_each_card_reproduces(
    folder: str, scenario: str, flags: tuple[str, ...], avg_jct: int, makespan: int, card: str
) -> None:
    policy = str(ROOT / "policies" / folder)
    args = ["evaluate", "--policy", policy, "--scenario", scenario, "--seed", "1000", "--seeds", "3"]
    result = CliRunner().invoke(main, [*args, *flags, "--json", "--no-progress"])
    assert result.exception is None, result.output
    (row,) = json.loads(result.stdout)["rows"]
    assert (round(row["avg_jct"]["mean"]), round(row["makespan"]["mean"])) == (avg_jct, makespan), card
