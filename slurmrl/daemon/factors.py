"""Each pending job's SiteFactor, nice and whether its priority was set by hand, from ``sprio``.

SiteFactor is in no ``squeue --json`` version and not in ``scontrol show
job``; only ``sprio`` shows it (format ``%S``, "weighted admin priority", whose
weight is 1). Without it the daemon would take every job's factor for 0 and
revert would wipe factors set by an admin or a ``job_submit`` plugin.

An explicitly set priority (``scontrol update Priority=``) shows in ``sprio``
with every factor 0 and a positive total: multifactor skips the factors of
such jobs (checked on Slurm 22.05.8). Jobs that are not yet eligible (begin
time in the future, ...) are not listed by ``sprio``; they get no entry and
the daemon falls back to what the snapshot says.

``sprio`` prints the numeric job id (``%u`` of ``job_id`` in src/sprio/print.c), where
the snapshot names an array task ``ARRAY_TASK`` (what ``scontrol update`` takes): an
array task split off its array has a numeric id of its own. :func:`keyed_like` puts
both on the snapshot's ids, so an array task's SiteFactor and nice are found.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from slurmrl.daemon.config import DaemonConfig
from slurmrl.slurm.backend import SlurmBackend
from slurmrl.slurm.run import CommandFailed, call
from slurmrl.slurm.snapshot import SlurmJob

# %i id, %Y priority, %S site, %N nice, %A age, %B assoc, %F fair-share, %J size, %P partition, %Q QOS
SPRIO_FORMAT = "%i|%Y|%S|%N|%A|%B|%F|%J|%P|%Q"


@dataclass(frozen=True)
class PriorityFactors:
    site_factor: int
    nice: int
    explicit_priority: bool  # priority set by hand, not computed by multifactor


def parse_sprio(text: str) -> dict[str, PriorityFactors]:
    """``sprio -h -o SPRIO_FORMAT`` output -> job id -> factors (unparseable lines are skipped)."""
    out: dict[str, PriorityFactors] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 4 or not parts[0]:
            continue
        try:
            numbers = [int(float(p or 0)) for p in parts[1:]]
        except ValueError:
            continue
        total, site, nice, *rest = numbers
        computed = [site, nice, *rest]
        out[parts[0]] = PriorityFactors(site, nice, total > 1 and not any(computed))
    return out


def read_factors(backend: SlurmBackend, config: DaemonConfig) -> Mapping[str, PriorityFactors]:
    """One ``sprio`` call for every pending job (a backend may answer itself, e.g. a test fake)."""
    own = getattr(backend, "priority_factors", None)
    if own is not None:
        return own()
    env = {"SLURM_CONF": config.slurm.conf} if config.slurm.conf else None
    try:
        text = call(["sprio", "-h", "-o", SPRIO_FORMAT], timeout=config.slurm.timeout, env=env).stdout
    except CommandFailed as exc:
        if "unable to find jobs" in str(exc).lower():  # no pending job at all
            return {}
        raise
    return parse_sprio(text)


def keyed_like(
    factors: Mapping[str, PriorityFactors], jobs: Iterable[SlurmJob]
) -> dict[str, PriorityFactors]:
    """``factors`` (keyed by sprio's numeric ids) keyed by the snapshot's job ids instead.

    A job whose own id is already a key keeps it (a backend answering for itself may key
    by the snapshot's ids); otherwise its numeric ``slurm_id`` is looked up.
    """
    out: dict[str, PriorityFactors] = {}
    for job in jobs:
        found = factors.get(job.job_id)
        if found is None and job.slurm_id is not None:
            found = factors.get(str(job.slurm_id))
        if found is not None:
            out[job.job_id] = found
    return out
