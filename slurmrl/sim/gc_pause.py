"""Cyclic garbage collection held off while a replay builds and runs.

A replay allocates millions of short-lived objects (views, placements,
decisions) while holding hundreds of thousands of long-lived ones (a trace's
jobs, their views and run state). CPython's cycle collector is triggered by
allocation counts and, every so often, walks every long-lived object: on the
shared Philly weeks that was about 45% of building the simulator and 10-20%
of a run, for no memory, as none of these objects form reference cycles and
reference counting frees them all. So the collector is paused for those
stretches and resumed as it was found; cycles made meanwhile, if any, are
collected at its next full pass.

On resuming, what the stretch left alive (the simulator's state, the
results) would all sit in the youngest generation, and the first collection
after it would walk every one of those objects once more (a quarter of a
second on the shared Philly weeks, whatever the policy). They are moved
straight to the oldest generation instead (``gc.freeze`` then
``gc.unfreeze``, two list splices), where the next full collection, which
the collector runs as usual, still sees them.
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
            if gc.get_freeze_count() == 0:  # nobody else froze objects: unfreezing moves only ours
                gc.freeze()
                gc.unfreeze()
            gc.enable()
