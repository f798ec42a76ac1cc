"""From a policy's decisions to the few Slurm updates that enact them.

Pure functions of (snapshot, decisions, record, config, now): nothing here
talks to Slurm, so a cycle can be planned, tested and benchmarked without a
controller, and a dry run is the same plan left unsent.

Safety rules enforced here rather than trusted to policies:

* ordering moves only the additive ``SiteFactor`` within
  ``0..max_site_factor`` (multifactor stays in charge of the rest), or, in
  ``priority`` mode, explicit priorities within
  ``priority_base..priority_base+max_site_factor``;
* a job waiting longer than ``starvation_wait`` is never demoted below the
  value it already has;
* a ``ReqNodeList`` is set only for a job the policy starts now, with exactly
  the job's node count, never over a node list the user asked for, and is
  cleared when the decision changes or after ``placement_hold`` seconds;
* an elastic job's GPU request (``Gres=``/``NumNodes=``) is rewritten only
  for a job the policy starts now, whose comment opts in with ``gpus=MIN-MAX``
  and only to a count in that range, just before its pin; it is given back
  when the decision changes. A start the daemon cannot enact as asked is
  returned in :attr:`CyclePlan.refused`, never dropped without a word;
* at most ``max_changes_per_cycle`` updates, the most urgent first (restores,
  then placements, then ordering by rank); the rest wait for the next cycle
  (what is sent of them is capped again, by Slurm calls and seconds, in ``apply``);
* a long queue is ranked in ``order_bands`` bands that share a value, so one
  ``scontrol update JobId=a,b,c`` sets a whole band.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from slurmrl.cluster.model import Placement
from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.factors import PriorityFactors
from slurmrl.daemon.limits import AccountLimits, grows, limit_problem
from slurmrl.daemon.record import Record, Touched
from slurmrl.policy.view import Decisions
from slurmrl.slurm.backend import MAX_COMMENT
from slurmrl.slurm.conf import compress_hostlist
from slurmrl.slurm.elastic import TAG, GpuAsk, resized_layout
from slurmrl.slurm.snapshot import SlurmJob, Snapshot

NOTE_PREFIX = "slurmrl:"
# Ordering values within this share of max_site_factor of what a job already
# has are left alone: a queue that shifts by one job would otherwise re-rank,
# and re-send, every job behind it on every cycle (our choice).
TOLERANCE_SHARE = 0.01
NOTE_SEPARATOR = " | "
FIELDS = ("site_factor", "priority", "nodes", "prefer", "gpus", "admin_comment")
PIN_FIELDS = ("nodes", "prefer")  # a hard pin (ReqNodeList=) and a soft one (Prefer=)

Value = int | str | tuple[str, ...] | None


@dataclass(frozen=True)
class Change:
    """One ``scontrol update`` of one field of one job.

    ``restore`` marks a change that gives back the value from before the
    daemon (``new`` is then that value; for ``priority`` None means "let
    multifactor compute it again"). ``orig`` is the value to remember as the
    original when this is the daemon's first change of the field.
    """

    job_id: str
    field: str
    old: Value
    new: Value
    reason: str
    restore: bool = False
    orig: Value = None
    block_until: float = 0.0  # placement expiry: do not place this job again before
    # Placement: the job's request (request_key). On a pin, remembered if Slurm refuses
    # it; on a removal, marks the pin as refused (BadConstraints).
    request: str = ""
    # Priority mode: what revert must restore besides the number.
    orig_nice: int = 0
    orig_explicit: bool = False


@dataclass(frozen=True)
class Refusal:
    """A policy's start the daemon does not enact as decided (a GPU count the job cannot
    take): reported, and audited once per job and count."""

    job_id: str
    gpus: int
    reason: str


@dataclass(frozen=True)
class StartPlan:
    """How the daemon enacts one start: the nodes to pin and, for an elastic job whose
    request differs from the placement, the request to set first."""

    names: tuple[str, ...]
    ask: GpuAsk | None = None


@dataclass(frozen=True)
class CyclePlan:
    changes: tuple[Change, ...]
    deferred: int  # at least this many changes over max_changes_per_cycle, left for later cycles
    forget: tuple[str, ...]  # recorded jobs that left the queue: nothing left to revert
    in_scope: int
    ranked: int
    starts: int
    notes: tuple[str, ...] = ()
    jobs_by_state: dict[str, int] = field(default_factory=dict)
    refused: tuple[Refusal, ...] = ()


def site_factor_for(rank: int, count: int, top: int, bands: int = 0) -> int:
    """Rank 0 gets ``top``, the last rank 0, evenly spaced and rounded to integers.

    ``bands`` > 0 and fewer than ``count``: ranks go in ``bands`` runs of consecutive ranks
    that share one value, so each run is one Slurm call for many jobs. The policy's order
    holds exactly between bands (at most ``top + 1`` bands, so their values differ); within
    one band Slurm's other factors (age, fair-share, ...) order the jobs.
    """
    bands = min(bands, top + 1)
    if 0 < bands < count:
        return site_factor_for(rank * bands // count, bands, top)
    if count <= 1:
        return top
    span = count - 1
    return (2 * top * (span - rank) + span) // (2 * span)


def band_step(count: int, top: int, bands: int) -> int:
    """The largest gap between neighbouring bands' values (0 when each rank has its own).

    A job that only moved to the next band is left alone: when every rank shifts (old jobs
    start, new ones arrive) half of each band would otherwise move over and be sent again.
    """
    bands = min(bands, top + 1)
    if not 1 < bands < count:
        return 0
    return -(-top // (bands - 1))


def strip_note(text: str) -> str:
    """An admin comment without the daemon's note, i.e. what an admin wrote."""
    text = text or ""
    if text.startswith(NOTE_PREFIX):
        return ""
    head, sep, _ = text.partition(NOTE_SEPARATOR + NOTE_PREFIX)
    return head if sep else text


def compose_comment(orig: str, note: str) -> str:
    return f"{orig}{NOTE_SEPARATOR}{note}" if orig else note


def make_note(
    policy: str,
    site_factor: int | None,
    priority: int | None,
    nodes: tuple[str, ...] | None,
    prefer: tuple[str, ...] | None = None,
    gpus: str | None = None,
    gpus_orig: str = "",
) -> str:
    parts = [NOTE_PREFIX]
    if site_factor is not None:
        parts.append(f"sf={site_factor}")
    if priority is not None:
        parts.append(f"prio={priority}")
    for key, names in (("nodes", nodes), ("prefer", prefer)):
        if names:
            try:
                parts.append(f"{key}={compress_hostlist(names)}")
            except ValueError:
                parts.append(f"{key}={','.join(names)}")
    if gpus:
        parts.append(f"gpus_set={gpus}")
        if gpus_orig:
            parts.append(f"gpus_orig={gpus_orig}")
    parts.append(f"policy={policy}")
    return " ".join(parts)


def prefer_nodes(text: str | None) -> tuple[str, ...] | None:
    """The node names of a daemon-written ``Prefer=`` (``node01|node02``)."""
    return tuple(sorted(n for n in text.split("|") if n)) if text else None


def unpin(entry: Touched, reason: str, **kw: object) -> Change:
    """The change that takes back the daemon's pin, of whichever kind it set."""
    jid = entry.job_id
    if entry.nodes is not None:
        return Change(jid, "nodes", entry.nodes, entry.orig_nodes, reason, restore=True, **kw)  # type: ignore[arg-type]
    return Change(jid, "prefer", entry.prefer, entry.orig_prefer, reason, restore=True, **kw)  # type: ignore[arg-type]


# What a job's request is made of, for "pin refused: not again until the request
# changes": everything the user (or Slurm, for a pending job) may change, except
# what the daemon itself writes and what moves on its own.
_VOLATILE = frozenset(
    {
        "state",
        "reason",
        "priority",
        "site_factor",
        "admin_comment",
        "required_nodes",
        "nodes",
        "prefer",
        "gpu_alloc",
        "start_time",
        "state_flags",
        "held",
    }
)
REFUSED_REASONS = frozenset({"BadConstraints"})  # Slurm's reasons for a pin it cannot honour


def request_key(job: SlurmJob) -> str:
    """A stable text of the job's request; a refused pin is retried only when it changes."""
    parts = [
        f"{name}={getattr(job, name)!r}" for name in sorted(job.__dataclass_fields__) if name not in _VOLATILE
    ]
    return "|".join(parts)


def restore_changes(entry: Touched, job: SlurmJob | None, reason: str) -> list[Change]:
    """Changes that give back every value the daemon set on one job."""
    out: list[Change] = []
    jid = entry.job_id
    if entry.site_factor is not None:
        out.append(
            Change(jid, "site_factor", entry.site_factor, entry.orig_site_factor, reason, restore=True)
        )
    if entry.priority is not None:
        back = entry.orig_priority if entry.orig_explicit_priority else None
        out.append(
            Change(
                jid,
                "priority",
                entry.priority,
                back,
                reason,
                restore=True,
                orig_nice=entry.orig_nice,
                orig_explicit=entry.orig_explicit_priority,
            )
        )
    if entry.nodes is not None:
        out.append(Change(jid, "nodes", entry.nodes, entry.orig_nodes, reason, restore=True))
    if entry.prefer is not None:
        out.append(Change(jid, "prefer", entry.prefer, entry.orig_prefer, reason, restore=True))
    if entry.gpus is not None:
        out.append(Change(jid, "gpus", entry.gpus, entry.orig_gpus, reason, restore=True))
    if entry.admin_comment is not None:
        live = job.admin_comment if job is not None else entry.admin_comment
        # Someone else edited the comment since: keep their text, drop only our note.
        back = entry.orig_admin_comment if live == entry.admin_comment else strip_note(live)
        if back != live or job is None:
            out.append(Change(jid, "admin_comment", live, back, reason, restore=True))
    return out


def _clean_starts(
    decisions: Decisions,
    snapshot: Snapshot,
    scoped: dict[str, SlurmJob],
    record: Record,
    config: DaemonConfig,
    now: float,
    notes: list[str],
    refused: list[Refusal],
    limits: AccountLimits | None = None,
) -> dict[str, StartPlan]:
    cluster = snapshot.cluster
    desired: dict[str, StartPlan] = {}
    for start in decisions.starts:
        job = scoped.get(start.job_id)
        if job is None or not job.eligible:
            continue
        entry = record.get(start.job_id)
        if entry is not None and entry.placement_blocked_until > now:
            continue
        if entry is not None and entry.pin_refused and entry.pin_refused == request_key(job):
            continue  # Slurm refused a pin for this very request: not again until it changes
        if job.required_nodes and (entry is None or entry.nodes is None):
            continue  # the user chose the nodes; never override them
        names = tuple(sorted(cluster.nodes[a.node].name for a in start.placement.allocs))
        if not names:
            continue
        if entry is not None and entry.gpus is not None and job.gpu_range is None:
            why = f"its {TAG}= tag is gone or no longer honoured; its own GPU request is given back"
            refused.append(Refusal(job.job_id, start.placement.num_gpus, why))
            continue  # the user withdrew the opt-in: not started on the daemon's request
        ask, why = _resize(job, start.placement, limits)
        if why:
            refused.append(Refusal(job.job_id, start.placement.num_gpus, why))
            continue
        want = ask.nodes if ask is not None else (job.num_nodes or 1)
        if len(names) != want:
            notes.append(
                f"job {job.job_id}: placement on {len(names)} node(s) but the job asks for {want}; not pinned"
            )
            continue
        desired[start.job_id] = StartPlan(names, ask)
    return desired


def _resize(
    job: SlurmJob, placement: Placement, limits: AccountLimits | None = None
) -> tuple[GpuAsk | None, str]:
    """``(request to set, "")`` for a start the job can take (None: as it asks now), or
    ``(None, why not)``. Only a job whose comment opts in is resized, within its range."""
    count = placement.num_gpus
    tag = job.elastic
    if tag is None or tag.gpu_range is None:
        if count == job.gpus.total:
            return None, ""
        why = (
            f"has no {TAG}=MIN-MAX tag"
            if tag is None
            else f"its tag {tag.text} is not honoured ({tag.problem})"
        )
        return (
            None,
            f"policy starts it on {count} GPUs but it asks for {job.gpus.total} and {why}; not enacted",
        )
    low, high = tag.gpu_range
    if not low <= count <= high:
        return None, f"policy starts it on {count} GPUs, outside its range {tag.text}; not enacted"
    per_node = {len(a.gpus) for a in placement.allocs}
    if len(per_node) != 1:
        return None, (
            f"policy starts it on {count} GPUs spread unevenly over {len(placement.allocs)} nodes, "
            "which a per-node GPU request cannot express; not enacted"
        )
    nodes = len(placement.allocs)
    per = per_node.pop()
    if per == job.gpus.per_node and nodes == (job.num_nodes or 1):
        return None, ""
    current = job.gpu_ask
    if current is None:  # the tag is honoured only for GPUs asked per node
        return None, f"policy starts it on {count} GPUs but its request is not per node; not enacted"
    (tasks, per_task_node, cpus), why = resized_layout(current, per, nodes)
    if why:
        return None, f"policy starts it on {count} GPUs but {why}; not enacted"
    max_nodes = nodes if job.max_nodes else None
    ask = GpuAsk(per, nodes, job.gpus.gpu_type, max_nodes, cpus, tasks, per_task_node)
    if limits is not None and grows(current, ask):
        # An Operator's update bypasses the job's accounting limits for good (limits.py).
        if limits.error:
            why = f"its accounting limits cannot be read ({limits.error})"
        else:
            why = limit_problem(job, ask, limits.for_job(job))
            why = f"it would exceed {why}, which the daemon's update would bypass" if why else ""
        if why:
            return None, f"policy starts it on {count} GPUs ({ask.text}) but {why}; not enacted"
    return ask, ""


def _request_changes(
    starts: Mapping[str, StartPlan], enacted: set[str], scoped: Mapping[str, SlurmJob], record: Record
) -> list[Change]:
    """Elastic jobs: the GPU request each enacted start needs, and the user's request given
    back where the daemon's is in place but the start is no longer enacted."""
    out: list[Change] = []
    for jid in (j for j in starts if j in enacted):
        ask, job, entry = starts[jid].ask, scoped[jid], record.get(jid)
        now_ask = job.gpu_ask
        if ask is None or now_ask is None:
            continue
        orig = entry.orig_gpus if entry is not None and entry.gpus is not None else now_ask.text
        why = f"policy starts it on {ask.total} GPUs ({job.elastic.text if job.elastic else TAG})"
        out.append(Change(jid, "gpus", now_ask.text, ask.text, why, orig=orig, request=request_key(job)))
    for jid, entry in record.jobs.items():
        if entry.gpus is not None and jid in scoped and jid not in enacted:
            why = "start no longer enacted; the job's own GPU request given back"
            out.append(Change(jid, "gpus", entry.gpus, entry.orig_gpus, why, restore=True))
    return out


def _pin_kind(
    snapshot: Snapshot, job: SlurmJob, entry: Touched | None, names: tuple[str, ...], config: DaemonConfig
) -> tuple[str, Value, str]:
    """``(field, value, reason)`` of the pin for a start: ``nodes`` (ReqNodeList=),
    ``prefer`` (Prefer=), or ``""`` for none, the reason saying why (it is audited).

    ``pin = "prefer"`` falls back to the hard pin where Prefer cannot name nodes
    (the nodes lack their own names as features, or Slurm is older than 22.05),
    and to no pin where the user gave a ``--prefer`` of their own: overriding
    it with a ReqNodeList would turn their wish into the daemon's command.
    """
    if config.pin != "prefer":
        return "nodes", names, "policy starts it now"
    support = snapshot.pin_support
    own = entry.orig_prefer if entry is not None and entry.prefer is not None else job.prefer
    value = support.prefer_value(replace(job, prefer=own), names)  # the Prefer we set is not the user's
    if value is not None:
        return "prefer", value, "policy starts it now (soft pin)"
    if own:
        return "", None, f"has its own --prefer={own}; soft pin not set, and no hard pin over it"
    if not support.prefer:
        why = f"Slurm {snapshot.version} has no Prefer="
    else:
        why = "Prefer= names features and the nodes do not carry their own names as features"
    return "nodes", names, f"policy starts it now (hard pin: {why})"


class Groups:
    """The cycle's changes per job, with the job's urgency (the lowest key its changes
    carry: give-backs, then placements, then ordering by rank); notes are added per job
    when the groups are flattened."""

    def __init__(self) -> None:
        self.by_job: dict[str, tuple[tuple[int, int], list[Change]]] = {}

    def add(self, key: tuple[int, int], change: Change) -> None:
        old_key, changes = self.by_job.get(change.job_id, (key, []))
        changes.append(change)
        self.by_job[change.job_id] = (min(old_key, key), changes)

    def touch(self, job_id: str, key: tuple[int, int]) -> None:
        """A job with no field change whose note must be written again."""
        self.by_job[job_id] = (key, [])

    def __contains__(self, job_id: str) -> bool:
        return job_id in self.by_job

    def __len__(self) -> int:
        return len(self.by_job)

    def in_order(self) -> list[tuple[str, list[Change]]]:
        return [(jid, ch) for jid, (_, ch) in sorted(self.by_job.items(), key=lambda item: item[1][0])]


def plan_cycle(
    snapshot: Snapshot,
    decisions: Decisions,
    scoped: dict[str, SlurmJob],
    record: Record,
    config: DaemonConfig,
    now: float,
    *,
    write_notes: bool = True,
    factors: Mapping[str, PriorityFactors] | None = None,
    limits: AccountLimits | None = None,
) -> CyclePlan:
    """The changes for one cycle. ``write_notes`` False: no AdminComment (the account
    is only Operator); ``factors``: each job's nice and explicit priority (from sprio);
    ``limits``: the accounting limits a grow of an elastic job is checked against
    (None: not checked).

    Stages: give back what left the scope, placement, ordering, stale notes, then the
    budget (notes composed only for the jobs that fit)."""
    jobs = {j.job_id: j for j in snapshot.jobs}
    notes: list[str] = []
    refused: list[Refusal] = []
    groups = Groups()
    forget = left_scope(record, jobs, scoped, groups)
    starts = _clean_starts(decisions, snapshot, scoped, record, config, now, notes, refused, limits)
    placement_changes(snapshot, starts, scoped, record, config, now, groups, notes)
    ranked = rank_order(decisions, scoped)
    overflow = ordering_changes(ranked, scoped, record, config, now, factors or {}, groups)
    if write_notes:
        stale_notes(record, scoped, ranked, groups)
    flat, deferred = flatten(groups, jobs, record, config, write_notes, notes)
    states = Counter(j.state for j in snapshot.jobs)
    return CyclePlan(
        changes=tuple(flat),
        deferred=deferred + overflow,
        forget=tuple(forget),
        in_scope=len(scoped),
        ranked=len(ranked),
        starts=len(decisions.starts),
        notes=tuple(notes),
        jobs_by_state={(state.lower() or "unknown"): n for state, n in states.items()},
        refused=tuple(refused),
    )


def left_scope(
    record: Record, jobs: Mapping[str, SlurmJob], scoped: Mapping[str, SlurmJob], groups: Groups
) -> list[str]:
    """Recorded jobs that left the queue (returned: forgotten, nothing to give back) or
    the scope (their values given back first of all)."""
    forget: list[str] = []
    for jid, entry in record.jobs.items():
        job = jobs.get(jid)
        if job is None or not job.is_pending:
            forget.append(jid)  # started, ended or purged: its queue settings no longer matter
        elif jid not in scoped:
            for ch in restore_changes(entry, job, "left the daemon's scope (opt-out or scope change)"):
                groups.add((0, 0), ch)
    return forget


def placement_changes(
    snapshot: Snapshot,
    starts: Mapping[str, StartPlan],
    scoped: Mapping[str, SlurmJob],
    record: Record,
    config: DaemonConfig,
    now: float,
    groups: Groups,
    notes: list[str],
) -> None:
    """Pin the jobs the policy starts now, take stale pins back, and rewrite (or give back)
    elastic jobs' GPU requests next to their pins."""
    desired = {jid: plan.names for jid, plan in starts.items()}
    kinds = {
        jid: _pin_kind(snapshot, scoped[jid], record.get(jid), names, config)
        for jid, names in desired.items()
    }
    held = unpin_stale(record, scoped, desired, kinds, config, now, groups)
    enacted = {jid for jid in starts if jid not in held and kinds[jid][0]}
    for ch in _request_changes(starts, enacted, scoped, record):
        groups.add((0, 1) if ch.restore else (1, 0), ch)  # before the job's pin, in the same group
    for jid, names in desired.items():
        change = _pin_change(scoped[jid], record.get(jid), names, kinds[jid])
        if isinstance(change, str):
            notes.append(change)
        else:
            groups.add((1, 0), change)


def unpin_stale(
    record: Record,
    scoped: Mapping[str, SlurmJob],
    desired: dict[str, tuple[str, ...]],
    kinds: Mapping[str, tuple[str, Value, str]],
    config: DaemonConfig,
    now: float,
    groups: Groups,
) -> set[str]:
    """Pins to take back (refused by Slurm, no longer decided, expired, of another kind);
    ``desired`` loses the jobs already pinned as decided. Returns the starts held back."""
    held: set[str] = set()  # starts not enacted this cycle: their pin is taken back
    for jid, entry in record.jobs.items():
        pinned = entry.pinned
        if pinned is None or jid not in scoped:
            continue
        want = desired.get(jid)
        job = scoped[jid]
        kind = "nodes" if entry.nodes is not None else "prefer"
        if job.reason in REFUSED_REASONS:
            # The pin cannot be honoured: remove it once, and not again for this request.
            desired.pop(jid, None)
            held.add(jid)
            why = f"Slurm marks the pin {job.reason}; not pinned again until the request changes"
            groups.add((0, 1), unpin(entry, why, request=request_key(job)))
        elif want is None:
            groups.add((0, 1), unpin(entry, "policy no longer starts it now"))
        elif entry.nodes_since is not None and now - entry.nodes_since > config.placement_hold:
            why = f"did not start within placement_hold={config.placement_hold:g}s"
            groups.add((0, 1), unpin(entry, why, block_until=now + config.placement_hold))
            del desired[jid]
            held.add(jid)
        elif kinds[jid][0] != kind:
            groups.add(
                (0, 1), unpin(entry, f"pin kind changed to {kinds[jid][0]}")
            )  # pinned again next cycle
            del desired[jid]
        elif tuple(sorted(pinned)) == want:
            del desired[jid]
    return held


def _pin_change(
    job: SlurmJob, entry: Touched | None, names: tuple[str, ...], kind: tuple[str, Value, str]
) -> Change | str:
    """The pin for one start, or the note saying why there is none."""
    jid = job.job_id
    field_name, value, why = kind
    if field_name == "":
        return f"job {jid}: {why}"
    if field_name == "prefer":
        old_p = entry.prefer if entry is not None and entry.prefer is not None else job.prefer
        return Change(jid, "prefer", old_p, value, why, orig=job.prefer, request=request_key(job))
    old = entry.nodes if entry is not None and entry.nodes is not None else job.required_nodes
    return Change(jid, "nodes", old, names, why, orig=job.required_nodes, request=request_key(job))


def rank_order(decisions: Decisions, scoped: Mapping[str, SlurmJob]) -> list[str]:
    """The eligible jobs in the policy's order, those it left out after them (queue order)."""
    eligible = [jid for jid, j in scoped.items() if j.eligible]
    eligible_set = set(eligible)
    ranked: list[str] = []
    seen: set[str] = set()
    for jid in decisions.order:
        if jid in eligible_set and jid not in seen:
            ranked.append(jid)
            seen.add(jid)
    ranked.extend(jid for jid in eligible if jid not in seen)
    return ranked


def ordering_changes(
    ranked: list[str],
    scoped: Mapping[str, SlurmJob],
    record: Record,
    config: DaemonConfig,
    now: float,
    factors: Mapping[str, PriorityFactors],
    groups: Groups,
) -> int:
    """Rank -> bounded site factor (or explicit priority), for the jobs that fit the
    change budget; returns how many did not fit (counted, not built)."""
    count = len(ranked)
    top = config.max_site_factor
    tolerance = max(int(top * TOLERANCE_SHARE), band_step(count, top, config.order_bands))
    overflow = 0
    for rank, jid in enumerate(ranked):
        target = site_factor_for(rank, count, top, config.order_bands)
        change = _order_change(scoped[jid], record.jobs.get(jid), rank, count, target, tolerance, config, now)
        if change is None:
            continue
        if len(groups) >= config.max_changes_per_cycle and jid not in groups:
            overflow += 1  # every group holds at least one change: this one cannot fit
            continue
        if change.field == "priority":
            f = factors.get(jid)
            change = replace(
                change, orig_nice=f.nice if f else 0, orig_explicit=bool(f and f.explicit_priority)
            )
        groups.add((2, rank), change)
    return overflow


def _order_change(
    job: SlurmJob,
    entry: Touched | None,
    rank: int,
    count: int,
    target: int,
    tolerance: int,
    config: DaemonConfig,
    now: float,
) -> Change | None:
    """One job's ordering change, or None when what it has is within ``tolerance``.

    What Slurm shows wins over what the record says was set: a controller restarted from
    an older saved state loses values the daemon applied. A starving job is never demoted.
    """
    starving = job.submit_time < now - config.starvation_wait
    if config.mode == "site_factor":
        recorded = entry.site_factor if entry is not None else None
        have: int | None = job.site_factor if job.site_factor is not None else (recorded or 0)
        value, field_name, orig = target, "site_factor", job.site_factor or 0
    else:
        have = job.priority if job.priority is not None else (entry.priority if entry is not None else None)
        value, field_name, orig = config.priority_base + target, "priority", job.priority
    demote_blocked = starving and have is not None and value < have
    if demote_blocked:
        value = have  # type: ignore[assignment]
    if have is not None and abs(value - have) <= tolerance and not (rank == 0 and value != have):
        return None
    why = f"rank {rank + 1}/{count}" + (
        "; waited over starvation_wait, not demoted" if demote_blocked else ""
    )
    return Change(job.job_id, field_name, have, value, why, orig=orig)


def stale_notes(record: Record, scoped: Mapping[str, SlurmJob], ranked: list[str], groups: Groups) -> None:
    """Jobs without a field change this cycle whose note is missing or stale (a comment
    update deferred or refused earlier, or edited by someone): their note is written again."""
    rank_of = {jid: r for r, jid in enumerate(ranked)}
    for jid, entry in record.jobs.items():
        if jid in groups or jid not in scoped:
            continue
        stale = entry.note_stale or (entry.admin_comment is None and entry.changed_anything)
        if stale or (entry.admin_comment is not None and scoped[jid].admin_comment != entry.admin_comment):
            groups.touch(jid, (2, rank_of.get(jid, len(ranked))))


def flatten(
    groups: Groups,
    jobs: Mapping[str, SlurmJob],
    record: Record,
    config: DaemonConfig,
    write_notes: bool,
    notes: list[str],
) -> tuple[list[Change], int]:
    """The changes, most urgent job first, each job's note after its changes, cut at the
    change budget; returns them and how many were left out. Notes are composed only for
    the jobs that fit: a 10,000-job queue reranked at once must not cost 10,000 notes."""
    budget = config.max_changes_per_cycle
    flat: list[Change] = []
    deferred = 0
    for jid, changes in groups.in_order():
        if len(flat) >= budget:
            deferred += len(changes)
            continue
        job = jobs.get(jid)
        if job is not None and write_notes:
            comment = _comment_change(job, record.get(jid), changes, config)
            if comment is not None and len(comment.new or "") > MAX_COMMENT:  # type: ignore[arg-type]
                notes.append(f"job {jid}: audit note would exceed {MAX_COMMENT} characters; left out")
            elif comment is not None:
                changes = [*changes, comment]
        flat.extend(changes)
    return flat[:budget], deferred + max(0, len(flat) - budget)


def _after(entry: Touched | None, changes: Iterable[Change], name: str) -> Value:
    value: Value = getattr(entry, name) if entry is not None else None
    for ch in changes:
        if ch.field == name:
            value = None if ch.restore else ch.new
    return value


def _orig_gpus(entry: Touched | None, changes: Iterable[Change]) -> str:
    """The user's GPU request from before the daemon, for the note (revert's source if the record is lost)."""
    if entry is not None and entry.gpus is not None:
        return entry.orig_gpus
    return next((str(ch.orig or "") for ch in changes if ch.field == "gpus" and not ch.restore), "")


def _comment_change(
    job: SlurmJob, entry: Touched | None, changes: list[Change], config: DaemonConfig
) -> Change | None:
    live = job.admin_comment or ""
    if entry is not None and entry.admin_comment is not None and live == entry.admin_comment:
        orig = entry.orig_admin_comment
    else:
        orig = strip_note(live)
    sf = _after(entry, changes, "site_factor")
    prio = _after(entry, changes, "priority")
    nodes = _after(entry, changes, "nodes")
    prefer = prefer_nodes(_after(entry, changes, "prefer"))  # type: ignore[arg-type]
    gpus = _after(entry, changes, "gpus")
    if sf is None and prio is None and nodes is None and prefer is None and gpus is None:
        if entry is not None and entry.admin_comment is not None and live != orig:
            return Change(job.job_id, "admin_comment", live, orig, "daemon settings removed", restore=True)
        return None
    note = make_note(
        config.policy_label,
        sf,
        prio,
        nodes,
        prefer,
        gpus,
        _orig_gpus(entry, changes),  # type: ignore[arg-type]
    )
    text = compose_comment(orig, note)
    if text == live:
        return None
    return Change(job.job_id, "admin_comment", live, text, "audit note", orig=orig)
