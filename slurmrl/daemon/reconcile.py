"""Making the record agree with what Slurm shows, after a crash, a timeout or a lost state file.

Two situations need reading Slurm back:

* an update saved in the record before it was sent (write-ahead) whose answer
  never came (SIGKILL, OOM kill, ``scontrol`` timeout): the field is
  ``unsure``. If Slurm shows the recorded value it was applied and stays in
  the record; if not, it was not, and the field leaves the record. A value
  that cannot be read (SiteFactor of a job ``sprio`` does not list) stays
  recorded: giving back a value that was never set is harmless, forgetting
  one that was set is an orphan.
* a job in scope carries the daemon's ``slurmrl:`` note but is not in the
  record (state file lost or replaced): the values the note names, where
  Slurm still shows them, are adopted so they can be given back. The values
  from before the daemon are unknown then: SiteFactor 0, no node list,
  multifactor priority, no Prefer, the admin's text before the note; an
  elastic job's own GPU request is in the note (``gpus_orig=``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from slurmrl.daemon.factors import PriorityFactors
from slurmrl.daemon.plan import NOTE_PREFIX, strip_note
from slurmrl.daemon.record import Record, Touched
from slurmrl.errors import SlurmError
from slurmrl.slurm.conf import expand_hostlist
from slurmrl.slurm.elastic import GpuAsk
from slurmrl.slurm.snapshot import SlurmJob

_NOTE_VALUE = re.compile(r"\b(sf|prio|nodes|prefer|gpus_set|gpus_orig)=(\S+)")


def _same_nodes(a: tuple[str, ...] | None, b: tuple[str, ...]) -> bool:
    return a is not None and sorted(a) == sorted(b)


def _confirmed(entry: Touched, name: str, job: SlurmJob, live_sf: int | None) -> bool | None:
    """True: Slurm shows the recorded value; False: it does not; None: cannot tell."""
    if name == "site_factor":
        return None if live_sf is None else live_sf == entry.site_factor
    if name == "priority":
        return None if job.priority is None else job.priority == entry.priority
    if name == "nodes":
        return _same_nodes(entry.nodes, job.required_nodes)
    if name == "prefer":
        return job.prefer == entry.prefer
    if name == "admin_comment":
        return job.admin_comment == entry.admin_comment
    if name == "gpus":
        return entry.gpus is not None and _shows_ask(job, entry.gpus)
    return None


def _ask(text: str) -> GpuAsk | None:
    try:
        return GpuAsk.parse(text)
    except SlurmError:
        return None


def _shows_ask(job: SlurmJob, text: str) -> bool:
    """Whether the job asks for the GPUs per node and the node count of ``text`` (a GpuAsk)."""
    ask = _ask(text)
    return ask is not None and job.gpus.per_node == ask.per_node and (job.num_nodes or 1) == ask.nodes


def settle_unsure(
    record: Record, jobs: Mapping[str, SlurmJob], factors: Mapping[str, PriorityFactors]
) -> list[str]:
    """Resolve every ``unsure`` field against the live jobs; returns one line per decision."""
    notes: list[str] = []
    for jid, entry in list(record.jobs.items()):
        job = jobs.get(jid)
        if not entry.unsure or job is None or not job.is_pending:
            continue  # gone or started: planning forgets it anyway
        f = factors.get(jid)
        live_sf = f.site_factor if f is not None else job.site_factor
        keep: list[str] = []
        changes: dict[str, object] = {}
        for name in entry.unsure:
            ok = _confirmed(entry, name, job, live_sf)
            if ok is None:
                keep.append(name)
                notes.append(f"job {jid}: {name} cannot be read back; kept in the record to give back")
            elif ok:
                notes.append(f"job {jid}: {name} was applied")
            elif name == "admin_comment" and NOTE_PREFIX in (job.admin_comment or ""):
                changes[name] = job.admin_comment  # some note of ours is there: remember the text to strip
                notes.append(f"job {jid}: admin comment differs but holds our note; kept to strip it")
            else:
                changes[name] = None
                notes.append(f"job {jid}: {name} was not applied; dropped from the record")
        record.put(replace(entry, unsure=tuple(keep), **changes))  # type: ignore[arg-type]
    return notes


def adopt_notes(record: Record, scoped: Mapping[str, SlurmJob], now: float) -> list[str]:
    """Record the values named by a ``slurmrl:`` note on a scoped job the record does not know."""
    notes: list[str] = []
    for jid, job in scoped.items():
        text = job.admin_comment or ""
        if jid in record.jobs or NOTE_PREFIX not in text:
            continue
        note = text[text.index(NOTE_PREFIX) :]
        values = dict(_NOTE_VALUE.findall(note))
        fields: dict[str, object] = {
            "admin_comment": text,
            "orig_admin_comment": strip_note(text),
        }
        if "sf" in values and values["sf"].lstrip("-").isdigit() and job.site_factor == int(values["sf"]):
            fields["site_factor"] = int(values["sf"])
        if "prio" in values and values["prio"].isdigit() and job.priority == int(values["prio"]):
            fields["priority"] = int(values["prio"])
        if "nodes" in values:
            try:
                named = tuple(expand_hostlist(values["nodes"]))
            except ValueError:
                named = ()
            if named and _same_nodes(named, job.required_nodes):
                fields["nodes"] = named
        orig_gpus = values.get("gpus_orig", "")
        if "gpus_set" in values and _ask(orig_gpus) is not None and _shows_ask(job, values["gpus_set"]):
            fields["gpus"], fields["orig_gpus"] = values["gpus_set"], orig_gpus
        if "prefer" in values:
            try:
                text = "|".join(sorted(expand_hostlist(values["prefer"])))
            except ValueError:
                text = ""
            if text and job.prefer == text:
                fields["prefer"] = text
        record.put(Touched(job_id=jid, first_touched=now, **fields))  # type: ignore[arg-type]
        notes.append(f"job {jid}: carries a slurmrl note the record did not know; adopted to give back")
    return notes
