"""A training run's folder: claimed once, never overwritten, torch seeded on one thread.

Every trainer writes ``run.json`` first; a folder that holds one is a run
already, and starting another there would mix two runs' logs and weights.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from slurmrl.errors import ConfigError
from slurmrl.process_settings import keep_freed_memory, one_blas_thread

RUN = "run.json"


def fresh_run(out: Path, seed: int, *, what: str = "training run") -> np.random.Generator:
    """Make ``out`` for a new run (refusing one that holds a run), seed torch, and return the run's RNG."""
    if (out / RUN).is_file():
        raise ConfigError(f"{out} already holds a {what}", hint="pick another output folder")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    one_core()
    return np.random.default_rng(seed)


def one_core() -> None:
    """One torch and one BLAS thread, and freed memory kept (:mod:`slurmrl.process_settings`).

    On the small CPU machines the project trains on, more threads contend
    with the simulator for the same cores.
    """
    torch.set_num_threads(1)
    one_blas_thread()
    keep_freed_memory()
