"""Reading and steering Slurm through its client commands.

One bulk query per kind per snapshot (``squeue`` for all jobs, ``sinfo`` or
``scontrol show nodes`` for all nodes), never one per job: a controller
serving thousands of jobs must not see the daemon as a flood of RPCs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from slurmrl.errors import SlurmError
from slurmrl.slurm.accounting import Accounted, parse_sacct, sacct_argv, tracks_gpus
from slurmrl.slurm.backend import (
    check_comment,
    check_job_id,
    check_job_ids,
    check_nodelist,
    check_prefer,
    check_priority,
    check_site_factor,
    live_cluster,
)
from slurmrl.slurm.elastic import GpuAsk
from slurmrl.slurm.parse_json import parse_nodes_json, parse_squeue_json
from slurmrl.slurm.parse_text import parse_scontrol_jobs, parse_scontrol_nodes
from slurmrl.slurm.run import (
    CommandResult,
    ControllerUnreachable,
    MungeError,
    PartlyRefused,
    RateLimited,
    call,
)
from slurmrl.slurm.snapshot import Snapshot

Runner = Callable[..., CommandResult]


def parse_version(text: str) -> tuple[int, int, int]:
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if m is None:
        raise SlurmError(f"cannot read a Slurm version from '{text.strip()}'")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def json_flag(version: tuple[int, int, int]) -> str:
    """Pin the v0.0.42 shape where the release offers it (24.11 to 26.05); else its default.

    26.05's default (v0.0.45) no longer prints a pending job's ``shared`` (its
    ``--exclusive``); its v0.0.42 plugin still does.
    """
    if (24, 11) <= version[:2] <= (26, 5):
        return "--json=v0.0.42"
    return "--json"


class CliBackend:
    def __init__(
        self,
        *,
        conf: str | Path | None = None,
        mode: str = "json",
        timeout: float = 30,
        env: Mapping[str, str] | None = None,
        runner: Runner = call,
    ) -> None:
        if mode not in ("json", "text"):
            raise SlurmError(f"unknown read mode '{mode}'; use json or text")
        self.conf = conf
        self.mode = mode
        self.timeout = timeout
        # The configured slurm.conf is the one every command reads, reads and writes alike.
        merged = {"SLURM_CONF": str(conf)} if conf else {}
        merged.update(env or {})
        self.env = merged or None
        self._run = runner
        self._version: str | None = None

    def _call(self, *cmd: str) -> CommandResult:
        return self._run(list(cmd), timeout=self.timeout, env=self.env)

    def version(self) -> str:
        if self._version is None:
            out = self._call("sinfo", "--version").stdout
            major, minor, micro = parse_version(out)
            self._version = f"{major}.{minor:02d}.{micro}"
        return self._version

    def _json(self, *cmd: str) -> str:
        flag = json_flag(parse_version(self.version()))
        try:
            return self._call(*cmd, flag).stdout
        except SlurmError as exc:
            if flag == "--json" or "data_parser" not in str(exc).lower():
                raise
            return self._call(*cmd, "--json").stdout  # plugin not built: take the default shape

    def snapshot(self) -> Snapshot:
        version = parse_version(self.version())
        now = time.time()
        if self.mode == "json":
            jobs = parse_squeue_json(self._json("squeue", "--all"))
            if version[:2] < (23, 2):
                nodes = parse_nodes_json(self._json("sinfo"), "sinfo --json")
            else:
                text = self._json("scontrol", "show", "nodes")
                nodes = parse_nodes_json(text, "scontrol show nodes --json")
            source = "cli-json"
        else:
            jobs = parse_scontrol_jobs(self._call("scontrol", "show", "job", "-d", "-o").stdout)
            nodes = parse_scontrol_nodes(self._call("scontrol", "show", "node", "-d", "-o").stdout)
            source = "cli-text"
        cluster, warnings = live_cluster(nodes, self.conf)
        return Snapshot(now, self.version(), nodes, jobs, cluster, source, warnings)

    def finished_jobs(self, since: float, until: float) -> Accounted:
        """Jobs that ran and ended between ``since`` and ``until`` (epoch seconds), from accounting:
        ``scontrol show config`` (are GPUs tracked?) and one ``sacct``."""
        tracked = tracks_gpus(self._call("scontrol", "show", "config").stdout)
        read = parse_sacct(self._call(*sacct_argv(since, until)).stdout, until)
        return replace(read, gpus_tracked=tracked)

    def _update(self, job_id: str, setting: str) -> None:
        self._call("scontrol", "update", f"JobId={check_job_id(job_id)}", setting)

    def update_many(self, job_ids: Sequence[str], name: str, value: object) -> None:
        """One ``scontrol update JobId=a,b,c Field=value`` for several jobs.

        On 22.05 to 26.05 scontrol sends one update per id in the list, goes on
        after a refused one and exits 1 naming each (``<error> for job <id>``;
        src/scontrol/update_job.c, scontrol_update_job). A failure here thus
        says only that *some* ids were refused: the caller retries them one by
        one to learn which.
        """
        try:
            self._call("scontrol", "update", f"JobId={check_job_ids(job_ids)}", setting(name, value))
        except (RateLimited, ControllerUnreachable, MungeError):
            raise  # the rest of the list may not have been sent
        except SlurmError as exc:
            named = refused_ids(exc.stderr, job_ids)
            if named is None:
                raise
            raise PartlyRefused(exc.format(), named) from None

    def requeue(self, job_id: str) -> None:
        """``scontrol requeue``: the running batch job back to the queue, its script run again later."""
        self._call("scontrol", "requeue", check_job_id(job_id))

    def set_site_factor(self, job_id: str, value: int) -> None:
        self._update(job_id, setting("site_factor", value))

    def set_priority(self, job_id: str, value: int) -> None:
        self._update(job_id, setting("priority", value))

    def reset_priority(self, job_id: str) -> None:
        """Hand an explicitly set priority back to the priority plugin, without a hold.

        ``scontrol release`` sends ``Priority=INFINITE``; from an Operator, slurmctld
        takes it on a job that is not held as "clear the direct priority and compute it
        again" (``direct_set_prio = 0; set_job_prio()``; ``_update_job`` in
        src/slurmctld/job_mgr.c, 22.05). A hold first, as Slurm's documentation suggests,
        would reset the job's begin time and, where limits are enforced, its accrue time
        (``_hold_job_rec``): the job would lose its age.
        """
        self._call("scontrol", "release", check_job_id(job_id))

    def set_required_nodes(self, job_id: str, nodelist: Sequence[str] | None) -> None:
        self._update(job_id, setting("nodes", nodelist))

    def set_prefer(self, job_id: str, text: str) -> None:
        """A soft pin: node features Slurm tries before the job's constraint; "" clears it."""
        self._update(job_id, setting("prefer", text))

    def set_gpus(
        self, job_id: str, ask: GpuAsk, pin: tuple[str, object] | None = None, *, version: str | None = None
    ) -> None:
        """Rewrite a pending elastic job's GPU request in one update (see :mod:`slurmrl.slurm.elastic`),
        with its pin (``("nodes", names)`` or ``("prefer", text)``) in the same update.

        ``NumNodes=`` is spelled for the Slurm release (``version``, else asked of sinfo)."""
        settings = ask.settings(parse_version(version or self.version()))
        extra = (setting(*pin),) if pin is not None else ()
        self._call("scontrol", "update", f"JobId={check_job_id(job_id)}", *settings, *extra)

    def set_nice(self, job_id: str, value: int) -> None:
        """Give back a user's --nice (an explicit Priority= clears it)."""
        self._update(job_id, f"Nice={int(value)}")

    def set_admin_comment(self, job_id: str, text: str) -> None:
        self._update(job_id, setting("admin_comment", text))


_REFUSED = re.compile(r"^.+ for job (\S+)$")


def refused_ids(stderr: str, job_ids: Sequence[str]) -> tuple[str, ...] | None:
    """The ids scontrol names as refused (``<error> for job <id>``, one line each:
    scontrol_update_job in src/scontrol/update_job.c, 22.05 and 24.11), or None when any
    line says something else: then nothing is known of the other ids."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    named: list[str] = []
    for line in lines:
        m = _REFUSED.match(line)
        if m is None or m.group(1) not in job_ids:
            return None
        named.append(m.group(1))
    return tuple(named) if named else None


def setting(name: str, value: object) -> str:
    """The checked ``Field=value`` argument of ``scontrol update`` for one daemon field."""
    if name == "site_factor":
        return f"SiteFactor={check_site_factor(value)}"  # type: ignore[arg-type]
    if name == "priority":
        return f"Priority={check_priority(value)}"  # type: ignore[arg-type]
    if name == "nodes":
        return f"ReqNodeList={check_nodelist(value or None)}"  # type: ignore[arg-type]
    if name == "prefer":
        return f"Prefer={check_prefer(str(value or ''))}"
    if name == "admin_comment":
        return f"AdminComment={check_comment(str(value or ''))}"
    raise SlurmError(f"no scontrol setting for field {name!r}")
