"""Job traces: loaders for public DL-cluster traces and workload selection.

``load(PATH)`` gives a trace as a pandas DataFrame (see
:mod:`slurmrl.traces.frame`); ``load_trace`` gives the frozen records the
simulator replays. The function ``load`` takes the package attribute of the
same name; the loader module is still imported with
``from slurmrl.traces.load import ...`` (not ``import slurmrl.traces.load as m``).
"""

from slurmrl.traces import frame as _frame
from slurmrl.traces.embedded import embedded_trace
from slurmrl.traces.frame import trace_frame
from slurmrl.traces.load import FORMATS, load_trace
from slurmrl.traces.schema import Trace, TraceJob
from slurmrl.traces.select import check_fits, select

# Bound after the imports above, which set ``load`` to the loader submodule.
load = _frame.load

__all__ = [
    "FORMATS",
    "Trace",
    "TraceJob",
    "check_fits",
    "embedded_trace",
    "load",
    "load_trace",
    "select",
    "trace_frame",
]
