"""CSV records numbered by the line each starts on, with runaway quotes caught.

Trace files and machine lists are read the same way: an error must name the
line an editor shows, and a stray quote must not swallow the rest of the file
in silence. A field that opens with a quote runs on to the next quote, rows
and all, so the reader hands one record that ends far below the quote, of the
wrong width; a quoted line break inside a record of the right width is a value
like any other.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator


class RunawayQuote(ValueError):
    """A record that runs over several lines with the wrong number of fields."""

    def __init__(self, first: int, last: int, fields: int, width: int | None) -> None:
        left = f", leaving {fields} fields of {width}" if width is not None else ""
        super().__init__(f"a quoted field runs over lines {first}-{last}{left}")
        self.first = first

    hint = 'a stray or unclosed quote (") on this line?'


class Records:
    """The records of a CSV text; ``line`` is where the last one read starts.

    Iterating yields each record's fields; after :meth:`header` (or with
    ``width`` given) a record that spans lines with another width raises
    :class:`RunawayQuote`.
    """

    def __init__(self, text: str, *, delimiter: str = ",", width: int | None = None) -> None:
        self._reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        self.width = width
        self.line = 0

    def header(self) -> list[str] | None:
        """The first record, stripped, which sets the width; None for an empty text.

        Column names hold no line breaks, so a header that spans lines is a runaway quote.
        """
        first = next(self, None)
        if first is None:
            return None
        if self._reader.line_num > self.line and any("\n" in h or "\r" in h for h in first):
            raise RunawayQuote(self.line, self._reader.line_num, len(first), None)
        self.width = len(first)
        return [h.strip() for h in first]

    def __iter__(self) -> Iterator[list[str]]:
        return self

    def __next__(self) -> list[str]:
        start = self.line = self._reader.line_num + 1
        values = next(self._reader)
        last = self._reader.line_num
        if (
            last > start
            and self.width is not None
            and len(values) != self.width
            and any("\n" in v or "\r" in v for v in values)
        ):
            raise RunawayQuote(start, last, len(values), self.width)
        return values


def shown(text: str, limit: int = 40) -> str:
    """A field's value as an error quotes it: one line, at most ``limit`` characters."""
    flat = " ".join(text.split()) if any(c in text for c in "\r\n\t") else text
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
