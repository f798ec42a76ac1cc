"""Jobs that ended, as Slurm's accounting (``sacct``) remembers them.

History-based policies (QSSF's run-time estimates, topdrl's per-user and
per-account history, maifs's estimator) learn only from jobs they saw end.
A daemon that learned only from its own cycles would forget all of it at
every restart and decide for hours on a cold history (topdrl was trained
with a warm one); slurmdbd keeps that history, so the daemon reads it once
when it starts.

One ``sacct`` query covers the whole look-back (``-X``: allocations, not
steps; ``-a``: every user, which an Operator may read). Its fields are
separated by the ASCII unit separator rather than ``|``, since job names and
comments are free text. GPU counts come from the allocated TRES, which hold
``gres/gpu`` only where slurm.conf's ``AccountingStorageTRES`` lists it:
without it every job would read as having no GPUs, so the caller is told
whether GPUs are tracked (:func:`tracks_gpus`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from slurmrl.errors import SlurmError
from slurmrl.slurm.parse_gres import NO_GPUS, GpuRequest
from slurmrl.slurm.parse_text import SEP, output_lines, parse_show_config, parse_timestamp
from slurmrl.slurm.records import SlurmJob

T = TypeVar("T")

SACCT_FIELDS = (
    "JobID",
    "User",
    "Account",
    "Partition",
    "State",
    "Submit",
    "Start",
    "End",
    "TimelimitRaw",
    "NNodes",
    "AllocTRES",
    "JobName",
    "Comment",
    "AdminComment",
)
DELIMITER = SEP  # the squeue reader's ASCII unit separator: never in a job name a user can type
# Base states of a job that ran and is over (sacct(1), JOB STATE CODES); a
# requeued job (REQUEUED, then PENDING again) has not ended.
ENDED_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "TIMEOUT",
        "CANCELLED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
    }
)


@dataclass(frozen=True)
class Accounted:
    """What one accounting read gave: the ended jobs, oldest end first, and what it could not use."""

    jobs: tuple[SlurmJob, ...]
    unreadable: int = 0  # records with the wrong number of fields or unreadable values
    gpus_tracked: bool = True  # False: no GPU counts in accounting (see :func:`tracks_gpus`)


def sacct_argv(since: float, until: float) -> list[str]:
    """The one ``sacct`` call for jobs that ended between ``since`` and ``until`` (epoch seconds)."""
    return [
        "sacct",
        "-a",
        "-X",
        "-n",
        "-P",
        f"--delimiter={DELIMITER}",
        "-S",
        _slurm_time(since),
        "-E",
        _slurm_time(until),
        "-o",
        ",".join(SACCT_FIELDS),
    ]


def _slurm_time(t: float) -> str:
    """Epoch seconds as the controller's local time, the form ``-S``/``-E`` read."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def parse_tres(text: str) -> dict[str, int]:
    """``cpu=64,gres/gpu=8,node=2`` -> {name: count}; sizes such as ``mem=1G`` and an empty field are left out."""
    out: dict[str, int] = {}
    for part in (text or "").split(","):
        name, sep, value = part.strip().partition("=")
        if sep and value.isdigit():
            out[name.lower()] = int(value)
    return out


def gpus_of_tres(tres: dict[str, int]) -> GpuRequest:
    """The GPUs a TRES list holds: ``gres/gpu``, else the sum of its typed ``gres/gpu:TYPE`` entries."""
    typed = {name.split(":", 1)[1]: n for name, n in tres.items() if name.startswith("gres/gpu:")}
    total = tres.get("gres/gpu", sum(typed.values()))
    if total <= 0:
        return NO_GPUS
    kind = next(iter(typed)) if len(typed) == 1 else ""
    return GpuRequest(total, None, kind, "AllocTRES")


def tracks_gpus(show_config: str) -> bool:
    """Whether ``scontrol show config`` lists ``gres/gpu`` (or a typed one) in ``AccountingStorageTRES``."""
    return tres_has_gpus(parse_show_config(show_config).get("AccountingStorageTRES", "").split(","))


def tres_has_gpus(items: Iterable[str] | None) -> bool:
    """Whether AccountingStorageTRES's items hold ``gres/gpu`` or a typed ``gres/gpu:X``: without
    one, accounting keeps no GPU counts."""
    return any(str(t).strip().lower().startswith("gres/gpu") for t in items or ())


def parse_sacct(text: str, until: float | None = None) -> Accounted:
    """``sacct`` output in :data:`SACCT_FIELDS` order -> the ended jobs that ran, by end time."""
    lines = (line for line in output_lines(text) if line.strip())
    return collect(lines, lambda line: _record(line.split(DELIMITER)), until)


def collect(items: Iterable[T], convert: Callable[[T], SlurmJob | None], until: float | None) -> Accounted:
    """The ended jobs among ``items`` (sacct lines, pyslurm records), oldest end first.

    Jobs that never started (cancelled while pending), that have not ended,
    or that ended after ``until`` are left out (``convert`` returns None for
    the first two); a record that cannot be read is counted, not fatal: one
    odd record must not cost the whole history.
    """
    jobs: list[SlurmJob] = []
    unreadable = 0
    for item in items:
        try:
            job = convert(item)
        except (SlurmError, ValueError, TypeError):
            unreadable += 1
            continue
        if job is None or job.end_time is None or (until is not None and job.end_time > until):
            continue
        jobs.append(job)
    jobs.sort(key=lambda j: (j.end_time or 0.0, j.job_id))
    return Accounted(tuple(jobs), unreadable)


def _record(parts: Sequence[str]) -> SlurmJob | None:
    """One ``sacct`` line as a job record; None for a job that did not run and end."""
    if len(parts) != len(SACCT_FIELDS):
        raise SlurmError(f"{len(parts)} fields, {len(SACCT_FIELDS)} expected")
    f = dict(zip(SACCT_FIELDS, parts, strict=True))
    state = (f["State"].split() or [""])[0].upper()
    start, end = parse_timestamp(f["Start"]), parse_timestamp(f["End"])
    if state not in ENDED_STATES or start is None or end is None:
        return None
    minutes = f["TimelimitRaw"].strip()
    nodes = f["NNodes"].strip()
    return SlurmJob(
        f["JobID"].strip(),
        name=f["JobName"],
        user=f["User"].strip(),
        account=f["Account"].strip(),
        partition=f["Partition"].strip(),
        state=state,
        submit_time=parse_timestamp(f["Submit"]) or start,
        start_time=start,
        end_time=end,
        time_limit=float(minutes) * 60.0 if minutes.isdigit() else None,
        num_nodes=int(nodes) if nodes.isdigit() else None,
        gpus=gpus_of_tres(parse_tres(f["AllocTRES"])),
        comment=f["Comment"],
        admin_comment=f["AdminComment"],
    )
