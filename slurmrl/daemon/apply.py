"""Sending planned changes to Slurm and keeping the record true to what was sent.

The record is updated after each successful update and only then, so it
never claims a change Slurm did not take. Failures split three ways: the job
is gone (drop it, nothing left to revert), the controller cannot take more
now (stop the batch; the rest are re-planned next cycle), or this one update
was refused (log it, go on with the others).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from slurmrl.daemon.plan import Change
from slurmrl.daemon.record import Record
from slurmrl.errors import SlurmError
from slurmrl.slurm.backend import SlurmBackend
from slurmrl.slurm.run import ControllerUnreachable, JobNotFound, MungeError, PermissionDenied, RateLimited

# Errors after which further updates in this batch would fail the same way.
STOPPING = (RateLimited, ControllerUnreachable, MungeError, PermissionDenied)


def error_kind(exc: BaseException) -> str:
    """A metrics label: ``rate_limited``, ``controller_unreachable``, ..."""
    name = type(exc).__name__
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


@dataclass(frozen=True)
class ApplyResult:
    sent: tuple[Change, ...]
    failed: tuple[tuple[Change, str], ...]
    vanished: tuple[str, ...]
    stopped_by: SlurmError | None
    unsent: int  # changes not attempted because the batch stopped


def send(backend: SlurmBackend, change: Change) -> None:
    jid = change.job_id
    if change.field == "site_factor":
        backend.set_site_factor(jid, int(change.new))  # type: ignore[arg-type]
    elif change.field == "priority":
        if change.restore:
            reset = getattr(backend, "reset_priority", None)
            if reset is not None:
                reset(jid)
            elif isinstance(change.orig, int) and change.orig > 0:
                backend.set_priority(jid, change.orig)
            else:
                raise SlurmError(f"job {jid}: this backend cannot hand the priority back to multifactor")
        else:
            backend.set_priority(jid, int(change.new))  # type: ignore[arg-type]
    elif change.field == "nodes":
        nodes = list(change.new) if change.new else None  # type: ignore[arg-type]
        backend.set_required_nodes(jid, nodes)
    elif change.field == "admin_comment":
        backend.set_admin_comment(jid, str(change.new or ""))
    else:  # a planning bug, not a user error
        raise ValueError(f"unknown field {change.field!r}")


def record_change(record: Record, change: Change, now: float) -> None:
    """Update the record after Slurm accepted ``change``."""
    entry = record.get(change.job_id)
    f = change.field
    if f == "site_factor":
        if change.restore:
            record.update(change.job_id, now, site_factor=None)
        elif entry is None or entry.site_factor is None:
            record.update(change.job_id, now, site_factor=change.new, orig_site_factor=change.orig or 0)
        else:
            record.update(change.job_id, now, site_factor=change.new)
    elif f == "priority":
        if change.restore:
            record.update(change.job_id, now, priority=None)
        elif entry is None or entry.priority is None:
            record.update(change.job_id, now, priority=change.new, orig_priority=change.orig)
        else:
            record.update(change.job_id, now, priority=change.new)
    elif f == "nodes":
        if change.restore:
            record.update(
                change.job_id,
                now,
                nodes=None,
                nodes_since=None,
                placement_blocked_until=max(
                    change.block_until, entry.placement_blocked_until if entry else 0
                ),
            )
        elif entry is None or entry.nodes is None:
            record.update(change.job_id, now, nodes=change.new, nodes_since=now, orig_nodes=change.orig or ())
        else:
            record.update(change.job_id, now, nodes=change.new, nodes_since=now)
    elif f == "admin_comment":
        if change.restore:
            record.update(change.job_id, now, admin_comment=None, note_stale=False)
        elif entry is None or entry.admin_comment is None:
            record.update(
                change.job_id,
                now,
                admin_comment=change.new,
                orig_admin_comment=change.orig or "",
                note_stale=False,
            )
        else:
            record.update(
                change.job_id,
                now,
                admin_comment=change.new,
                orig_admin_comment=change.orig or "",
                note_stale=False,
            )
    if f != "admin_comment":
        after = record.get(change.job_id)
        if after is not None and after.admin_comment is not None:
            record.put(replace(after, note_stale=True))


def apply_changes(
    backend: SlurmBackend,
    changes: Sequence[Change],
    record: Record,
    now: float,
    *,
    on_sent: Callable[[Change], None] | None = None,
    on_failed: Callable[[Change, SlurmError], None] | None = None,
    refused_block: float = 300.0,
) -> ApplyResult:
    sent: list[Change] = []
    failed: list[tuple[Change, str]] = []
    gone: list[str] = []
    gone_set: set[str] = set()
    for i, change in enumerate(changes):
        if change.job_id in gone_set:
            continue
        try:
            send(backend, change)
        except JobNotFound as exc:
            gone.append(change.job_id)
            gone_set.add(change.job_id)
            record.drop(change.job_id)
            if on_failed is not None:
                on_failed(change, exc)
            continue
        except STOPPING as exc:
            if on_failed is not None:
                on_failed(change, exc)
            return ApplyResult(tuple(sent), tuple(failed), tuple(gone), exc, len(changes) - i)
        except SlurmError as exc:
            failed.append((change, exc.format()))
            if change.field == "nodes" and not change.restore:
                # Slurm refused the node list (e.g. a node outside the job's partition):
                # do not ask again every cycle.
                record.update(change.job_id, now, placement_blocked_until=now + refused_block)
            if on_failed is not None:
                on_failed(change, exc)
            continue
        record_change(record, change, now)
        sent.append(change)
        if on_sent is not None:
            on_sent(change)
    return ApplyResult(tuple(sent), tuple(failed), tuple(gone), None, 0)
