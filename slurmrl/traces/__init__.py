"""Job traces: loaders for public DL-cluster traces and workload selection."""

from slurmrl.traces.embedded import embedded_trace
from slurmrl.traces.load import FORMATS, load_trace
from slurmrl.traces.schema import Trace, TraceJob
from slurmrl.traces.select import check_fits, select

__all__ = ["FORMATS", "Trace", "TraceJob", "check_fits", "embedded_trace", "load_trace", "select"]
