"""``slurmrl status``: what the daemon did lately, from its state file and audit log.

Reads files only, so it works while the daemon runs, after it stopped, and
on a host where Slurm is down.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurmrl.daemon.audit import tail
from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.record import Record


@dataclass(frozen=True)
class StatusSummary:
    tracked: int
    tracked_by_field: dict[str, int]
    cycles: tuple[dict[str, Any], ...]  # the last cycles, oldest first
    changes_by_field: dict[str, int]  # over those cycles
    errors: tuple[str, ...]
    reverts: int
    history: dict[str, Any] | None = None  # the last start's read of accounting (audit "history")
    requeued: int = 0  # jobs the daemon requeued that Slurm still lists (the record's preempted)
    requeues: int = 0  # requeues in the audit log


def summarise(config: DaemonConfig, last: int = 10) -> StatusSummary:
    record = Record.load(config.state_file)
    by_field: Counter[str] = Counter()
    for entry in record.jobs.values():
        for name in ("site_factor", "priority", "nodes", "admin_comment"):
            if getattr(entry, name) is not None:
                by_field[name] += 1
    lines = tail(config.audit_log) if config.audit_log else []
    cycles = [r for r in lines if r.get("kind") == "cycle"][-last:]
    first = _number(cycles[0].get("cycle")) if cycles else 0.0
    changes: Counter[str] = Counter()
    errors: list[str] = []
    reverts = requeues = 0
    history = None
    for r in lines:
        kind = r.get("kind")
        if kind == "change" and _number(r.get("cycle")) >= first and not r.get("dry_run"):
            changes[str(r.get("field"))] += 1
        elif kind == "revert":
            reverts += 1
        elif kind == "history":
            history = r
        elif kind == "preempt" and not r.get("dry_run"):
            requeues += 1
        elif kind in ("error", "preempt_error") or (kind == "cycle" and r.get("error")):
            errors.append(f"{_when(r.get('time'))} {r.get('error')}")
    return StatusSummary(
        tracked=len(record.jobs),
        tracked_by_field=dict(by_field),
        cycles=tuple(cycles),
        changes_by_field=dict(changes),
        errors=tuple(errors[-5:]),
        reverts=reverts,
        history=history,
        requeued=sum(1 for e in record.preempted.values() if e.ended is None),
        requeues=requeues,
    )


def _number(value: Any) -> float:
    """A number of an audit record (0 where it holds none: the log may be damaged or edited)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return 0.0
    try:
        number = float(value)
    except ValueError:
        return 0.0
    return number if math.isfinite(number) else 0.0


def _when(stamp: Any) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(stamp)))
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


def render(config: DaemonConfig, s: StatusSummary) -> str:
    out = [
        f"config:     {config.source}",
        f"state file: {config.state_file}"
        + ("" if Path(config.state_file).exists() else " (not written yet)"),
    ]
    fields = ", ".join(f"{k}={v}" for k, v in sorted(s.tracked_by_field.items())) or "none"
    out.append(f"jobs with daemon-set values: {s.tracked} ({fields})")
    if s.requeued or s.requeues:
        out.append(f"jobs it requeued, still listed: {s.requeued} (requeues in the audit log: {s.requeues})")
    if not config.audit_log:
        out.append('audit log: off (audit_log = "")')
        return "\n".join(out)
    out.append(f"audit log:  {config.audit_log}")
    if not s.cycles:
        out.append("no cycles logged yet")
    else:
        last = s.cycles[-1]
        stamp = _number(last.get("time"))
        age = f"{time.time() - stamp:.0f} s ago" if stamp > 0 else "time unknown"
        out.append(
            f"last cycle: #{last.get('cycle')} at {_when(last.get('time'))} ({age}), "
            f"{'ok' if last.get('ok', True) else 'FAILED'}{' (dry run)' if last.get('dry_run') else ''}"
        )
        out.append("  cycle  time                 ok   seconds  in_scope  planned  sent  deferred")
        for c in s.cycles:
            ok = "yes" if c.get("ok", True) else "NO"
            out.append(
                f"  {c.get('cycle', '?')!s:>5}  {_when(c.get('time')):<19}  {ok:<3}  "
                f"{_number(c.get('seconds')):>7.3f}  {c.get('in_scope', '-')!s:>8}  "
                f"{c.get('planned', '-')!s:>7}  {c.get('sent', '-')!s:>4}  {c.get('deferred', '-')!s:>8}"
            )
        changes = ", ".join(f"{k}={v}" for k, v in sorted(s.changes_by_field.items())) or "none"
        out.append(f"changes sent in these cycles: {changes}")
    out.append(f"values given back (reverts) in the log: {s.reverts}")
    if s.history is not None:
        h = s.history
        read = (
            f"cold ({h.get('problem')})"
            if h.get("problem")
            else f"{h.get('jobs')} ended jobs from accounting"
        )
        out.append(f"history at the last start ({_when(h.get('time'))}): {read}")
    if s.errors:
        out.append("recent errors:")
        out.extend(f"  {e}" for e in s.errors)
    return "\n".join(out)
