"""Ordering bands: a long queue shares few SiteFactor values, in the policy's order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from slurmrl.daemon.plan import site_factor_for


@given(st.integers(1, 20_000), st.integers(0, 300), st.integers(1, 10_000))
def test_bands_keep_the_order_and_share_values(count: int, bands: int, top: int) -> None:
    values = [site_factor_for(r, count, top, bands) for r in range(count)]
    used = min(bands, top + 1)  # bands beyond top + 1 could not have distinct values
    assert values[0] == top and (count == 1 or used == 1 or values[-1] == 0)
    assert all(a >= b for a, b in zip(values, values[1:], strict=False))  # never out of the policy's order
    if 0 < used < count:
        assert len(set(values)) == used
        # the same band for consecutive ranks: each value is one contiguous run
        runs = sum(1 for a, b in zip(values, values[1:], strict=False) if a != b) + 1
        assert runs == len(set(values))
    else:
        assert values == [site_factor_for(r, count, top) for r in range(count)]


def test_a_short_queue_keeps_one_value_per_rank() -> None:
    assert [site_factor_for(r, 5, 1000, 100) for r in range(5)] == [1000, 750, 500, 250, 0]
    assert site_factor_for(0, 10_000, 1000, 100) == 1000
    assert site_factor_for(99, 10_000, 1000, 100) == 1000  # ranks 0-99 share the top band
    assert site_factor_for(100, 10_000, 1000, 100) == 990


def test_a_shift_by_less_than_a_band_sends_nothing() -> None:
    from slurmrl.daemon.plan import band_step

    step = band_step(10_000, 1000, 100)
    assert step == 11 and band_step(50, 1000, 100) == 0  # a short queue: one value per rank
    # every rank moved down 50 places: each job moves at most one band
    moved = [
        abs(site_factor_for(r, 10_000, 1000, 100) - site_factor_for(r + 50, 10_000, 1000, 100))
        for r in range(9950)
    ]
    assert max(moved) <= step
