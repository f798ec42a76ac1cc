"""Cyclic garbage collection held off while a replay builds and runs.

A replay allocates millions of short-lived objects (views, placements,
decisions) while holding hundreds of thousands of long-lived ones (a trace's
jobs, their views and run state). CPython's cycle collector is triggered by
allocation counts and, every so often, walks every long-lived object: on the
shared Philly weeks that was about 45% of building the simulator and 10-20%
of a run, for no memory, as none of these objects form reference cycles and
reference counting frees them all. So the collector is paused for those
stretches and resumed as it was found; cycles made meanwhile, if any, are
collected at its next pass.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Hold off the cycle collector inside the block; nests, and restores the state it found."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
