"""The tables of shipped policies and placements are consistent on their own."""

from __future__ import annotations

from pathlib import Path

from slurmrl.policy import builtin
from slurmrl.policy.registry import placement_entry, policy_cost, policy_entry
from slurmrl.rl.checkpoints import CONFIG, FAMILIES, checkpoint_format

SHIPPED = Path(__file__).resolve().parents[2] / "policies"


def test_every_name_is_listed_once() -> None:
    # The registry keys its tables by name: a repeated name would hide an entry.
    for table in (builtin.POLICIES, builtin.PLACEMENTS):
        names = [e.name for e in table]
        assert len(names) == len(set(names)), names


def test_every_policy_defaults_to_a_shipped_placement() -> None:
    for entry in builtin.POLICIES:
        assert placement_entry(entry.default_placement).name == entry.default_placement


def test_the_registry_answers_with_the_tables_entries() -> None:
    for entry in builtin.POLICIES:
        assert policy_entry(entry.name) is entry
    for entry in builtin.PLACEMENTS:
        assert placement_entry(entry.name) is entry


def test_every_policy_has_a_positive_cost_and_fifo_is_the_unit() -> None:
    assert policy_entry("fifo").cost == 1.0
    assert all(entry.cost > 0 for entry in builtin.POLICIES)


def test_a_checkpoint_folder_costs_what_its_family_does(tmp_path: Path) -> None:
    # Every shipped checkpoint's format names a registered family.
    for folder in sorted(SHIPPED.iterdir()):
        if (folder / CONFIG).is_file():
            family = FAMILIES[checkpoint_format(folder)]
            assert policy_cost(str(folder)) == policy_entry(family).cost
    assert policy_cost("sjf-limit") == policy_entry("sjf-limit").cost
    # A folder that is no checkpoint fails when it runs; it is handed out first.
    highest = max(entry.cost for entry in builtin.POLICIES)
    assert policy_cost(str(tmp_path)) == highest
    (tmp_path / CONFIG).write_text('{"format": "slurmrl-other"}')
    assert policy_cost(str(tmp_path)) == highest
