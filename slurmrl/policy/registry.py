"""Policies and placements by name.

Entries point at ``module:factory`` strings so that listing names, or running
a heuristic, never imports the modules of other policies (the RL ones pull in
torch). An unknown name is answered with the closest registered ones.
"""

from __future__ import annotations

import difflib

from slurmrl.errors import PolicyError
from slurmrl.policy import builtin
from slurmrl.policy.base import PlacementPolicy, Policy
from slurmrl.policy.entry import Entry

POLICIES: dict[str, Entry] = {e.name: e for e in builtin.POLICIES}
PLACEMENTS: dict[str, Entry] = {e.name: e for e in builtin.PLACEMENTS}


def _unknown(kind: str, name: str, known: dict[str, Entry]) -> PolicyError:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else None
    return PolicyError(
        f"unknown {kind} '{name}'; known: {', '.join(sorted(known))}",
        hint=hint,
    )


def placement_entry(name: str) -> Entry:
    if name not in PLACEMENTS:
        raise _unknown("placement", name, PLACEMENTS)
    return PLACEMENTS[name]


def policy_entry(name: str) -> Entry:
    if name not in POLICIES:
        if "/" in name:  # meant as a checkpoint folder, which would have been found
            raise PolicyError(
                f"no checkpoint folder {name} (and no policy of that name)",
                hint="a checkpoint is a folder holding config.json; check the path",
            )
        raise _unknown("policy", name, POLICIES)
    return POLICIES[name]


def policy_cost(name: str) -> float:
    """:attr:`Entry.cost` of a policy name, or of a checkpoint folder's family.

    A name that is neither gets the highest cost: its run fails with its own
    error, and it might as well do so first.
    """
    from slurmrl.rl.checkpoints import FAMILIES, checkpoint_format

    if name in POLICIES:
        return POLICIES[name].cost
    try:
        family = FAMILIES.get(checkpoint_format(name), "")
    except PolicyError:
        family = ""
    return POLICIES[family].cost if family in POLICIES else max(e.cost for e in POLICIES.values())


def make_placement(name: str) -> PlacementPolicy:
    return placement_entry(name).load()()  # type: ignore[return-value]


def make_policy(name: str, placement: str | None = None) -> Policy:
    """Build policy ``name``; ``placement`` overrides its default placement."""
    entry = policy_entry(name)
    place = make_placement(placement or entry.default_placement)
    policy = entry.load()(place)
    return policy  # type: ignore[return-value]


def policy_names() -> list[str]:
    return sorted(POLICIES)


def placement_names() -> list[str]:
    return sorted(PLACEMENTS)
