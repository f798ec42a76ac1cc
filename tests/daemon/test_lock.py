"""The state lock outlives a killed daemon's unfinished Slurm command, and only it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurmrl.daemon.lock import DaemonLocked, StateLock
from slurmrl.slurm.run import call

# A daemon stand-in: takes the lock, then runs one command (the shell line in argv[2]) through call().
HOLDER = """
import sys
from slurmrl.daemon.lock import StateLock
from slurmrl.slurm.run import call
StateLock(sys.argv[1]).acquire()
call(["sh", "-c", sys.argv[2]], timeout=120)
"""


def kill_in_its_command(tmp_path: Path, line: str) -> int:
    """Start the stand-in, SIGKILL it once its command has begun (it touches ``started``); its pid."""
    started = tmp_path / "started"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "state.json"), line])
    deadline = time.monotonic() + 60
    while not started.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the stand-in never ran its command"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    return proc.pid


def test_a_command_left_by_a_killed_daemon_is_waited_for(tmp_path: Path) -> None:
    ended = tmp_path / "ended"
    kill_in_its_command(tmp_path, f"touch {tmp_path / 'started'}; sleep 3; touch {ended}")
    assert not ended.exists()  # the daemon is gone, its command still runs
    with StateLock(tmp_path / "state.json"):
        assert ended.exists()  # the lock came only once the command had ended


def test_a_command_still_running_past_the_wait_is_named_not_broken(tmp_path: Path) -> None:
    pid_file = tmp_path / "command.pid"
    line = f"echo $$ > {pid_file}; touch {tmp_path / 'started'}; exec sleep 60"
    daemon_pid = kill_in_its_command(tmp_path, line)
    try:
        with pytest.raises(
            DaemonLocked, match=f"left running by slurmrl daemon pid {daemon_pid}, which has exited"
        ):
            StateLock(tmp_path / "state.json", orphan_wait=0.3).acquire()
    finally:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_running_holder_is_refused_at_once(tmp_path: Path) -> None:
    with StateLock(tmp_path / "state.json"):
        start = time.monotonic()
        with pytest.raises(DaemonLocked, match=f"another slurmrl daemon \\(pid {os.getpid()}\\)"):
            StateLock(tmp_path / "state.json").acquire()
        assert time.monotonic() - start < 5  # not the wait for a dead holder's command


def test_commands_inherit_the_lock_only_while_it_is_held(tmp_path: Path) -> None:
    def fds() -> set[str]:  # the descriptors the command's shell holds
        return set(call(["sh", "-c", "ls /proc/$$/fd"]).stdout.split())

    lock = StateLock(tmp_path / "state.json").acquire()
    fd = str(lock._fd)
    assert fd in fds()
    lock.release()
    assert fd not in fds()
