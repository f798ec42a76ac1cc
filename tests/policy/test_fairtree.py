from __future__ import annotations

import math

import pytest

from slurmrl.cluster.model import Cluster, Node, Placement, Rack, islands_for
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.fairtree import fair_tree_factors, level_fairshare
from slurmrl.policy.ordering.multifactor import MultifactorConfig, MultifactorOrdering
from slurmrl.policy.view import ClusterView, JobView


def test_level_fairshare_is_shares_over_usage() -> None:
    assert level_fairshare(30.0, 60.0, 2) == pytest.approx(1.0)  # S = 1/2, U = 1/2
    assert level_fairshare(10.0, 40.0, 2) == pytest.approx(2.0)  # S = 1/2, U = 1/4
    assert level_fairshare(0.0, 40.0, 2) == math.inf
    assert level_fairshare(0.0, 0.0, 3) == math.inf


def test_fair_tree_ranks_accounts_first_then_users() -> None:
    # Accounts (S = 1/3 each): a used 60 of 100 -> LF 0.56, b 40 -> 0.83, c nothing -> inf.
    # Users within b (S = 1/2): b1 used 10 of 40 -> LF 2, b2 30 -> 0.67.
    # Within a: a1 nothing -> inf, a2 60 of 60 -> 0.5. Depth first by LF: c1, b1, b2, a1, a2.
    usage = {("a", "a1"): 0.0, ("a", "a2"): 60.0, ("b", "b1"): 10.0, ("b", "b2"): 30.0, ("c", "c1"): 0.0}
    factors = fair_tree_factors(usage)
    assert factors == {
        ("c", "c1"): 5 / 5,
        ("b", "b1"): 4 / 5,
        ("b", "b2"): 3 / 5,
        ("a", "a1"): 2 / 5,
        ("a", "a2"): 1 / 5,
    }
    # An unused user of a heavy account still ranks below every user of a lighter one.
    assert factors[("a", "a1")] < factors[("b", "b2")]


def test_fair_tree_never_merges_tied_accounts_as_slurms_code_does() -> None:
    # fair_tree.c: _count_tied_accounts stops at the first sibling that is not a user, so
    # tied accounts are visited one after the other; the first user of the second keeps
    # the rank last given. A and B tie (50 of 200 each: LF 4/3), C is below (LF 2/3).
    # A: a1 (10 of 50, LF 2.5) rank 5, a2 (LF 0.625) rank 4; B: b1 tied with A -> rank 4,
    # b2 rank 2; C: c1 rank 1. (The documentation's merge would give b1 0.8, b2 0.6, a2 0.4.)
    usage = {("A", "a1"): 10.0, ("A", "a2"): 40.0, ("B", "b1"): 20.0, ("B", "b2"): 30.0, ("C", "c1"): 100.0}
    assert fair_tree_factors(usage) == {
        ("A", "a1"): 1.0,
        ("A", "a2"): 0.8,
        ("B", "b1"): 0.8,
        ("B", "b2"): 0.4,
        ("C", "c1"): 0.2,
    }


def test_fair_tree_ties_share_ranks() -> None:
    # c first (no usage). a and b tie (LF 2/3): a's users u2 (inf) 4, u1 3; b's first user
    # u3 keeps rank 3 (its account tied), u4 ties u3 (LF 1) and keeps it too.
    usage = {("a", "u1"): 10.0, ("a", "u2"): 0.0, ("b", "u3"): 5.0, ("b", "u4"): 5.0, ("c", "u5"): 0.0}
    factors = fair_tree_factors(usage)
    assert factors == {
        ("c", "u5"): 1.0,
        ("a", "u2"): 0.8,
        ("a", "u1"): 0.6,
        ("b", "u3"): 0.6,
        ("b", "u4"): 0.6,
    }
    assert fair_tree_factors({}) == {}
    assert fair_tree_factors({("x", "y"): 0.0}) == {("x", "y"): 1.0}


def make_cluster(nodes: int, gpus: int = 4) -> Cluster:
    return Cluster(
        "t",
        (Rack("r", 0, tuple(range(nodes))),),
        tuple(Node(f"n{i}", i, 0, gpus, "v100", islands_for("nvswitch", gpus)) for i in range(nodes)),
    )


def test_multifactor_uses_fair_tree_or_the_classic_formula() -> None:
    cluster = make_cluster(4)
    pool = GpuPool(cluster)
    place = Placement.of([(0, [0, 1, 2, 3])])
    pool.allocate(place)
    hog = JobView("hog", 4, 0.0, user="u1", group="a", start_time=0.0, placement=place)
    pending = (
        JobView("p1", 1, 10.0, user="u2", group="a"),  # an unused user of the used account
        JobView("p2", 1, 20.0, user="u3", group="b"),
        JobView("p3", 1, 30.0, user="u1", group="a"),
    )
    first = ClusterView(0.0, cluster, pool.readonly(), (), (hog,), ())
    later = ClusterView(600.0, cluster, pool.readonly(), pending, (hog,), ())
    only_fs = dict(weight_age=0.0, weight_job_size=0.0, weight_fairshare=1000.0)
    tree = MultifactorOrdering(MultifactorConfig(fair_tree=True, **only_fs))
    tree.order(first)
    assert [j.job_id for j in tree.order(later)] == ["p2", "p1", "p3"]
    # Users: (b, u3) unused in an unused account, (a, u2) unused, (a, u1) used: ranks 3, 2, 1 of 3.
    assert tree.priorities(pending, 600.0).tolist() == [666.0, 1000.0, 333.0]  # whole numbers, as Slurm's
    classic = MultifactorOrdering(MultifactorConfig(fair_tree=False, **only_fs))
    classic.order(first)
    assert [j.job_id for j in classic.order(later)] == ["p2", "p1", "p3"]
    # Classic: per account (group) only, so p1 and p3 share a's factor 2^(-1 / 0.5) = 0.25.
    assert classic.priorities(pending, 600.0).tolist() == [250.0, 1000.0, 250.0]
