"""Rankings read only as far as they are used: ``Unrolled`` and ``JobIds`` behave as the lists they stand for."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from slurmrl.policy.view import JobIds, JobView, Unrolled


class _Counted:
    """A one-shot source that counts what was read from it."""

    def __init__(self, items: list[int]) -> None:
        self.read = 0
        self._items = items

    def __iter__(self):
        for item in self._items:
            self.read += 1
            yield item


@given(st.lists(st.integers(), max_size=30), st.lists(st.integers(0, 40), max_size=6))
def test_unrolled_gives_every_reader_the_whole_source_in_order(items: list[int], stops: list[int]) -> None:
    source = _Counted(items)
    lazy = Unrolled(source)
    readers = [iter(lazy) for _ in stops]
    seen = [list(itertools.islice(r, n)) for r, n in zip(readers, stops, strict=True)]
    for got, n in zip(seen, stops, strict=True):
        assert got == items[:n]
    assert source.read == min(max(stops, default=0), len(items))  # read no further than asked
    for r, got in zip(readers, seen, strict=True):
        assert got + list(r) == items  # each reader goes on where it stopped
    assert list(lazy) == lazy.all() == items


def test_job_ids_read_a_ranking_only_as_far_as_a_pass_looks() -> None:
    jobs = [JobView(f"j{i}", 1, float(i)) for i in range(1000)]
    source = _Counted(jobs)
    ids = JobIds(source)
    assert list(itertools.islice(ids, 3)) == ["j0", "j1", "j2"]
    assert source.read == 3
    assert ids[10] == "j10" and len(ids) == 1000 and source.read == 1000
    assert ids == [j.job_id for j in jobs] and list(ids) == list(ids)
