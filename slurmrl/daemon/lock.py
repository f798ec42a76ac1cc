"""One daemon per state file: an ``flock`` on a lock file beside it.

Two daemons (or a cron ``--once`` overlapping the service) sharing a state
file would overwrite each other's record of what they changed, and one of
them would then forget values it must give back. The lock is taken before
the record is read and held until exit; the kernel drops it when the process
dies, even on SIGKILL, so a crash never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from slurmrl.errors import SlurmrlError


class DaemonLocked(SlurmrlError):
    """Another process holds the state file's lock."""


def lock_path(state_file: str | Path) -> Path:
    p = Path(state_file)
    return p.with_name(p.name + ".lock")


class StateLock:
    """Holds ``<state_file>.lock`` with the holder's pid written in it."""

    def __init__(self, state_file: str | Path) -> None:
        self.path = lock_path(state_file)
        self._fd: int | None = None

    def acquire(self) -> StateLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise SlurmrlError(
                f"cannot create the state file's lock {self.path}: {exc.strerror or exc}",
                hint="set state_file in the daemon config to a path in a folder this user can write",
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise DaemonLocked(
                f"another slurmrl daemon (pid {holder}) holds {self.path}; not starting",
                hint="stop it first (systemctl stop slurmrl), or give this one its own state_file",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock; the file stays (harmless, reused)
            self._fd = None

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
