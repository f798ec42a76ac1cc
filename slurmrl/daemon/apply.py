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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from slurmrl.daemon.plan import PIN_FIELDS, Change
from slurmrl.daemon.record import Record, Touched
from slurmrl.errors import SlurmError
from slurmrl.slurm.backend import SlurmBackend
from slurmrl.slurm.elastic import GpuAsk
from slurmrl.slurm.run import (
    ControllerUnreachable,
    JobNotFound,
    MungeError,
    PartlyRefused,
    PermissionDenied,
    RateLimited,
    TryAgain,
)

# Controller-wide errors: further updates in this batch would fail the same way.
# PermissionDenied is per job (e.g. AdminComment needs Administrator, SiteFactor
# only Operator: validate_super_user vs validate_operator in Slurm's job update).
STOPPING = (RateLimited, ControllerUnreachable, MungeError)
# Updates of one field to one value share a ``scontrol update JobId=a,b,c``: this many ids
# per call (our choice). scontrol itself sets no limit on the list (it splits it on ',' and
# sends one REQUEST_UPDATE_JOB per id: _is_job_id, _next_job_id and scontrol_update_job in
# src/scontrol/update_job.c, 22.05 and 24.11); the command line is bounded by the kernel
# (128 KiB per argument), and a call refused in part costs up to this many single retries.
BATCH = 100
# Fields scontrol sends for a list of ids. ReqNodeList= (like NumNodes=) is a size change,
# which scontrol takes for one job only: it refuses a list before sending anything, as
# "Invalid job ID" (update_size and _is_single_job in src/scontrol/update_job.c, 22.05 to
# 26.05). Node lists are therefore given back one job per call.
BATCH_FIELDS = ("site_factor", "priority", "prefer", "admin_comment")


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
    unsent: int  # changes not attempted because the batch stopped or the cycle's cap was reached
    notes_refused: bool = False  # AdminComment refused for lack of privilege: notes are off
    calls: int = 0  # Slurm calls made (one scontrol update each)
    updates: int = 0  # job updates sent (slurmctld RPCs: scontrol sends one per id of a list)
    seconds: float = 0.0  # wall time spent in those calls
    capped: bool = False  # stopped at the cycle's call or time cap (SendLimits)
    later: tuple[str, ...] = ()  # jobs whose updates slurmctld put off (TryAgain): sent again later


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


RECORDED = ("site_factor", "priority", "gpus", *PIN_FIELDS, "admin_comment")


def record_change(record: Record, change: Change, now: float) -> None:
    """Update the record after Slurm accepted ``change``: a give-back clears the field, a first
    setting also saves what to give back (:func:`_originals`), a later one only the new value."""
    entry = record.get(change.job_id)
    f = change.field
    if f in RECORDED:
        if change.restore:
            fields = _given_back(change, entry)
        elif entry is None or getattr(entry, f) is None:
            fields = {f: change.new, **_originals(change), **_with_every_setting(change, now)}
        else:
            fields = {f: change.new, **_with_every_setting(change, now)}
        record.update(change.job_id, now, **fields)
    if f != "admin_comment":
        after = record.get(change.job_id)
        if after is not None and after.admin_comment is not None:
            record.put(replace(after, note_stale=True))


def _originals(change: Change) -> dict[str, Any]:
    """What a field's first setting saves to give back: Slurm's value before the daemon's."""
    f = change.field
    if f == "site_factor":
        return {"orig_site_factor": change.orig or 0}
    if f == "priority":
        return {
            "orig_priority": change.orig,
            "orig_nice": change.orig_nice,
            "orig_explicit_priority": change.orig_explicit,
        }
    if f == "gpus":
        return {"orig_gpus": change.orig or ""}
    if f == "nodes":
        return {"orig_nodes": change.orig or ()}
    if f == "prefer":
        return {"orig_prefer": change.orig or ""}
    return {}


def _with_every_setting(change: Change, now: float) -> dict[str, Any]:
    """Fields a setting refreshes whether first or not: a pin's start time; for a note, the admin's
    own text it was appended to (restored when the note is given back) and its freshness."""
    if change.field in PIN_FIELDS:
        return {"nodes_since": now}
    if change.field == "admin_comment":
        return {"orig_admin_comment": change.orig or "", "note_stale": False}
    return {}


def _given_back(change: Change, entry: Touched | None) -> dict[str, Any]:
    """The record's fields after a give-back; a pin keeps why and until when it may not come back."""
    f = change.field
    if f in PIN_FIELDS:
        return {
            f: None,
            "nodes_since": None,
            "placement_blocked_until": max(change.block_until, entry.placement_blocked_until if entry else 0),
            "pin_refused": change.request or (entry.pin_refused if entry else ""),
        }
    if f == "admin_comment":
        return {"admin_comment": None, "note_stale": False}
    return {f: None}


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


@dataclass(frozen=True)
class SendLimits:
    """How much one cycle may ask of slurmctld: Slurm calls (one ``scontrol update`` each)
    and seconds spent sending; what does not fit waits for the next cycle (None: no cap)."""

    calls: int | None = None
    seconds: float | None = None


@dataclass
class _Sending:
    """What one :func:`apply_changes` has done so far (its stages share it)."""

    backend: SlurmBackend
    record: Record
    now: float
    persist: Callable[[], None]
    on_sent: Callable[[Change], None] | None
    on_failed: Callable[[Change, SlurmError], None] | None
    refused_block: float
    notes: bool
    sent: list[Change] = field(default_factory=list)
    failed: list[tuple[Change, str]] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)  # jobs with an update refused in this batch
    later: set[str] = field(default_factory=set)  # of those, jobs slurmctld put off for now (TryAgain)
    resize_refused: set[str] = field(default_factory=set)  # elastic jobs whose GPU request was refused
    notes_refused: bool = False
    calls: int = 0
    updates: int = 0
    seconds: float = 0.0

    def result(self, stop: SlurmError | None = None, unsent: int = 0, capped: bool = False) -> ApplyResult:
        return ApplyResult(
            tuple(self.sent),
            tuple(self.failed),
            tuple(sorted(self.gone)),
            stop,
            unsent,
            self.notes_refused,
            self.calls,
            self.updates,
            self.seconds,
            capped,
            tuple(sorted(self.later)),
        )

    def skips(self, change: Change) -> bool:
        """A change not to send now: its job is gone, or it would describe a refused one."""
        jid = change.job_id
        is_note = change.field == "admin_comment" and not change.restore
        if jid in self.gone or (is_note and (not self.notes or jid in self.refused)):
            return True  # a note would describe a change Slurm refused
        # its GPU request was refused: the pin was chosen for the new one
        return jid in self.resize_refused and change.field in PIN_FIELDS and not change.restore


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
    limits: SendLimits = SendLimits(),
) -> ApplyResult:
    """Send ``changes`` in order; ``persist`` saves the record (called before each setting update).

    ``batch`` > 1 (and a backend with ``update_many``): changes of one field to one
    value share a call, up to ``batch`` jobs (see :func:`plan_calls`). ``limits`` caps
    the calls and the seconds: the changes past it are counted as ``unsent``.
    """
    if getattr(backend, "update_many", None) is None:
        batch = 1
    run = _Sending(backend, record, now, persist, on_sent, on_failed, refused_block, notes)
    calls = plan_calls(as_updates(changes), batch)
    t0 = time.monotonic()
    for i, call in enumerate(calls):
        if _over(limits, run.calls, time.monotonic() - t0):
            return run.result(None, _count(calls[i:]), capped=True)
        started = time.monotonic()
        stop = _send_batch(run, call) if len(call) > 1 else _send_one(run, call[0])
        run.seconds += time.monotonic() - started
        if stop is not None:
            return run.result(stop, _count(calls[i:]))
    return run.result()


def _over(limits: SendLimits, calls: int, seconds: float) -> bool:
    if limits.calls is not None and calls >= limits.calls:
        return True
    return limits.seconds is not None and calls > 0 and seconds >= limits.seconds


def _count(calls: Sequence[Sequence[tuple[Change, ...]]]) -> int:
    return sum(len(unit) for call in calls for unit in call)


def _send_one(
    run: _Sending, unit: tuple[Change, ...], before: Touched | None | bool = False
) -> SlurmError | None:
    """One update (one job); returns the controller-wide error that must stop the batch.

    ``before``: the job's record entry from before a list call that already recorded this
    unit's intent (False: read it now)."""
    change = unit[0]
    jid = change.job_id
    if run.skips(change):
        return None
    record = run.record
    if before is False:
        before = record.get(jid)
    ahead = not change.restore
    if ahead:
        for ch in unit:
            record_change(record, ch, run.now)
            _mark_unsure(record, jid, ch.field, True)
        run.persist()  # the intent is on disk before Slurm can act on it
    run.calls += 1
    run.updates += 1
    try:
        try:
            send_unit(run.backend, unit)
        except SlurmError as exc:
            if ahead or len(unit) == 1 or isinstance(exc, (JobNotFound, *STOPPING)):
                raise
            for ch in unit:  # a give-back refused as a whole: each part on its own
                send(run.backend, ch)
    except JobNotFound as exc:
        run.gone.add(jid)
        record.drop(jid)
        if run.on_failed is not None:
            run.on_failed(change, exc)
        return None
    except STOPPING as exc:  # an update left unanswered stays recorded as unsure
        if run.on_failed is not None:
            run.on_failed(change, exc)
        return exc
    except SlurmError as exc:
        _refused(run, unit, exc, before if ahead else None)  # type: ignore[arg-type]
        return None
    for ch in unit:
        if ahead:
            _mark_unsure(record, jid, ch.field, False)
        else:
            record_change(record, ch, run.now)
        _done(run, ch)
    return None


def _refused(run: _Sending, unit: tuple[Change, ...], exc: SlurmError, before: Touched | None) -> None:
    """Slurm refused this one update: its intent rolled back, the job remembered."""
    change = unit[0]
    jid = change.job_id
    if not change.restore:
        _roll_back(run.record, jid, before)
    run.failed.extend((ch, exc.format()) for ch in unit)
    run.refused.add(jid)
    if any(ch.field == "gpus" for ch in unit) and not change.restore:
        run.resize_refused.add(jid)
    if isinstance(exc, TryAgain):
        # Not a verdict on the value: the next cycle (or revert round) plans it again.
        run.later.add(jid)
    elif change.field == "admin_comment" and not change.restore and isinstance(exc, PermissionDenied):
        run.notes, run.notes_refused = False, True
    elif any(ch.field in (*PIN_FIELDS, "gpus") for ch in unit) and not change.restore:
        # Slurm refused the node list (e.g. a node outside the job's partition) or
        # the GPU request (e.g. over a limit): not placed again until the request changes.
        run.record.update(
            jid, run.now, placement_blocked_until=run.now + run.refused_block, pin_refused=change.request
        )
    if run.on_failed is not None:
        for ch in unit:
            run.on_failed(ch, exc)


def _done(run: _Sending, change: Change) -> None:
    run.sent.append(change)
    if run.on_sent is not None:
        run.on_sent(change)


def as_updates(changes: Sequence[Change]) -> list[tuple[Change, ...]]:
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
    """One update: a single change, or a GPU request with its pin (see :func:`as_updates`)."""
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


def _batch_key(change: Change) -> tuple[str, bool, object] | None:
    """Changes with the same key may share one ``scontrol update JobId=a,b,c``."""
    if change.field not in BATCH_FIELDS or (change.field == "priority" and change.restore):
        return None  # a priority given back may need a release and a nice: one job each
    if change.field in ("site_factor", "priority"):
        return change.field, change.restore, change.new
    return change.field, change.restore, change.new or None  # (), "" and None all clear the field


def plan_calls(units: Sequence[tuple[Change, ...]], size: int) -> list[list[tuple[Change, ...]]]:
    """The updates as Slurm calls: units of one field, value and direction share a call of
    up to ``size`` jobs, placed where its first member stood, so the urgent go first.

    A job joins a list call only if that call is sent after every earlier update of the
    same job (a note never overtakes the change it describes).
    """
    calls: list[list[tuple[Change, ...]]] = []
    open_at: dict[tuple[str, bool, object], int] = {}  # key -> index of the call still filling
    last: dict[str, int] = {}  # job -> index of the last call holding one of its updates
    for unit in units:
        key = _batch_key(unit[0]) if size > 1 and len(unit) == 1 else None
        jid = unit[0].job_id
        at = open_at.get(key) if key is not None else None
        if at is None or len(calls[at]) >= size or at <= last.get(jid, -1):
            at = len(calls)
            calls.append([])
            if key is not None:
                open_at[key] = at
        calls[at].append(unit)
        last[jid] = max(at, last.get(jid, -1))
    return calls


def _send_batch(run: _Sending, call: list[tuple[Change, ...]]) -> SlurmError | None:
    """One ``update_many`` for several jobs, recorded as one update would be: a setting
    before it is sent, a give-back once Slurm took it. A call Slurm refused in part falls
    back to one update per job (scontrol went on past the refused ids, so the others only
    get the same value again), which learns which job failed and why. Where scontrol named
    the refused ids, only those settings are sent again (the others are already in place)."""
    members = [unit for unit in call if not run.skips(unit[0])]
    if len(members) < 2:
        for unit in members:
            if (stop := _send_one(run, unit)) is not None:
                return stop
        return None
    changes = [unit[0] for unit in members]
    first = changes[0]
    ahead = not first.restore
    befores = {ch.job_id: run.record.get(ch.job_id) for ch in changes}
    if ahead:
        for ch in changes:
            record_change(run.record, ch, run.now)
            _mark_unsure(run.record, ch.job_id, ch.field, True)
        run.persist()  # every intent is on disk before Slurm can act on any
    _, _, value = _batch_key(first)  # type: ignore[misc]
    run.calls += 1
    run.updates += len(changes)
    try:
        run.backend.update_many([ch.job_id for ch in changes], first.field, value)  # type: ignore[attr-defined]
    except STOPPING as exc:  # unanswered: settings stay recorded as unsure, give-backs as not done
        if run.on_failed is not None:
            run.on_failed(first, exc)
        return exc
    except PartlyRefused as exc:  # scontrol named the refused ids: the others took the value
        if not ahead:  # a give-back counts as done only once its own call returned cleanly
            return _one_by_one(run, members, befores, ahead)
        refused = set(exc.refused)
        _confirm(run, [ch for ch in changes if ch.job_id not in refused], ahead)
        return _one_by_one(run, [u for u in members if u[0].job_id in refused], befores, ahead)
    except SlurmError:
        return _one_by_one(run, members, befores, ahead)
    _confirm(run, changes, ahead)
    return None


def _confirm(run: _Sending, changes: Sequence[Change], ahead: bool) -> None:
    """Slurm took these: a setting is sure now, a give-back is recorded only now."""
    for ch in changes:
        if ahead:
            _mark_unsure(run.record, ch.job_id, ch.field, False)
        else:
            record_change(run.record, ch, run.now)
        _done(run, ch)


def _one_by_one(
    run: _Sending, units: Sequence[tuple[Change, ...]], befores: dict[str, Touched | None], ahead: bool
) -> SlurmError | None:
    """The per-job fallback of a list call: each job with its record from before the call."""
    for unit in units:
        if (stop := _send_one(run, unit, befores[unit[0].job_id] if ahead else False)) is not None:
            return stop
    return None
