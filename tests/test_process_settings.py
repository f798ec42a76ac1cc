"""One BLAS thread where the project runs, a user's own count kept, and glibc told to keep freed memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurmrl.executors.local import available_cores
from slurmrl.process_settings import BLAS_THREAD_VARIABLES, USER_THREAD_VARIABLES, keep_freed_memory

# Prints the BLAS libraries' thread counts after one_blas_thread(), numpy loaded before or after it.
PROBE = """
import json, sys
if sys.argv[1] == "before":
    import numpy
from slurmrl.process_settings import one_blas_thread
one_blas_thread()
import numpy
from threadpoolctl import threadpool_info
print(json.dumps([p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]))
"""


def _blas_threads(when: str, **env: str) -> list[int]:
    clean = {k: v for k, v in os.environ.items() if k not in USER_THREAD_VARIABLES}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, when], env={**clean, **env}, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


@pytest.mark.parametrize("when", ["before", "after"])
def test_blas_keeps_to_one_thread_whether_numpy_loaded_first_or_not(when: str) -> None:
    threads = _blas_threads(when)
    assert threads and set(threads) == {1}


@pytest.mark.skipif(available_cores() < 2, reason="OpenBLAS runs no more threads than cores")
@pytest.mark.parametrize("variable", ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"])
def test_a_count_the_user_set_is_kept(variable: str) -> None:
    threads = _blas_threads("before", **{variable: "3"})
    assert threads and all(1 < t <= 3 for t in threads)  # OpenBLAS caps the count at the cores


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_glibc_takes_the_memory_settings() -> None:
    assert keep_freed_memory() is True


def _workers_blas_threads(_: int) -> int:
    from threadpoolctl import threadpool_info

    return max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")


# A pool started from a process that set no thread count itself (this one has, once a
# CLI test ran), so only the workers' initializer can bring them to one thread.
POOL = """
from slurmrl.executors.local import LocalExecutor
from tests.test_process_settings import _workers_blas_threads
print([o.value for o in LocalExecutor(2).run(_workers_blas_threads, [0, 1])])
"""


@pytest.mark.skipif(available_cores() < 2, reason="OpenBLAS runs one thread on one core anyway")
def test_local_workers_keep_to_one_blas_thread() -> None:
    clean = {k: v for k, v in os.environ.items() if k not in USER_THREAD_VARIABLES}
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", POOL], env=clean, cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[1, 1]"


def test_every_command_runs_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from slurmrl.cli import main

    for name in USER_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(main, ["policies"])
    assert result.exception is None, result.output
    assert all(os.environ[name] == "1" for name in BLAS_THREAD_VARIABLES)


# The console script's entry, with an atexit handler registered first.
ENTRY = """
import atexit, gc, sys
atexit.register(lambda: print("atexit ran, frozen:", gc.get_freeze_count() > 0, file=sys.stderr))
from slurmrl.cli import {fn}
sys.argv[0] = "slurmrl"
{fn}()
"""


def _entry(fn: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY.format(fn=fn), *args], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("args", [("policies",), ("simulate", "--policy", "no-such-policy")])
def test_exiting_without_the_last_collection_keeps_output_exit_code_and_atexit(args: tuple[str, ...]) -> None:
    """The console script skips the interpreter's last collection; what a command prints and returns is the same."""
    skipped, plain = _entry("run", *args), _entry("main", *args)
    assert skipped.returncode == plain.returncode
    assert skipped.stdout == plain.stdout
    assert skipped.stderr.endswith("atexit ran, frozen: True\n")
    assert plain.stderr.endswith("atexit ran, frozen: False\n")
    assert skipped.stderr.removesuffix("True\n") == plain.stderr.removesuffix("False\n")
    assert (skipped.returncode == 0) == (args == ("policies",))
    if skipped.returncode == 0:
        assert skipped.stdout.count("\n") > 10
