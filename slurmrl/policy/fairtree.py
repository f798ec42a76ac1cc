"""Slurm's Fair Tree fair-share factor on a root -> account -> user tree.

Fair Tree has been Slurm's default fair-share algorithm since 19.05
(https://slurm.schedmd.com/fair_tree.html). At every level of the
association tree each node gets a *level fair-share* ``LF = S / U``: ``S``
its shares over its siblings' total, ``U`` its decayed usage over its
siblings' total (``LF`` is infinite without usage). Siblings are visited
depth first in descending ``LF``; users are ranked in the order they are
reached, the first getting the number of users, and a user's factor is
``rank / users``. So every user of an account with a higher level fair-share outranks every
user of a lower sibling account, whatever their own usage.

Ties follow ``_calc_tree_fs`` and ``_count_tied_accounts`` in Slurm's
``src/plugins/priority/multifactor/fair_tree.c`` (the same from 22.05 to
26.05), not the documentation page, which says tied sibling accounts have
their users merged and sorted together. The code never merges them: siblings
sort users before accounts, and the count of tied accounts stops at the
first sibling that is not a user, so it is always 0. Instead a tie is carried
down: a user whose ``LF`` equals the previous sibling's keeps the previous
rank, and the first user of an account that tied with the account visited
before it keeps the rank of the last user given one, whatever the two users'
own ``LF``. Every user still lowers the next untied rank by one. Accounts
with equal ``LF`` are visited in the order given (Slurm's qsort leaves equal
ones in no defined order).

The simulator knows each job's group (VC, taken as its account) and user,
so the tree has two levels under the root, with equal shares for every
account and for every user within an account.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
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
    rank = untied = users_total  # Slurm's rank and rnt ("rank, no ties")
    previous_account: float | None = None
    for account, lf in _descending(account_lf.items()):
        users = accounts[account]
        previous_user: float | None = None
        for i, (user, user_lf) in enumerate(
            _descending((u, level_fairshare(used, totals[account], len(users))) for u, used in users.items())
        ):
            tied = lf == previous_account if i == 0 else user_lf == previous_user
            if not tied:
                rank = untied
            factors[account, user] = rank / users_total
            untied -= 1
            previous_user = user_lf
        previous_account = lf
    return factors


def _descending(items: Iterable[tuple[T, float]]) -> list[tuple[T, float]]:
    """Items by value, highest first; equal values in the order given (stable)."""
    return sorted(items, key=lambda kv: -kv[1])
