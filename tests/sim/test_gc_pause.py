import gc

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
