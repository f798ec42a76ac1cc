"""Process-wide settings for CPU-bound runs: one BLAS thread, freed memory kept for reuse, no last collection.

All are about CPU time on the small machines the project runs on, where a
replay, a sweep worker or a trainer already keeps a core busy:

* The matrices here are small (a scheduling pass's masks, a policy's layers
  of 64 units). OpenBLAS threads on them spin on the other core and add CPU
  time, not speed: ``slurmrl simulate --scenario philly-sample --policy
  topdrl`` (a matrix product per decision) takes 8.5 s of wall and 16.6 CPU-s
  with numpy's default of a thread per core, 8.0 s and 7.9 CPU-s with one (2
  cores; ``--policy slurm`` on the 46,070 shared Philly jobs: 15.8-18.3
  CPU-s against 14.5), and a process pool already runs a worker per core.
* A training update allocates and frees activations of several megabytes per
  minibatch. glibc serves blocks above its mmap threshold with a fresh
  mapping and unmaps them on free, so the kernel zeroes new pages at every
  step. Keeping such blocks on the heap and never trimming it took the first
  10,240 decisions of topdrl's training from 47.4 to 43.4 CPU-s (2.7 to 0.5
  of them in the kernel) for 16 MB more peak memory, the weights byte for
  byte the same: ``slurmrl train --policy topdrl --lead sjf-limit --scenario
  philly-512-week1,philly-512-week2-head --steps 10240`` on the code before
  these settings, with ``OPENBLAS_NUM_THREADS=1`` and then also glibc's
  ``MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=2147483647``.
* When the interpreter exits it runs one more full cycle collection over
  every object still alive before it frees them, finding no cycles
  (:mod:`slurmrl.sim.gc_pause`): a cost every command paid, measured in
  :func:`skip_last_collection`.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys

# The variables BLAS libraries read their thread count from when they load; OpenBLAS
# and MKL also follow OMP_NUM_THREADS (which some sites set per job) when theirs is unset.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
USER_THREAD_VARIABLES = (*BLAS_THREAD_VARIABLES, "OMP_NUM_THREADS")
# glibc mallopt(3) parameters and the values a training run keeps.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 2**31 - 1


def one_blas_thread() -> None:
    """One BLAS thread in this process and the processes it starts, unless the user set a count.

    Libraries loaded from now on read the environment; one loaded already
    (numpy imported before) is told through threadpoolctl.
    """
    if any(name in os.environ for name in USER_THREAD_VARIABLES):
        return
    for name in BLAS_THREAD_VARIABLES:
        os.environ[name] = "1"
    if "numpy" in sys.modules:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")


def keep_freed_memory() -> bool:
    """Serve large blocks from the heap and never give it back (glibc only; False elsewhere).

    Peak memory stays what the run needed; what it saves is the kernel
    mapping and zeroing the same megabytes again at every minibatch.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def skip_last_collection() -> None:
    """Spare the exiting interpreter its last full cycle collection (call it once the command is done).

    ``gc.freeze`` moves every live object to the permanent generation, which
    no collection walks; the interpreter then frees them by reference count
    as usual, so buffered files are still flushed and ``atexit`` handlers
    still run. Objects in a reference cycle are not finalised, as the
    operating system reclaims their memory and descriptors anyway. ``python
    benchmarks/sim_speed.py --only fifo`` (the shared Philly weeks under fifo),
    alternated twice with the code before: 2.37-2.45 s of process wall
    against 2.58-2.59 s.
    """
    gc.freeze()
