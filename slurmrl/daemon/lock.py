"""One daemon per state file: an ``flock`` on a lock file beside it.

Two daemons (or a cron ``--once`` overlapping the service) sharing a state
file would overwrite each other's record of what they changed, and one of
them would then forget values it must give back. The lock is taken before
the record is read and held until exit; the kernel drops it when the process
dies, even on SIGKILL, so a crash never leaves a stale lock behind.

Every Slurm command the daemon starts inherits the lock (``hold_in_commands``),
so a daemon killed in the middle of an ``scontrol update`` leaves the lock held
by that command until it ends. The next daemon, or ``daemon revert``, waits for
it before reading Slurm back: an update still on its way would otherwise land
after the read that found it missing and dropped it from the record, leaving a
value in Slurm that nothing gives back.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from slurmrl.errors import SlurmrlError
from slurmrl.slurm.run import hold_in_commands, release_in_commands

# How long to wait for the commands a killed daemon left running. scontrol ends each on its
# own (an RPC unanswered for MessageTimeout, 10 s by default, fails), so a minute covers a
# few unanswered RPCs; past it the lock is reported, never broken.
ORPHAN_WAIT = 60.0
_POLL = 0.1


class DaemonLocked(SlurmrlError):
    """Another process holds the state file's lock."""


def lock_path(state_file: str | Path) -> Path:
    p = Path(state_file)
    return p.with_name(p.name + ".lock")


class StateLock:
    """Holds ``<state_file>.lock`` with the holder's pid written in it."""

    def __init__(self, state_file: str | Path, orphan_wait: float = ORPHAN_WAIT) -> None:
        self.path = lock_path(state_file)
        self.orphan_wait = orphan_wait
        self._fd: int | None = None

    def acquire(self) -> StateLock:
        fd = self._open()
        deadline = time.monotonic() + self.orphan_wait
        while not _try_lock(fd):
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            if _alive(holder) or time.monotonic() >= deadline:
                os.close(fd)
                raise self._locked(holder)
            time.sleep(_POLL)  # a command the dead holder started still runs: it ends on its own
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        hold_in_commands(fd)
        self._fd = fd
        return self

    def _open(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise SlurmrlError(
                f"cannot create the state file's lock {self.path}: {exc.strerror or exc}",
                hint="set state_file in the daemon config to a path in a folder this user can write",
            ) from None

    def _locked(self, holder: str) -> DaemonLocked:
        if _alive(holder):
            return DaemonLocked(
                f"another slurmrl daemon (pid {holder}) holds {self.path}; not starting",
                hint="stop it first (systemctl stop slurmrl), or give this one its own state_file",
            )
        return DaemonLocked(
            f"a Slurm command left running by slurmrl daemon pid {holder}, which has exited, "
            f"still holds {self.path} after {self.orphan_wait:g} s; not starting",
            hint=f"it ends at scontrol's own timeout: 'fuser -v {self.path}' names it; start again once it has ended",
        )

    def release(self) -> None:
        if self._fd is not None:
            release_in_commands(self._fd)
            os.close(self._fd)  # closing drops the flock; the file stays (harmless, reused)
            self._fd = None

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _alive(pid_text: str) -> bool:
    """Whether the lock file's pid runs (an unreadable pid counts as running: never guess it dead)."""
    try:
        pid = int(pid_text)
    except ValueError:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
