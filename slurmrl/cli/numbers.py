"""A number option that must be finite.

click's ``float`` and ``FloatRange`` take ``nan`` and ``inf`` (``nan`` passes
every bound, since it compares false both ways): ``--start nan`` made a trace
window no job is ever past and looped for good, ``--arrival-scale inf`` put
every job at one instant. Every float option of the CLI takes this type.
"""

from __future__ import annotations

import math
from typing import Any

import click


class Finite(click.FloatRange):
    """A finite float, optionally bounded as :class:`click.FloatRange` bounds it."""

    name = "float"  # the metavar: FLOAT, its bounds (if any) in the help's brackets

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self) -> str:
        # FloatRange describes an unbounded range as "x<=None".
        return "" if self.min is None and self.max is None else super()._describe_range()
