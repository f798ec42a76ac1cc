"""``slurmrl daemon check``: what must hold before the daemon may run.

The daemon steers through multifactor's SiteFactor; under another priority
plugin its changes would do nothing (or, with a site-factor plugin, be
overwritten every priority recalculation), so these are checked, not assumed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurmrl.daemon.config import DaemonConfig
from slurmrl.errors import SlurmError
from slurmrl.slurm.run import call


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str


def slurm_config(config: DaemonConfig) -> dict[str, str]:
    """``scontrol show config`` as a dict (keys as Slurm prints them)."""
    env = {"SLURM_CONF": config.slurm.conf} if config.slurm.conf else None
    out = call(["scontrol", "show", "config"], timeout=config.slurm.timeout, env=env).stdout
    values: dict[str, str] = {}
    for line in out.splitlines():
        m = re.match(r"^(\w+)\s*=\s*(.*)$", line.strip())
        if m:
            values.setdefault(m.group(1), m.group(2).strip())
    return values


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
        results.extend(priority_checks(slurm_config(config), config.mode))
    except SlurmError as exc:
        results.append(CheckResult("slurm", False, exc.format()))
    except SlurmrlError as exc:
        results.append(CheckResult("slurm", False, exc.format()))
    return results
