"""What the daemon has changed in Slurm, kept on disk so it can always be undone.

The record is the daemon's only memory: it diffs every plan against it (so
an unchanged decision sends nothing), and it holds each job's values from
before the first change, so a stop, a crash followed by ``slurmrl daemon
revert``, or a restart can restore them. It is written atomically (temporary
file, fsync, rename) so a crash mid-write leaves the previous record whole.
It also keeps what Slurm forgets of the jobs the daemon requeued
(:class:`Preempted`, see :mod:`slurmrl.daemon.preempt`).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurmrl.errors import ConfigError

if TYPE_CHECKING:
    from slurmrl.slurm.snapshot import SlurmJob

FORMAT = 1


@dataclass(frozen=True)
class Touched:
    """One job's values as set by the daemon, and as they were before it."""

    job_id: str
    first_touched: float
    site_factor: int | None = None  # value the daemon set (None: never set)
    orig_site_factor: int = 0
    priority: int | None = None
    orig_priority: int | None = None
    nodes: tuple[str, ...] | None = None  # ReqNodeList the daemon set
    nodes_since: float | None = None
    orig_nodes: tuple[str, ...] = ()
    admin_comment: str | None = None  # full text the daemon wrote
    orig_admin_comment: str = ""
    # After a placement expires unstarted, the job is not placed again before this time.
    placement_blocked_until: float = 0.0
    # A field changed after the audit note was last written: the note must be rewritten.
    note_stale: bool = False
    # Fields whose last update was saved here before it was sent and whose outcome
    # is unknown (crash before the answer, scontrol timeout): reconciled with what
    # Slurm shows before anything else is planned.
    unsure: tuple[str, ...] = ()
    # Priority mode: the job's nice and whether its priority was set explicitly
    # (by an admin) before the daemon's first change, so revert can restore both.
    orig_nice: int = 0
    orig_explicit_priority: bool = False
    # The job's request (see plan.request_key) when Slurm refused a pin: not pinned
    # again until the request changes.
    pin_refused: str = ""
    # A soft pin (config pin = "prefer"): the Prefer= text the daemon set, naming the
    # chosen nodes as features ("node01|node02"), and the job's Prefer from before.
    # ``nodes_since`` times it as it times a hard pin.
    prefer: str | None = None
    orig_prefer: str = ""
    # An elastic job's GPU request (slurmrl.slurm.elastic.GpuAsk.text) the daemon set, and the
    # user's request from before, which revert gives back.
    gpus: str | None = None
    orig_gpus: str = ""

    @property
    def pinned(self) -> tuple[str, ...] | None:
        """The nodes the daemon steers the job to, by either kind of pin; None when unpinned."""
        if self.nodes is not None:
            return self.nodes
        if self.prefer is not None:
            return tuple(sorted(n for n in self.prefer.split("|") if n))
        return None

    @property
    def changed_anything(self) -> bool:
        return (
            self.site_factor is not None
            or self.priority is not None
            or self.nodes is not None
            or self.prefer is not None
            or self.gpus is not None
            or self.admin_comment is not None
        )

    def to_json(self) -> dict[str, Any]:
        # Every field is a str, number, bool, None or a tuple of str: a shallow copy is
        # enough (dataclasses.asdict deep-copies, which a 10,000-job record pays per save).
        d = {name: getattr(self, name) for name in _FIELDS}
        d["nodes"] = list(self.nodes) if self.nodes is not None else None
        d["orig_nodes"] = list(self.orig_nodes)
        d["unsure"] = list(self.unsure)
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> Touched:
        """An entry as saved; a field of the wrong kind is a ValueError naming it.

        The ``orig_`` values are what revert gives back to Slurm: a damaged or
        hand-edited one must stop the load, not be sent to scontrol.
        """
        known = {k: d[k] for k in Touched.__dataclass_fields__ if k in d}
        for name, value in known.items():
            if not _is_kind(_TOUCHED_KINDS[name], value):
                raise ValueError(f"field '{name}' of job {d.get('job_id')!r} is {value!r}")
        if known.get("nodes") is not None:
            known["nodes"] = tuple(known["nodes"])
        known["orig_nodes"] = tuple(known.get("orig_nodes") or ())
        known["unsure"] = tuple(known.get("unsure") or ())
        return Touched(**known)


_FIELDS = tuple(Touched.__dataclass_fields__)
# Each field's kind in the saved record ("?": or null); tests check every field has one.
_TOUCHED_KINDS = {
    "job_id": "str",
    "first_touched": "number",
    "site_factor": "int?",
    "orig_site_factor": "int",
    "priority": "int?",
    "orig_priority": "int?",
    "nodes": "names?",
    "nodes_since": "number?",
    "orig_nodes": "names",
    "admin_comment": "str?",
    "orig_admin_comment": "str",
    "placement_blocked_until": "number",
    "note_stale": "bool",
    "unsure": "names",
    "orig_nice": "int",
    "orig_explicit_priority": "bool",
    "pin_refused": "str",
    "prefer": "str?",
    "orig_prefer": "str",
    "gpus": "str?",
    "orig_gpus": "str",
}


def _is_kind(kind: str, value: object) -> bool:
    if kind.endswith("?"):
        return value is None or _is_kind(kind[:-1], value)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return _number(value) and math.isfinite(value)  # type: ignore[arg-type]
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "names":
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    return isinstance(value, str)


@dataclass(frozen=True)
class Preempted:
    """A job the daemon requeued: what Slurm forgets at a requeue, and a requeue in flight."""

    job_id: str
    submit_time: float  # as first submitted (Slurm resets it at every requeue)
    service: float = 0.0  # GPU-seconds of the runs the daemon stopped
    count: int = 0  # requeues the daemon saw done
    # A requeue recorded before it was sent and not yet seen done: the start time of the
    # run it stops, Slurm's restart count then, and the GPU-seconds that run had.
    stopping: float | None = None
    restarts: int = 0
    stopping_service: float = 0.0
    # When the job was seen ended (None: not yet). Accounting keeps only a job's last run,
    # so the entry outlives it by ``history_days`` for a restart to read its runs back.
    ended: float | None = None

    @staticmethod
    def stopping_now(job: SlurmJob, earlier: Preempted | None, now: float) -> Preempted:
        """The intent to requeue the running ``job``, kept over what earlier requeues left."""
        start = job.start_time if job.start_time is not None else now
        base = (
            earlier
            if earlier is not None and earlier.ended is None
            else Preempted(job.job_id, job.submit_time)
        )
        return replace(
            base,
            stopping=start,
            restarts=job.restarts,
            stopping_service=job.gpus.total * max(0.0, now - start),
        )

    def done(self) -> Preempted:
        return replace(
            self,
            service=self.service + self.stopping_service,
            count=self.count + 1,
            stopping=None,
            stopping_service=0.0,
        )

    def undone(self) -> Preempted | None:
        """The entry as if the requeue had never been asked for (None: nothing left to keep)."""
        if self.count == 0:
            return None
        return replace(self, stopping=None, stopping_service=0.0)

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _PREEMPTED_FIELDS}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Preempted:
        entry = Preempted(**{k: d[k] for k in _PREEMPTED_FIELDS if k in d})
        numbers = (entry.submit_time, entry.service, entry.stopping_service)
        if (
            not isinstance(entry.job_id, str)
            or not all(_number(x) for x in numbers)
            or not all(x is None or _number(x) for x in (entry.stopping, entry.ended))
            or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0
                for n in (entry.count, entry.restarts)
            )
        ):
            raise ValueError(f"bad preempted entry {dict(d)!r}")
        return entry


def _line(cache: dict[str, tuple[Any, str]], job_id: str, entry: Touched | Preempted) -> str:
    """``"job_id": {entry}``, from ``cache`` while the entry object is the one encoded there."""
    cached = cache.get(job_id)
    if cached is not None and cached[0] is entry:
        return cached[1]
    line = f" {json.dumps(job_id)}: {json.dumps(entry.to_json())}"
    cache[job_id] = (entry, line)
    return line


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


_PREEMPTED_FIELDS = tuple(Preempted.__dataclass_fields__)


class Record:
    """Job id -> :class:`Touched`, plus the cycle counter and the jobs the daemon requeued
    (:class:`Preempted`, kept until ``history_days`` after they end); saved as one JSON file."""

    def __init__(
        self,
        jobs: dict[str, Touched] | None = None,
        cycle: int = 0,
        preempted: dict[str, Preempted] | None = None,
    ) -> None:
        self.jobs: dict[str, Touched] = dict(jobs or {})
        self.cycle = cycle
        self.preempted: dict[str, Preempted] = dict(preempted or {})
        # Job id -> (entry, its JSON): entries are frozen, so a save encodes only the new ones.
        self._encoded: dict[str, tuple[Touched, str]] = {}
        self._encoded_preempted: dict[str, tuple[Preempted, str]] = {}

    def get(self, job_id: str) -> Touched | None:
        return self.jobs.get(job_id)

    def put(self, entry: Touched) -> None:
        if entry.changed_anything or entry.placement_blocked_until or entry.pin_refused:
            self.jobs[entry.job_id] = entry
        else:
            self.jobs.pop(entry.job_id, None)

    def update(self, job_id: str, now: float, **fields: Any) -> Touched:
        entry = self.jobs.get(job_id) or Touched(job_id=job_id, first_touched=now)
        entry = replace(entry, **fields)
        self.put(entry)
        return entry

    def drop(self, job_id: str) -> None:
        self.jobs.pop(job_id, None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": FORMAT, "cycle": self.cycle}
        if self.preempted:
            out["preempted"] = {k: v.to_json() for k, v in sorted(self.preempted.items())}
        out["jobs"] = {k: v.to_json() for k, v in sorted(self.jobs.items())}
        return out

    def to_text(self) -> str:
        """The record as JSON, one job a line. The daemon saves it before every update, so
        each entry is encoded once (entries are frozen) and a save of a 10,000-job record
        mostly joins lines already made; so are the requeued jobs' entries, kept for days."""
        lines = [_line(self._encoded, k, e) for k, e in sorted(self.jobs.items())]
        self._encoded = {k: v for k, v in self._encoded.items() if k in self.jobs}
        head = f'{{"format": {FORMAT}, "cycle": {int(self.cycle)}, {self._preempted_text()}"jobs": {{'
        return f"{head}\n" + ",\n".join(lines) + "\n}}\n" if lines else f"{head}}}}}\n"

    def _preempted_text(self) -> str:
        """The requeued jobs' entries, when there are any (a record without them reads as before)."""
        if not self.preempted:
            self._encoded_preempted = {}
            return ""
        lines = [_line(self._encoded_preempted, k, e) for k, e in sorted(self.preempted.items())]
        self._encoded_preempted = {k: v for k, v in self._encoded_preempted.items() if k in self.preempted}
        return '"preempted": {' + ",".join(lines) + "}, "

    def save(self, path: str | Path) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(self.to_text())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @staticmethod
    def load(path: str | Path) -> Record:
        """The saved record, or an empty one when the file does not exist yet."""
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return Record()
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot read the daemon state file: {exc}",
                file=str(p),
                hint="it records what the daemon changed; restore it from a backup or inspect it by hand "
                "before deleting it (deleting forgets which jobs to revert)",
            ) from None
        if (
            not isinstance(data, dict)
            or data.get("format") != FORMAT
            or not isinstance(data.get("jobs"), dict)
            or not isinstance(data.get("preempted", {}), dict)
        ):
            raise ConfigError(f"state file is not a slurmrl daemon record (format {FORMAT})", file=str(p))
        try:
            jobs = {k: Touched.from_json(v) for k, v in data["jobs"].items()}
            preempted = {k: Preempted.from_json(v) for k, v in (data.get("preempted") or {}).items()}
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"state file holds a malformed job entry: {exc}", file=str(p)) from None
        cycle = data.get("cycle", 0)
        if not _is_kind("int", cycle) or cycle < 0:
            raise ConfigError(f"state file's cycle is {cycle!r}, not a count of cycles", file=str(p))
        return Record(jobs, cycle, preempted)
