"""Traces shipped inside the package, so a first run needs no download.

See ``data/README.md`` for provenance and license of each file.
"""

from __future__ import annotations

import difflib
from importlib import resources

from slurmrl.errors import TraceError
from slurmrl.traces import normalized
from slurmrl.traces.schema import Trace

EMBEDDED: dict[str, str] = {
    "philly-sample": "philly_sample.csv.gz",
    "philly-late": "philly_late.csv.gz",
    "philly-tail": "philly_tail.csv.gz",
}


def embedded_trace(name: str = "philly-sample") -> Trace:
    """A packaged trace by name, e.g. ``philly-sample`` (7 days of Philly, Oct 2017)."""
    file = EMBEDDED.get(name)
    if file is None:
        close = difflib.get_close_matches(name, EMBEDDED, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"available: {', '.join(EMBEDDED)}"
        raise TraceError(f"no embedded trace named '{name}'", hint=hint)
    resource = resources.files("slurmrl.traces").joinpath("data", file)
    with resources.as_file(resource) as path:
        return normalized.load(path, f"embedded:{name}", skip_bad=False)
