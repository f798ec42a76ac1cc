"""Structured logs: one ``key=value`` line per event on stderr.

journald keeps stderr; key=value lines stay readable with ``journalctl -u
slurmrl`` and parse with any log shipper without a JSON decoder.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

LOGGER = logging.getLogger("slurmrl.daemon")


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if text == "" or any(c in text for c in ' ="\t\n'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(record.created))
        parts = [f"time={stamp}", f"level={record.levelname.lower()}", f"event={_quote(record.getMessage())}"]
        for key, value in getattr(record, "kv", {}).items():
            parts.append(f"{key}={_quote(value)}")
        if record.exc_info:
            parts.append(f"traceback={_quote(self.formatException(record.exc_info))}")
        return " ".join(parts)


def setup_logging(level: int | str = logging.INFO) -> None:
    """Send the daemon's logs to stderr once (repeated calls add no handler)."""
    if any(getattr(h, "_slurmrl", False) for h in LOGGER.handlers):
        LOGGER.setLevel(level)
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KeyValueFormatter())
    handler._slurmrl = True  # type: ignore[attr-defined]
    LOGGER.addHandler(handler)
    LOGGER.setLevel(level)
    LOGGER.propagate = False


def log(level: int, event: str, **fields: Any) -> None:
    LOGGER.log(level, event, extra={"kv": fields})
