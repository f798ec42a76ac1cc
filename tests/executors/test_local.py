"""The local executor: every item's outcome, the same in a pool as in this process."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurmrl.errors import ConfigError
from slurmrl.executors import make_executor
from slurmrl.executors.local import LocalExecutor, available_cores

ITEMS = [4.0, -1.0, 9.0, 16.0, 2.25]


def _outcomes(jobs: int) -> dict[int, tuple[object, str | None]]:
    # math.sqrt: a task importable in the workers that fails on one item.
    return {o.index: (o.value, o.error) for o in LocalExecutor(jobs).run(math.sqrt, ITEMS)}


def test_pool_gives_every_outcome_as_serial_does() -> None:
    serial = _outcomes(1)
    assert serial == _outcomes(2)
    assert serial[0] == (2.0, None) and serial[4] == (1.5, None)
    value, error = serial[1]
    assert value is None and error == "ValueError: math domain error"


def test_default_is_every_core_and_jobs_must_be_positive() -> None:
    assert LocalExecutor().jobs == available_cores() >= 1
    assert make_executor("local", jobs=3).describe(2) == "2 task(s) on 2 local process(es)"
    with pytest.raises(ConfigError, match="--jobs must be at least 1"):
        LocalExecutor(0)
    with pytest.raises(ConfigError, match="unknown executor 'ray'"):
        make_executor("ray")


def _note_and_sleep(folder: str) -> None:
    """A long task that says which process runs it."""
    Path(folder, str(os.getpid())).touch()
    time.sleep(120)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def test_sigterm_stops_the_workers_too(tmp_path: Path) -> None:
    """Killed with SIGTERM, as Ctrl-C, the command stops its workers instead of leaving them running."""
    code = (
        "import sys\n"
        "from slurmrl.executors.local import LocalExecutor\n"
        "from tests.executors.test_local import _note_and_sleep\n"
        "list(LocalExecutor(2).run(_note_and_sleep, [sys.argv[1]] * 2))\n"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=root)
    deadline = time.monotonic() + 60
    while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = [int(p.name) for p in tmp_path.iterdir()]
    assert len(workers) == 2, "the workers never started"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 15
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(w) for w in workers)
