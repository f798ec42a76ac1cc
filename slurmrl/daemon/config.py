"""The daemon's one TOML file, checked whole before anything touches Slurm.

An admin fixing a config should see every mistake in one run, each named by
its key (``[scope].partitions``), not one error per restart; so the checks
collect problems and raise a single :class:`ConfigError` listing them all.
Relative paths are taken relative to the config file, so a config and its
state file can move together.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slurmrl.errors import ConfigError, SlurmrlError
from slurmrl.slurm.backend import MAX_PRIORITY, MAX_SITE_FACTOR

DEFAULT_CONFIG = "/etc/slurmrl/daemon.toml"
MODES = ("site_factor", "priority")
LOG_LEVELS = ("debug", "info", "warning", "error")
BACKENDS = ("cli", "pyslurm")
PINS = ("required", "prefer")  # ReqNodeList= (hard) or Prefer= (soft) for a placement
PREEMPT = ("off", "requeue")  # a preemptive policy's stops: refused, or enacted as scontrol requeue


@dataclass(frozen=True)
class ScopeConfig:
    partitions: tuple[str, ...] = ()  # empty = every partition
    qos: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    opt_out_keyword: str = "slurmrl=off"


@dataclass(frozen=True)
class SlurmSettings:
    conf: str | None = None  # slurm.conf; None = $SLURM_CONF or /etc/slurm/slurm.conf
    timeout: float = 30.0  # seconds per Slurm command


@dataclass(frozen=True)
class DaemonConfig:
    policy: str = "fifo-backfill"
    placement: str | None = None  # None = the policy's default placement
    interval: float = 30.0
    mode: str = "site_factor"
    max_site_factor: int = 1000
    # Explicit priorities (mode "priority") are priority_base .. priority_base + max_site_factor.
    priority_base: int = 100_000
    # Changes planned per cycle (a bound on the daemon's own work); what Slurm is asked per
    # cycle is capped by max_calls_per_cycle and max_send_seconds.
    max_changes_per_cycle: int = 20_000
    # Ordering resolution: a queue of more eligible jobs than this is ranked in this many
    # bands of consecutive ranks, one SiteFactor (or priority) per band, so a band is one
    # `scontrol update JobId=a,b,c`; 0 = one value per rank.
    order_bands: int = 100
    max_calls_per_cycle: int = 100  # scontrol updates per cycle, most urgent first
    max_send_seconds: float = 20.0  # seconds of sending per cycle (of the 30 s interval); the rest waits
    # A cycle whose job updates took longer than this each (slurmctld busy) halves the next
    # cycles' call cap; a fast one doubles it again, up to max_calls_per_cycle.
    slow_update_seconds: float = 0.1
    placement_hold: float = 300.0
    pin: str = "required"
    starvation_wait: float = 86_400.0
    dry_run: bool = False
    backend: str = "cli"
    state_file: str = "/var/lib/slurmrl/state.json"
    audit_log: str = "/var/log/slurmrl/audit.jsonl"  # "" = no audit log
    metrics_port: int = 0  # 0 = no metrics endpoint
    metrics_address: str = "127.0.0.1"  # where the endpoint listens; "0.0.0.0" for every address
    log_level: str = "info"
    backoff_initial: float = 5.0
    backoff_max: float = 300.0
    # Trace seconds per wall second, for replays of compressed traces
    # (``slurmrl replay``): the policy sees every time multiplied by it, so a
    # policy trained on trace time reads a compressed queue as the trace's.
    # 1 on a production controller.
    time_scale: float = 1.0
    # Days of finished jobs read back from accounting (sacct) when the daemon starts, so
    # history-based policies do not decide on a cold history after every restart;
    # 0 = start cold.
    history_days: float = 7.0
    # "requeue": a preemptive policy's stops become `scontrol requeue` (slurmrl.daemon.preempt),
    # at most max_preemptions_per_cycle per cycle; "off": preemptive policies are refused.
    preempt: str = "off"
    max_preemptions_per_cycle: int = 4
    scope: ScopeConfig = field(default_factory=ScopeConfig)
    slurm: SlurmSettings = field(default_factory=SlurmSettings)
    source: str = ""  # the file it was read from

    @property
    def policy_label(self) -> str:
        return f"{self.policy}+{self.placement}" if self.placement else self.policy


# key -> (kind, check); kinds: int, float, bool, str, strs (list of strings), optstr
_Check = Callable[[Any], str | None]


def _positive(v: Any) -> str | None:
    return None if v > 0 else "must be greater than 0"


def _non_negative(v: Any) -> str | None:
    return None if v >= 0 else "must be 0 or more"


def _one_of(options: tuple[str, ...]) -> _Check:
    def check(v: Any) -> str | None:
        return None if v in options else f"must be one of {', '.join(options)}"

    return check


def _between(lo: int, hi: int) -> _Check:
    def check(v: Any) -> str | None:
        return None if lo <= v <= hi else f"must be between {lo} and {hi}"

    return check


def _non_empty(v: Any) -> str | None:
    return None if str(v).strip() else "must not be empty"


def _ok(v: Any) -> str | None:
    return None


def _address(v: Any) -> str | None:
    import ipaddress

    try:
        ipaddress.ip_address(v)
    except ValueError:
        return f"must be an IP address such as 127.0.0.1 (or 0.0.0.0 for every address), not {v!r}"
    return None


TOP: dict[str, tuple[str, _Check]] = {
    "policy": ("str", _non_empty),
    "placement": ("str", _ok),
    "interval": ("float", _positive),
    "mode": ("str", _one_of(MODES)),
    "max_site_factor": ("int", _between(1, MAX_SITE_FACTOR)),
    "priority_base": ("int", _between(1, MAX_PRIORITY // 2)),
    "max_changes_per_cycle": ("int", _positive),
    "order_bands": ("int", _non_negative),
    "max_calls_per_cycle": ("int", _positive),
    "max_send_seconds": ("float", _positive),
    "slow_update_seconds": ("float", _positive),
    "placement_hold": ("float", _positive),
    "pin": ("str", _one_of(PINS)),
    "starvation_wait": ("float", _non_negative),
    "dry_run": ("bool", _ok),
    "backend": ("str", _one_of(BACKENDS)),
    "state_file": ("str", _non_empty),
    "audit_log": ("str", _ok),
    "metrics_port": ("int", _between(0, 65535)),
    "metrics_address": ("str", _address),
    "log_level": ("str", _one_of(LOG_LEVELS)),
    "backoff_initial": ("float", _positive),
    "backoff_max": ("float", _positive),
    "time_scale": ("float", _positive),
    "history_days": ("float", _non_negative),
    "preempt": ("str", _one_of(PREEMPT)),
    "max_preemptions_per_cycle": ("int", _positive),
}
SCOPE: dict[str, tuple[str, _Check]] = {
    "partitions": ("strs", _ok),
    "qos": ("strs", _ok),
    "accounts": ("strs", _ok),
    "opt_out_keyword": ("str", _non_empty),
}
SLURM: dict[str, tuple[str, _Check]] = {
    "conf": ("str", _ok),
    "timeout": ("float", _positive),
}
TABLES = {"scope": SCOPE, "slurm": SLURM}


def _type_error(kind: str, value: Any) -> str | None:
    got = type(value).__name__
    if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        return f"must be an integer, not {got} {value!r}"
    if kind == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return f"must be a number (seconds), not {got} {value!r}"
    if kind == "float" and not math.isfinite(value):
        return f"must be a finite number, not {value!r}"
    if kind == "bool" and not isinstance(value, bool):
        return f"must be true or false, not {got} {value!r}"
    if kind == "str" and not isinstance(value, str):
        return f"must be a string, not {got} {value!r}"
    if kind == "strs" and (not isinstance(value, list) or not all(isinstance(x, str) for x in value)):
        return f'must be a list of strings, e.g. ["gpu"], not {value!r}'
    return None


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(sorted(known))}"


def _read_table(
    data: dict[str, Any], schema: dict[str, tuple[str, _Check]], prefix: str, problems: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        label = f"{prefix}{key}"
        if key not in schema:
            problems.append(f"{label}: unknown key{_did_you_mean(key, list(schema))}")
            continue
        kind, check = schema[key]
        bad = _type_error(kind, value)
        if bad is None:
            bad = check(value)
        if bad is not None:
            problems.append(f"{label}: {bad}")
            continue
        if kind == "float":
            value = float(value)
        elif kind == "strs":
            value = tuple(x.strip() for x in value if x.strip())
        out[key] = value
    return out


def _resolve(path: str, base: Path) -> str:
    p = Path(path).expanduser()
    return str(p if p.is_absolute() else (base / p).resolve())


def parse_config(
    data: dict[str, Any], source: str = "<config>", base: Path | None = None, *, policy_checked: bool = True
) -> DaemonConfig:
    """Validate a parsed TOML document; raises one ConfigError listing every problem.

    ``policy_checked=False`` leaves the policy and placement names unchecked:
    giving back what the daemon set needs no policy, and a policy deleted or
    misnamed since must not keep an admin's values from being restored.
    """
    problems: list[str] = []
    top = {k: v for k, v in data.items() if k not in TABLES}
    values = _read_table(top, TOP, "", problems)
    tables: dict[str, dict[str, Any]] = {}
    for name, schema in TABLES.items():
        raw = data.get(name, {})
        if not isinstance(raw, dict):
            problems.append(f"[{name}]: must be a table ([{name}] section), not {type(raw).__name__}")
            continue
        tables[name] = _read_table(raw, schema, f"[{name}].", problems)
    if values.get("backoff_max", 300.0) < values.get("backoff_initial", 5.0):
        problems.append("backoff_max: must not be smaller than backoff_initial")
    base = base or Path.cwd()
    if "policy" in values:
        values["policy"] = _checkpoint_path(values["policy"], base)
        if policy_checked:
            problems.extend(_policy_problems(values["policy"], values.get("placement") or None))
    slurm = tables.get("slurm", {})
    if slurm.get("conf"):
        slurm["conf"] = _resolve(slurm["conf"], base)
        if not Path(slurm["conf"]).is_file():
            problems.append(f"[slurm].conf: no file {slurm['conf']} (leave it out for $SLURM_CONF)")
    if problems:
        raise ConfigError(
            f"{len(problems)} problem(s) in the daemon config:\n  " + "\n  ".join(problems),
            file=source,
            hint="see contrib/daemon.example.toml for every key with its meaning",
        )
    for key in ("state_file", "audit_log"):
        if values.get(key):
            values[key] = _resolve(values[key], base)
    if "placement" in values and not values["placement"]:
        values["placement"] = None
    return DaemonConfig(
        **values,
        scope=ScopeConfig(**tables.get("scope", {})),
        slurm=SlurmSettings(**slurm),
        source=source,
    )


def _checkpoint_path(policy: str, base: Path) -> str:
    """A policy written as a path (it holds a '/') is a trained checkpoint folder, taken
    relative to the config file; a registered name stays as it is."""
    return _resolve(policy, base) if is_checkpoint(policy) else policy


def is_checkpoint(policy: str) -> bool:
    return "/" in policy


def _policy_problems(policy: str, placement: str | None) -> list[str]:
    """Names checked against the registry (which imports no policy module); a checkpoint
    folder is checked for its config.json here and loaded when the daemon starts."""
    from slurmrl.policy.registry import placement_entry

    out: list[str] = []
    if not is_checkpoint(policy):
        out.extend(_registered_problems(policy))
    elif not (Path(policy) / "config.json").is_file():
        out.append(f"policy: no checkpoint folder {policy} (a folder holding config.json)")
    if placement:
        try:
            placement_entry(placement)
        except SlurmrlError as exc:
            out.append(f"placement: {exc.format()}")
    return out


def _registered_problems(policy: str) -> list[str]:
    from slurmrl.policy.registry import policy_entry

    try:
        entry = policy_entry(policy)
    except SlurmrlError as exc:
        return [f"policy: {exc.format()}"]
    if not entry.deployable:
        return [
            f"policy: '{policy}' reads true job durations (an offline bound) and cannot be deployed; "
            "choose a deployable policy (see 'slurmrl policies')"
        ]
    return []


def load_config(path: str | Path, *, policy_checked: bool = True) -> DaemonConfig:
    """The config at ``path``, validated whole (see :func:`parse_config` for ``policy_checked``)."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"no daemon config at {p}",
            hint="copy contrib/daemon.example.toml there, or pass --config FILE",
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {p}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", file=str(p)) from None
    return parse_config(data, source=str(p), base=p.resolve().parent, policy_checked=policy_checked)
