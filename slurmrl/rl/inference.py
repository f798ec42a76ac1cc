"""Turning a learned network's logits into a decision that is the same on every CPU.

The networks compute logits in numpy (:mod:`slurmrl.rl.nets.numpy_nets`);
results match the torch modules to float32 rounding, and :func:`pick` turns
them into a decision that does not depend on the CPU's rounding.
"""

from __future__ import annotations

import numpy as np

from slurmrl.rl.nets.numpy_layers import MASKED

__all__ = ["MASKED", "TIE_ATOL", "TIE_RTOL", "pick"]

# Logits closer than this to the best count as tied (absolute + relative to
# the best's magnitude). Rounding noise between CPUs is about 1e-8 on logits
# of order 1e-2, three orders of magnitude below it; learned preferences
# between distinct jobs are orders of magnitude above it.
TIE_ATOL = 1e-5
TIE_RTOL = 1e-5


def pick(logits: np.ndarray) -> int:
    """The chosen action: the lowest index whose logit is within the tie tolerance of the best.

    Identical window rows (equal jobs, empty slots) score equal in exact
    arithmetic, but matrix products sum in an order that depends on the CPU's
    vector width and on a row's position, so their last bits differ between
    machines and a plain ``argmax`` picks a different job on each. Taking the
    lowest index among near-ties makes the decision the same everywhere,
    except for a logit that lands within rounding noise of the tolerance
    edge itself: a far rarer event than an exact tie.
    """
    best = float(logits.max())
    tol = TIE_ATOL + TIE_RTOL * abs(best)
    return int(np.flatnonzero(logits >= best - tol)[0])
