"""The append-only audit trail: one JSON object per line, one line per decision or change.

Admins answer "why did my job get these nodes?" from this file, so each
change line carries the job, the field, the old and new value, the reason
and whether it was only a dry run. Lines are flushed as they are written; a
crash loses at most the line being written.
"""

from __future__ import annotations

import json
import time
from collections import deque
from pathlib import Path
from typing import Any, TextIO

from slurmrl.errors import ConfigError


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value


class AuditLog:
    """Writes to ``path``; a ``None`` path keeps nothing (``audit_log = ""``)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self._fh: TextIO | None = None

    def _open(self) -> TextIO | None:
        if self.path is None:
            return None
        if self._fh is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            except OSError as exc:
                raise ConfigError(
                    f"cannot open the audit log for appending: {exc.strerror}",
                    file=str(self.path),
                    hint='create its directory writable by the daemon\'s user, or set audit_log = ""',
                ) from None
        return self._fh

    def write(self, kind: str, **fields: Any) -> None:
        fh = self._open()
        if fh is None:
            return
        line = {"time": round(time.time(), 3), "kind": kind, **{k: _plain(v) for k, v in fields.items()}}
        fh.write(json.dumps(line, separators=(",", ":"), default=str) + "\n")
        fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def tail(path: str | Path, lines: int = 2000) -> list[dict[str, Any]]:
    """The last ``lines`` parseable records of an audit log (damaged lines are skipped)."""
    out: deque[dict[str, Any]] = deque(maxlen=lines)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for raw in fh:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    out.append(rec)
    except FileNotFoundError:
        return []
    return list(out)
