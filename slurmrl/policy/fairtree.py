"""Slurm's Fair Tree fair-share factor on a root -> account -> user tree.

Fair Tree has been Slurm's default fair-share algorithm since 19.05
(https://slurm.schedmd.com/fair_tree.html). At every level of the
association tree each node gets a *level fair-share* ``LF = S / U``: ``S``
its shares over its siblings' total, ``U`` its decayed usage over its
siblings' total (``LF`` is infinite without usage). Siblings are visited
depth first in descending ``LF``; users are ranked in the order they are
reached, the first getting the number of users, and a user's factor is
``rank / users``. So every user of an account with a higher level
fair-share outranks every user of a lower sibling account, whatever their
own usage. Ties: sibling accounts with equal ``LF`` are visited as one, their
users merged and sorted together; users with equal ``LF`` share a rank, and
the next user's rank is lowered by the number that tied.

The simulator knows each job's group (VC, taken as its account) and user,
so the tree has two levels under the root, with equal shares for every
account and for every user within an account.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from itertools import groupby
from typing import TypeVar

Association = tuple[str, str]  # (account, user)
T = TypeVar("T")


def level_fairshare(usage: float, siblings_usage: float, siblings: int) -> float:
    """``S / U`` for one of ``siblings`` equal-share siblings; infinite without usage."""
    share = 1.0 / siblings
    used = usage / siblings_usage if siblings_usage > 0 else 0.0
    return math.inf if used <= 0 else share / used


def fair_tree_factors(usage: Mapping[Association, float]) -> dict[Association, float]:
    """Fair-share factor of every association (every one listed, used or not)."""
    accounts: dict[str, dict[str, float]] = {}
    for (account, user), used in usage.items():
        accounts.setdefault(account, {})[user] = max(0.0, used)
    if not accounts:
        return {}
    totals = {a: sum(users.values()) for a, users in accounts.items()}
    grand = sum(totals.values())
    account_lf = {a: level_fairshare(totals[a], grand, len(accounts)) for a in accounts}
    users_total = sum(len(u) for u in accounts.values())
    factors: dict[Association, float] = {}
    rank = users_total
    for _, tied in _descending(account_lf.items()):
        merged = [
            ((a, u), level_fairshare(used, totals[a], len(accounts[a])))
            for a, _lf in tied
            for u, used in accounts[a].items()
        ]
        for _, same in _descending(merged):
            for assoc, _lf in same:
                factors[assoc] = rank / users_total
            rank -= len(same)
    return factors


def _descending(items: Iterable[tuple[T, float]]) -> Iterator[tuple[float, list[tuple[T, float]]]]:
    """Items grouped by equal value, highest first; within a group, in the order given (stable)."""
    ordered = sorted(items, key=lambda kv: -kv[1])
    for value, group in groupby(ordered, key=lambda kv: kv[1]):
        yield value, list(group)
