"""``slurmrl daemon check``: what must hold before the daemon may run.

The daemon steers through multifactor's SiteFactor; under another priority
plugin its changes would do nothing (or, with a site-factor plugin, be
overwritten every priority recalculation), so these are checked, not assumed.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass

from slurmrl.daemon.config import DaemonConfig
from slurmrl.daemon.history import read_earlier
from slurmrl.errors import SlurmError
from slurmrl.slurm.backend import SlurmBackend
from slurmrl.slurm.parse_text import parse_show_config
from slurmrl.slurm.run import call
from slurmrl.slurm.snapshot import PinSupport, Snapshot


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str


def slurm_config(config: DaemonConfig) -> dict[str, str]:
    """``scontrol show config`` as a dict (keys as Slurm prints them)."""
    out = call(["scontrol", "show", "config"], timeout=config.slurm.timeout, env=_env(config)).stdout
    return parse_show_config(out)


def priority_checks(values: dict[str, str], mode: str) -> list[CheckResult]:
    out: list[CheckResult] = []
    ptype = values.get("PriorityType", "")
    out.append(
        CheckResult(
            "PriorityType",
            ptype == "priority/multifactor",
            ptype or "(not reported)"
            if ptype == "priority/multifactor"
            else f"{ptype or '(not reported)'}; set PriorityType=priority/multifactor in slurm.conf",
        )
    )
    plugin = values.get("PrioritySiteFactorPlugin", "")
    has_plugin = bool(plugin) and plugin.lower() not in ("(null)", "none", "")
    if mode == "site_factor":
        out.append(
            CheckResult(
                "PrioritySiteFactorPlugin",
                not has_plugin,
                "not set"
                if not has_plugin
                else f"{plugin}: it recomputes SiteFactor and would overwrite the daemon's values; remove it",
            )
        )
    return out


def _env(config: DaemonConfig) -> dict[str, str] | None:
    return {"SLURM_CONF": config.slurm.conf} if config.slurm.conf else None


def admin_level(values: dict[str, str], config: DaemonConfig, uid: int | None = None) -> CheckResult:
    """The account's Slurm admin level, as far as it can be learnt without writing anything.

    root and SlurmUser are always Administrator (slurmctld's
    validate_super_user). Otherwise the level lives in slurmdbd
    (``sacctmgr show user``); without slurmdbd it cannot be read, and the
    daemon learns it from the first refusal instead.
    """
    uid = os.getuid() if uid is None else uid
    name = pwd.getpwuid(uid).pw_name if uid >= 0 else "?"
    slurm_user = values.get("SlurmUser", "").split("(")[0].strip()
    if uid == 0 or name == slurm_user:
        return CheckResult("admin level", True, f"Administrator ({name} is root or SlurmUser)")
    try:
        out = call(
            ["sacctmgr", "-n", "-P", "show", "user", name, "format=AdminLevel"],
            timeout=config.slurm.timeout,
            env=_env(config),
        ).stdout.strip()
    except SlurmError as exc:
        return CheckResult(
            "admin level",
            True,
            f"warning: unknown for {name} (sacctmgr: {exc}); ordering and placement need Operator, "
            "notes (AdminComment) Administrator",
        )
    level = out.splitlines()[0].strip() if out else "None"
    if level.lower() == "administrator":
        return CheckResult("admin level", True, f"Administrator ({name})")
    if level.lower() == "operator":
        return CheckResult(
            "admin level",
            True,
            f"Operator ({name}): ordering and placement work; audit notes (AdminComment need "
            "Administrator) will be skipped",
        )
    return CheckResult(
        "admin level",
        False,
        f"{level or 'None'} ({name}): the daemon needs at least Operator "
        f"(sacctmgr modify user {name} set adminlevel=operator)",
    )


def pin_check(config: DaemonConfig, pins: PinSupport) -> CheckResult:
    """Which pin the daemon will write for a placement: ReqNodeList= (hard) or Prefer= (soft)."""
    if config.pin != "prefer":
        return CheckResult("pins", True, 'hard: ReqNodeList= (pin = "required")')
    if pins.soft:
        return CheckResult(
            "pins",
            True,
            "soft: Prefer= naming the chosen nodes as features (each node carries its name as a "
            "feature); jobs with their own --prefer are not pinned",
        )
    why = (
        "this Slurm has no Prefer= (22.05 or later)"
        if not pins.prefer
        else "not every node carries its own name as a feature (e.g. Feature=node01 in slurm.conf)"
    )
    return CheckResult(
        "pins", True, f'warning: pin = "prefer" but {why}; hard pins (ReqNodeList=) will be used'
    )


def preempt_check(config: DaemonConfig, values: dict[str, str]) -> CheckResult:
    """Whether the jobs a preemptive policy stops can be requeued: Slurm's JobRequeue default
    (0: only jobs submitted with --requeue may be; 1: every batch job but --no-requeue ones)."""
    if config.preempt == "off":
        return CheckResult("preemption", True, 'off (preempt = "off"): preemptive policies are refused')
    cap = f"scontrol requeue, at most {config.max_preemptions_per_cycle} a cycle"
    if values.get("JobRequeue", "1").strip() == "0":
        return CheckResult(
            "preemption",
            True,
            f"warning: {cap}, but JobRequeue=0: Slurm refuses to requeue jobs not submitted with --requeue",
        )
    return CheckResult(
        "preemption", True, f"{cap} (JobRequeue=1: batch jobs not submitted with --no-requeue)"
    )


def history_check(config: DaemonConfig, backend: SlurmBackend, snapshot: Snapshot) -> CheckResult:
    """What the daemon will read back from accounting at start; a cold start is a warning, not a failure."""
    if config.history_days <= 0:
        return CheckResult("history", True, "off (history_days = 0): the daemon starts cold")
    earlier = read_earlier(backend, config.history_days, snapshot)
    if earlier.problem:
        return CheckResult("history", True, f"warning: the daemon will start cold: {earlier.problem}")
    odd = f" ({earlier.unreadable} records unreadable)" if earlier.unreadable else ""
    return CheckResult(
        "history", True, f"{len(earlier.jobs)} ended jobs of the last {config.history_days:g} days{odd}"
    )


def run_checks(config: DaemonConfig) -> list[CheckResult]:
    from slurmrl.daemon.loop import load_policy, make_backend
    from slurmrl.errors import SlurmrlError

    results: list[CheckResult] = [CheckResult("config", True, config.source or "(in memory)")]
    try:
        policy = load_policy(config)
        results.append(CheckResult("policy", True, f"{config.policy_label} ({policy.name})"))
    except SlurmrlError as exc:
        results.append(CheckResult("policy", False, exc.format()))
    try:
        backend = make_backend(config)
        version = backend.version()
        snap = backend.snapshot()
        pending = len(snap.pending)
        results.append(
            CheckResult(
                "slurm",
                True,
                f"Slurm {version} via {config.backend}: {len(snap.nodes)} nodes, {len(snap.jobs)} jobs "
                f"({pending} pending)",
            )
        )
        for w in snap.warnings:
            results.append(CheckResult("topology", True, f"warning: {w}"))
        results.append(pin_check(config, snap.pin_support))
        results.append(history_check(config, backend, snap))
        values = slurm_config(config)
        results.extend(priority_checks(values, config.mode))
        results.append(preempt_check(config, values))
        results.append(admin_level(values, config))
    except SlurmError as exc:
        results.append(CheckResult("slurm", False, exc.format()))
    except SlurmrlError as exc:
        results.append(CheckResult("slurm", False, exc.format()))
    return results
