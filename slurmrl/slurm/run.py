"""The one way slurmrl runs a Slurm command.

Every ``squeue``/``sinfo``/``scontrol`` call goes through :func:`call` so that
(1) no shell ever sees job names or comments, (2) a failing controller is
reported as one typed error the daemon can react to (back off when rate
limited, alert when munge is broken) instead of as a stack of parse errors,
and (3) the daemon can export how often and how slowly Slurm answered (requests
made without a process, through pyslurm, are counted with :func:`timed`).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from slurmrl.errors import SlurmError


class ControllerUnreachable(SlurmError):
    """slurmctld did not answer (down, wrong host/port, or too slow)."""


class MungeError(SlurmError):
    """Authentication between this host and slurmctld failed."""


class PermissionDenied(SlurmError):
    """slurmctld refused the request for this user."""


class RateLimited(SlurmError):
    """slurmctld's RPC rate limiter (``SlurmctldParameters=rl_enable``) refused the call."""


class TryAgain(SlurmError):
    """slurmctld refused a job update for now: the job waits for its slurmdbd index
    (``ESLURM_JOB_SETTING_DB_INX``, which ``_update_job`` in src/slurmctld/job_mgr.c returns
    while that index is being set, as after a controller restart). Not a refusal of the value."""


class CommandNotFound(SlurmError):
    """The Slurm client binary is not installed or not on PATH."""


class JobNotFound(SlurmError):
    """The job id is unknown to slurmctld (never existed or already purged)."""


class CommandFailed(SlurmError):
    """A Slurm command failed for a reason not recognised above."""


class PartlyRefused(SlurmError):
    """A list update (``scontrol update JobId=a,b,c``) that Slurm refused for the named ids
    only: scontrol went on past each and named it, so the others took the value."""

    def __init__(self, message: str, refused: tuple[str, ...], **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.refused = refused


@dataclass(frozen=True, slots=True)
class CommandResult:
    cmd: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


@dataclass
class CommandStats:
    """One command's counters (``scontrol update``, ``squeue``, ...)."""

    calls: int = 0
    failures: int = 0
    seconds: float = 0.0


@dataclass
class CallStats:
    """Counters for the daemon's metrics endpoint."""

    calls: int = 0
    failures: int = 0
    seconds: float = 0.0
    by_command: dict[str, CommandStats] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        return {"calls": self.calls, "failures": self.failures, "seconds": self.seconds}


STATS = CallStats()
_LOCK = threading.Lock()
# Descriptors every command inherits: the daemon's state lock (daemon/lock.py) is held by
# each scontrol it started, so a daemon killed mid-call leaves the lock held until that
# command has ended and nothing can read Slurm back before its update has landed.
_INHERITED: set[int] = set()


def hold_in_commands(fd: int) -> None:
    """Let every command started from now on inherit ``fd`` (and so keep its flock held)."""
    _INHERITED.add(fd)


def release_in_commands(fd: int) -> None:
    _INHERITED.discard(fd)


# (error class, lower-case stderr fragments), checked in order: the first
# match wins, so the more specific causes come first. The fragments are the
# messages Slurm's client commands print for each failure.
_PATTERNS: tuple[tuple[type[SlurmError], tuple[str, ...], str], ...] = (
    (
        JobNotFound,
        ("invalid job id specified", "invalid job id"),
        "check the id with squeue; finished jobs leave slurmctld after MinJobAge",
    ),
    (
        MungeError,
        ("munge", "invalid authentication credential", "zero bytes were transmitted"),
        "check that munged runs and that its key matches the controller's",
    ),
    (
        PermissionDenied,
        ("access/permission denied", "permission denied", "invalid user", "access denied"),
        "run as a Slurm operator/administrator (AdminLevel in sacctmgr) or as SlurmUser",
    ),
    (
        TryAgain,
        ("the db index is being set",),
        "slurmctld is waiting for slurmdbd to index the job; the update is sent again later",
    ),
    (
        RateLimited,
        ("resource temporarily unavailable", "rate limit"),
        "slurmctld rate-limits RPCs (rl_enable); poll less often",
    ),
    (
        ControllerUnreachable,
        (
            "unable to contact slurm controller",
            "connection refused",
            "socket timed out",
            "could not establish a configuration source",
            "unable to establish controller",
            "communication connection failure",
        ),
        "check that slurmctld runs and that SLURM_CONF points at this cluster's slurm.conf",
    ),
)


def classify(cmd: Sequence[str], returncode: int, stderr: str) -> SlurmError:
    """The typed error for a failed command (pure, so it can be tested on text)."""
    text = stderr.strip()
    low = text.lower()
    shown = " ".join(cmd)
    last = text.splitlines()[-1] if text else "(no error output)"
    err: SlurmError = CommandFailed(f"'{shown}' failed (exit {returncode}): {last}")
    for cls, fragments, hint in _PATTERNS:
        if any(f in low for f in fragments):
            err = cls(f"'{shown}' failed (exit {returncode}): {last}", hint=hint)
            break
    err.stderr = text
    return err


def call(cmd: Sequence[str], *, timeout: float = 30, env: Mapping[str, str] | None = None) -> CommandResult:
    """Run ``cmd`` without a shell and return its output, or raise a typed :class:`SlurmError`."""
    argv = tuple(str(c) for c in cmd)
    if not argv:
        raise ValueError("empty command")
    full_env = None if env is None else {**os.environ, **env}
    conf = (os.environ if full_env is None else full_env).get("SLURM_CONF")
    if conf and not os.path.exists(conf):
        # Slurm's commands retry a slurm.conf they cannot stat for up to a
        # minute (s_p_parse_file) and then fail as if the controller were down.
        _count(0.0, failed=True, argv=argv)
        raise ControllerUnreachable(
            f"SLURM_CONF={conf}: no such file, so '{argv[0]}' cannot read the cluster's configuration",
            hint="point SLURM_CONF at this cluster's slurm.conf, or unset it for the default or a configless setup",
        )
    start = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
            check=False,
            errors="replace",
            pass_fds=tuple(sorted(_INHERITED)),
        )
    except FileNotFoundError:
        _count(time.monotonic() - start, failed=True, argv=argv)
        raise CommandNotFound(
            f"'{argv[0]}' is not installed or not on PATH",
            hint="install the Slurm client tools (Debian/Ubuntu: apt-get install slurm-client)",
        ) from None
    except PermissionError:
        _count(time.monotonic() - start, failed=True, argv=argv)
        raise CommandNotFound(
            f"'{argv[0]}' exists but cannot be executed", hint="check its permissions"
        ) from None
    except subprocess.TimeoutExpired:
        _count(time.monotonic() - start, failed=True, argv=argv)
        raise ControllerUnreachable(
            f"'{' '.join(argv)}' did not finish within {timeout:g} s",
            hint="slurmctld may be down or overloaded; check 'scontrol ping'",
        ) from None
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        _count(seconds, failed=True, argv=argv)
        raise classify(argv, proc.returncode, proc.stderr)
    _count(seconds, failed=False, argv=argv)
    return CommandResult(argv, proc.returncode, proc.stdout, proc.stderr, seconds)


def command_name(argv: Sequence[str]) -> str:
    """A metrics label: the binary, plus the verb for scontrol (``scontrol update``)."""
    name = os.path.basename(argv[0]) if argv else "?"
    if name == "scontrol" and len(argv) > 1 and not argv[1].startswith("-"):
        return f"{name} {argv[1]}"
    return name


@contextmanager
def timed(label: str) -> Iterator[None]:
    """Time and count a Slurm request made without a process (a pyslurm RPC, labelled
    e.g. ``pyslurm Jobs.load``) in the same statistics as :func:`call`, so the
    daemon's call metrics cover every backend; an exception counts as a failure."""
    start = time.monotonic()
    try:
        yield
    except BaseException:
        _add(label, time.monotonic() - start, True)
        raise
    _add(label, time.monotonic() - start, False)


def _count(seconds: float, *, failed: bool, argv: Sequence[str] = ()) -> None:
    _add(command_name(argv), seconds, failed)


def _add(label: str, seconds: float, failed: bool) -> None:
    with _LOCK:
        STATS.calls += 1
        STATS.seconds += seconds
        one = STATS.by_command.setdefault(label, CommandStats())
        one.calls += 1
        one.seconds += seconds
        if failed:
            STATS.failures += 1
            one.failures += 1
