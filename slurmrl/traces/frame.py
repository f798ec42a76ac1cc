"""Workloads and run records as pandas DataFrames, for notebooks and scripts.

pandas is imported inside the functions: the simulator and the daemon read
traces as frozen records and should not pay for pandas at import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

from slurmrl.traces.schema import Trace, TraceJob

if TYPE_CHECKING:
    import pandas as pd

# Optional TraceJob fields that are None when the source does not say: float
# columns with NaN, rather than object columns of None.
_OPTIONAL_NUMBERS = ("num_nodes", "time_limit")


def records_frame(rows: Sequence[object], cls: type) -> pd.DataFrame:
    """One row per frozen dataclass instance, one column per field, in declaration order."""
    import pandas as pd

    names = [f.name for f in fields(cls)]
    return pd.DataFrame([[getattr(r, n) for n in names] for r in rows], columns=names)


def trace_frame(trace: Trace) -> pd.DataFrame:
    """A trace's jobs as a DataFrame; ``attrs`` keeps where it came from."""
    frame = records_frame(trace.jobs, TraceJob)
    for name in _OPTIONAL_NUMBERS:
        frame[name] = frame[name].astype("float64")
    frame.attrs.update(
        source=trace.source, format=trace.format, skipped=trace.skipped, dropped=dict(trace.dropped)
    )
    return frame


def load(path: str | Path, *, format: str = "auto", skip_bad: bool = False) -> pd.DataFrame:
    """Read a trace in any supported format (or ``embedded:NAME``) into a DataFrame.

    Columns are the :class:`~slurmrl.traces.schema.TraceJob` fields, one row
    per job sorted by submit time: the same jobs the simulator replays.
    """
    from slurmrl.traces.load import load_trace

    return trace_frame(load_trace(path, format=format, skip_bad=skip_bad))
