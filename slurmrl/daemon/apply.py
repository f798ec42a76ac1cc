"""Sending planned changes to Slurm and keeping the record a superset of what Slurm holds.

Write-ahead: a change that sets a value is put in the record, marked
``unsure`` and saved (atomically, fsynced) *before* its ``scontrol update``;
a SIGKILL at any point of a batch therefore leaves at worst a recorded value
Slurm never took, which reconciliation (``reconcile.py``) resolves by
reading Slurm back, never a value in Slurm the record does not know. A
change that gives a value back goes the other way: sent first, recorded
after, so a crash in between only means giving it back twice.

Failures split four ways: the job is gone (drop it), the controller cannot
take more now (stop the batch; an unanswered update stays ``unsure``), the
account may not write notes (skip notes from then on, one warning), or this
one update was refused (roll its intent back, go on with the others).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from slurmrl.daemon.plan import PIN_FIELDS, Change
from slurmrl.daemon.record import Record, Touched
from slurmrl.errors import SlurmError
from slurmrl.slurm.backend import SlurmBackend
from slurmrl.slurm.elastic import GpuAsk
from slurmrl.slurm.run import ControllerUnreachable, JobNotFound, MungeError, PermissionDenied, RateLimited

# Controller-wide errors: further updates in this batch would fail the same way.
# PermissionDenied is per job (e.g. AdminComment needs Administrator, SiteFactor
# only Operator: validate_super_user vs validate_operator in Slurm's job update).
STOPPING = (RateLimited, ControllerUnreachable, MungeError)
# Give-backs of one field to one value share a ``scontrol update JobId=a,b,c``: this
# many ids per call (our choice: a short command line; a refused call costs at most
# this many single retries).
BATCH = 50
# Fields scontrol sends for a list of ids. ReqNodeList= (like NumNodes=) is a size change,
# which scontrol takes for one job only: it refuses a list before sending anything, as
# "Invalid job ID" (update_size and _is_single_job in src/scontrol/update_job.c, 22.05 to
# 26.05). Node lists are therefore given back one job per call.
BATCH_FIELDS = ("site_factor", "prefer", "admin_comment")


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
    notes_refused: bool = False  # AdminComment refused for lack of privilege: notes are off


def send(backend: SlurmBackend, change: Change) -> None:
    jid = change.job_id
    if change.field == "site_factor":
        backend.set_site_factor(jid, int(change.new))  # type: ignore[arg-type]
    elif change.field == "priority":
        if change.restore:
            _restore_priority(backend, change)
        else:
            backend.set_priority(jid, int(change.new))  # type: ignore[arg-type]
    elif change.field == "nodes":
        nodes = list(change.new) if change.new else None  # type: ignore[arg-type]
        backend.set_required_nodes(jid, nodes)
    elif change.field == "prefer":
        set_prefer = getattr(backend, "set_prefer", None)
        if set_prefer is None:
            raise SlurmError(f"job {jid}: this backend cannot set Prefer=", hint='use pin = "required"')
        set_prefer(jid, str(change.new or ""))
    elif change.field == "gpus":
        set_gpus = getattr(backend, "set_gpus", None)
        if set_gpus is None:
            raise SlurmError(f"job {jid}: this backend cannot change a GPU request")
        set_gpus(jid, GpuAsk.parse(str(change.new)))
    elif change.field == "admin_comment":
        backend.set_admin_comment(jid, str(change.new or ""))
    else:  # a planning bug, not a user error
        raise ValueError(f"unknown field {change.field!r}")


def _restore_priority(backend: SlurmBackend, change: Change) -> None:
    """An admin's explicit priority is set again; else multifactor takes over and nice comes back."""
    jid = change.job_id
    if change.orig_explicit and isinstance(change.new, int) and change.new > 0:
        backend.set_priority(jid, change.new)
        return
    reset = getattr(backend, "reset_priority", None)
    if reset is None:
        raise SlurmError(f"job {jid}: this backend cannot hand the priority back to multifactor")
    reset(jid)
    if change.orig_nice:  # setting Priority= cleared the user's --nice
        set_nice = getattr(backend, "set_nice", None)
        if set_nice is None:
            raise SlurmError(f"job {jid}: this backend cannot restore nice={change.orig_nice}")
        set_nice(jid, change.orig_nice)


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
            record.update(
                change.job_id,
                now,
                priority=change.new,
                orig_priority=change.orig,
                orig_nice=change.orig_nice,
                orig_explicit_priority=change.orig_explicit,
            )
        else:
            record.update(change.job_id, now, priority=change.new)
    elif f == "gpus":
        if change.restore:
            record.update(change.job_id, now, gpus=None)
        elif entry is None or entry.gpus is None:
            record.update(change.job_id, now, gpus=change.new, orig_gpus=change.orig or "")
        else:
            record.update(change.job_id, now, gpus=change.new)
    elif f in PIN_FIELDS:
        orig_name = "orig_nodes" if f == "nodes" else "orig_prefer"
        if change.restore:
            record.update(
                change.job_id,
                now,
                **{f: None},
                nodes_since=None,
                placement_blocked_until=max(
                    change.block_until, entry.placement_blocked_until if entry else 0
                ),
                pin_refused=change.request or (entry.pin_refused if entry else ""),
            )
        elif entry is None or getattr(entry, f) is None:
            orig = change.orig or (() if f == "nodes" else "")
            record.update(change.job_id, now, **{f: change.new, orig_name: orig}, nodes_since=now)
        else:
            record.update(change.job_id, now, **{f: change.new}, nodes_since=now)
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


def _mark_unsure(record: Record, job_id: str, name: str, unsure: bool) -> None:
    entry = record.get(job_id)
    if entry is None:
        return
    fields = set(entry.unsure) | {name} if unsure else set(entry.unsure) - {name}
    record.put(replace(entry, unsure=tuple(sorted(fields))))


def _roll_back(record: Record, job_id: str, before: Touched | None) -> None:
    """Undo an intent Slurm definitely refused."""
    if before is None:
        record.drop(job_id)
    else:
        record.put(before)


def apply_changes(
    backend: SlurmBackend,
    changes: Sequence[Change],
    record: Record,
    now: float,
    *,
    persist: Callable[[], None] = lambda: None,
    on_sent: Callable[[Change], None] | None = None,
    on_failed: Callable[[Change, SlurmError], None] | None = None,
    refused_block: float = 300.0,
    notes: bool = True,
    batch: int = 1,
) -> ApplyResult:
    """Send ``changes`` in order; ``persist`` saves the record (called before each setting update).

    ``batch`` > 1 (and a backend with ``update_many``): give-backs of the same
    field and value go first, up to ``batch`` jobs per call; see :func:`send_batched`.
    """
    sent: list[Change] = []
    failed: list[tuple[Change, str]] = []
    gone: set[str] = set()
    refused: set[str] = set()  # jobs with an update refused in this batch
    resize_refused: set[str] = set()  # elastic jobs whose new GPU request was refused
    notes_refused = False
    if batch > 1 and getattr(backend, "update_many", None) is not None:
        done, changes, stop = send_batched(backend, changes, record, now, batch, on_sent, on_failed)
        sent.extend(done)
        if stop is not None:
            return ApplyResult(tuple(sent), (), (), stop, len(changes))
    units = _units(changes)
    for i, unit in enumerate(units):
        change = unit[0]
        jid = change.job_id
        is_note = change.field == "admin_comment" and not change.restore
        if jid in gone or (is_note and (not notes or jid in refused)):
            continue  # a note would describe a change Slurm refused
        if jid in resize_refused and change.field in PIN_FIELDS and not change.restore:
            continue  # its GPU request was refused: the pin was chosen for the new one
        before = record.get(jid)
        ahead = not change.restore
        if ahead:
            for ch in unit:
                record_change(record, ch, now)
                _mark_unsure(record, jid, ch.field, True)
            persist()  # the intent is on disk before Slurm can act on it
        try:
            try:
                send_unit(backend, unit)
            except SlurmError as exc:
                if ahead or len(unit) == 1 or isinstance(exc, (JobNotFound, *STOPPING)):
                    raise
                for ch in unit:  # a give-back refused as a whole: each part on its own
                    send(backend, ch)
        except JobNotFound as exc:
            gone.add(jid)
            record.drop(jid)
            if on_failed is not None:
                on_failed(change, exc)
            continue
        except STOPPING as exc:  # an update left unanswered stays recorded as unsure
            if on_failed is not None:
                on_failed(change, exc)
            unsent = sum(len(u) for u in units[i:])
            return ApplyResult(tuple(sent), tuple(failed), tuple(sorted(gone)), exc, unsent, notes_refused)
        except SlurmError as exc:
            if ahead:
                _roll_back(record, jid, before)
            failed.extend((ch, exc.format()) for ch in unit)
            refused.add(jid)
            if any(ch.field == "gpus" for ch in unit) and not change.restore:
                resize_refused.add(jid)
            if is_note and isinstance(exc, PermissionDenied):
                notes, notes_refused = False, True
            elif any(ch.field in (*PIN_FIELDS, "gpus") for ch in unit) and not change.restore:
                # Slurm refused the node list (e.g. a node outside the job's partition) or
                # the GPU request (e.g. over a limit): not placed again until the request changes.
                record.update(
                    jid, now, placement_blocked_until=now + refused_block, pin_refused=change.request
                )
            if on_failed is not None:
                for ch in unit:
                    on_failed(ch, exc)
            continue
        for ch in unit:
            if ahead:
                _mark_unsure(record, jid, ch.field, False)
            else:
                record_change(record, ch, now)
            sent.append(ch)
            if on_sent is not None:
                on_sent(ch)
    return ApplyResult(tuple(sent), tuple(failed), tuple(sorted(gone)), None, 0, notes_refused)


def _units(changes: Sequence[Change]) -> list[tuple[Change, ...]]:
    """The changes as updates: an elastic job's GPU request and its pin, next to each other
    (the plan puts them so), form one update; every other change is one on its own.

    Every ``scontrol update`` wakes the scheduler, so a resized job sent its pin in a second
    update could start elsewhere in between. slurmctld takes ``Gres=``, ``NumNodes=`` and
    ``ReqNodeList=`` in one request (``_update_job`` in src/slurmctld/job_mgr.c handles the
    node list, the GRES and the node count in one pass) and scontrol sends them in one RPC.
    """
    out: list[tuple[Change, ...]] = []
    i = 0
    while i < len(changes):
        ch = changes[i]
        nxt = changes[i + 1] if i + 1 < len(changes) else None
        fields = {ch.field, nxt.field} if nxt is not None else set()
        if (
            nxt is not None
            and nxt.job_id == ch.job_id
            and nxt.restore == ch.restore
            and "gpus" in fields
            and fields & set(PIN_FIELDS)
        ):
            out.append((ch, nxt))
            i += 2
        else:
            out.append((ch,))
            i += 1
    return out


def send_unit(backend: SlurmBackend, unit: tuple[Change, ...]) -> None:
    """One update: a single change, or a GPU request with its pin (see :func:`_units`)."""
    if len(unit) == 1:
        send(backend, unit[0])
        return
    gpus = next(ch for ch in unit if ch.field == "gpus")
    pin = next(ch for ch in unit if ch.field in PIN_FIELDS)
    set_gpus = getattr(backend, "set_gpus", None)
    if set_gpus is None:
        raise SlurmError(f"job {gpus.job_id}: this backend cannot change a GPU request")
    value: object = (list(pin.new) if pin.new else None) if pin.field == "nodes" else str(pin.new or "")
    set_gpus(gpus.job_id, GpuAsk.parse(str(gpus.new)), pin=(pin.field, value))


def _batch_key(change: Change) -> tuple[str, object] | None:
    if not change.restore or change.field not in BATCH_FIELDS:
        return None
    if change.field == "site_factor":
        return change.field, change.new
    return change.field, change.new or None  # (), "" and None all clear the field


def send_batched(
    backend: SlurmBackend,
    changes: Sequence[Change],
    record: Record,
    now: float,
    size: int,
    on_sent: Callable[[Change], None] | None,
    on_failed: Callable[[Change, SlurmError], None] | None,
) -> tuple[list[Change], list[Change], SlurmError | None]:
    """Give-backs grouped by field and value, ``size`` jobs per ``update_many`` call.

    Returns the changes Slurm took (each recorded as given back only now, after
    the call returned without error), the changes left for one-by-one sending in
    their original order, and the controller-wide error that stopped the batch.
    A call that fails otherwise (an id Slurm no longer knows, a refusal) leaves its
    jobs to the one-by-one path, which learns which job failed and why: Slurm
    went on with the other ids, so sending those again only repeats the same value.
    """
    groups: dict[tuple[str, object], list[Change]] = {}
    for ch in changes:
        key = _batch_key(ch)
        if key is not None:
            groups.setdefault(key, []).append(ch)
    taken: set[int] = set()  # id() of the changes Slurm took
    done: list[Change] = []
    for (name, value), members in groups.items():
        for start in range(0, len(members), size):
            chunk = members[start : start + size]
            if len(chunk) < 2:
                continue
            try:
                backend.update_many([c.job_id for c in chunk], name, value)  # type: ignore[attr-defined]
            except STOPPING as exc:
                if on_failed is not None:
                    on_failed(chunk[0], exc)
                return done, [c for c in changes if id(c) not in taken], exc
            except SlurmError:
                continue  # one by one below
            for c in chunk:
                record_change(record, c, now)
                taken.add(id(c))
                done.append(c)
                if on_sent is not None:
                    on_sent(c)
    return done, [c for c in changes if id(c) not in taken], None
