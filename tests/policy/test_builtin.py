"""The tables of shipped policies and placements are consistent on their own."""

from __future__ import annotations

from slurmrl.policy import builtin
from slurmrl.policy.registry import placement_entry, policy_entry


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
