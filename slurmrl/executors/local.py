"""Tasks on this machine: a process pool over every core.

Workers start from a fork server that has imported the simulator once, so a
worker costs a fork, not an interpreter start, and never inherits the
parent's threads (tqdm's monitor, torch's pools), which a plain fork would.
A task's result does not depend on the process that ran it: every random
draw in the simulator and the trainers comes from the item's own seed.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from slurmrl.errors import ConfigError
from slurmrl.executors import Outcome, error_line
from slurmrl.process_settings import one_blas_thread

PRELOAD = ["slurmrl.sim.experiment"]


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, which a Slurm allocation or taskset narrows)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS has no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def _stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM as an exception, so the pool's clean-up runs as it does for Ctrl-C."""
    raise SystemExit(128 + signum)


def _guarded(task: Callable[[Any], Any], item: Any) -> tuple[Any, str | None]:
    """Run one task; an exception comes back as a line of text (some exceptions do not pickle)."""
    try:
        return task(item), None
    except Exception as exc:
        return None, error_line(exc)


class LocalExecutor:
    """``jobs`` worker processes (default: every available core); ``jobs=1`` runs here, in order."""

    name = "local"

    def __init__(self, jobs: int | None = None) -> None:
        if jobs is not None and jobs < 1:
            raise ConfigError(f"--jobs must be at least 1, got {jobs}", column="jobs")
        self.jobs = jobs or available_cores()

    def describe(self, count: int) -> str:
        workers = min(self.jobs, count)
        return f"{count} task(s) on {workers} local process(es)"

    def run(self, task: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Outcome]:
        if self.jobs == 1 or len(items) <= 1:
            for index, item in enumerate(items):
                value, error = _guarded(task, item)
                yield Outcome(index, value, error)
            return
        yield from self._pool(task, items)

    def _pool(self, task: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Outcome]:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        # A worker per core already: each keeps to one BLAS thread (slurmrl.process_settings).
        pool = ProcessPoolExecutor(
            max_workers=min(self.jobs, len(items)), mp_context=context, initializer=one_blas_thread
        )
        pending: dict[Future, int] = {}
        # Killed by SIGTERM (a batch system's time limit, `kill`), the process would
        # leave its workers running their tasks: raise instead, as Ctrl-C does.
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _stop_on_sigterm) if main else None
        try:
            pending = {pool.submit(_guarded, task, item): i for i, item in enumerate(items)}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    index = pending.pop(future)
                    try:
                        value, error = future.result()
                    except Exception as exc:  # the worker died (killed, out of memory)
                        value, error = None, error_line(exc)
                    yield Outcome(index, value, error)
        except BaseException:
            # Ctrl-C or a caller that stopped reading: drop what has not started and
            # stop what runs; finished tasks already wrote their results.
            for future in pending:
                future.cancel()
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            if main:  # None: a handler not set from Python, which cannot be put back
                signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        pool.shutdown(wait=True)
