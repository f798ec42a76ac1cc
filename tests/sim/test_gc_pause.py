import gc
import weakref

import pytest

from slurmrl.sim.gc_pause import paused_gc


def test_pauses_nests_and_restores_what_it_found() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block found it paused and left it so
    assert gc.isenabled()


def test_restores_after_an_error_and_leaves_a_disabled_collector_disabled() -> None:
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Node:
    def __init__(self) -> None:
        self.other: object = None


def test_what_the_pause_left_alive_goes_to_the_oldest_generation_unscanned() -> None:
    with paused_gc():
        kept = [_Node() for _ in range(10)]
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(node) in oldest for node in kept)
    assert gc.get_freeze_count() == 0


def test_cycles_made_in_the_pause_are_still_collected() -> None:
    collected: list[bool] = []
    with paused_gc():
        a, b = _Node(), _Node()
        a.other, b.other = b, a

        probe = weakref.ref(a, lambda _: collected.append(True))
        del a, b
    gc.collect()
    assert probe() is None and collected == [True]


def test_objects_someone_else_froze_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with paused_gc():
            _ = [_Node() for _ in range(3)]
        # Neither unfrozen (the count would drop to 0) nor ours frozen too (it would
        # grow). Not equal: a thread an earlier test left running may free a frozen
        # object meanwhile, which takes it off the count (seen once in CI: 2 fewer).
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
