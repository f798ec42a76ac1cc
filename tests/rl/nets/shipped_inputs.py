"""Fixed inputs on which the shipped checkpoints' outputs were recorded (tests/rl/nets/shipped_outputs.json).

Seeded numpy draws of the shapes each network reads: the same numbers on every
platform, so a refactor of the network code is checked against the outputs
the code it replaced gave on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

CASES = 6


def _valid_rows(rng: np.random.Generator, rows: int, features: int, real: int) -> np.ndarray:
    """``rows`` feature rows whose first ``real`` are real (column 0 = 1) and the rest padding."""
    x = rng.random((rows, features), dtype=np.float32)
    x[:, 0] = (np.arange(rows) < real).astype(np.float32)
    x[real:] = 0.0
    return x


def topdrl_inputs(cfg: Any) -> Iterator[tuple[np.ndarray, ...]]:
    """(jobs [K, F], grid [C, R, N, G], globals [S], mask [K + 1]) per case."""
    rng = np.random.default_rng(1)
    for case in range(CASES):
        k = 4 + 4 * (case % 3)
        jobs = _valid_rows(rng, k, cfg.job_features, 1 + case)
        grid = rng.random((cfg.cluster_channels, 1 + case % 2, 4, 8), dtype=np.float32)
        glob = rng.random(cfg.global_features, dtype=np.float32)
        mask = np.append(jobs[:, 0] > 0.5, case % 2 == 0)
        yield jobs, grid, glob, mask


def harmony_inputs(cfg: Any) -> Iterator[tuple[np.ndarray, ...]]:
    """(job [Fj], window [K, Fj], nodes [N, Fn], globals [S], mask [N]) per case."""
    rng = np.random.default_rng(2)
    for case in range(CASES):
        window = _valid_rows(rng, 8, cfg.job_features, 1 + case)
        job = _valid_rows(rng, 1, cfg.job_features, 1)[0]
        nodes = _valid_rows(rng, 6 + case, cfg.node_features, 5 + case)
        glob = rng.random(cfg.global_features, dtype=np.float32)
        mask = rng.random(6 + case) < 0.7
        mask[0] = True
        yield job, window, nodes, glob, mask


def maifs_inputs(cfg: Any) -> Iterator[tuple[np.ndarray, ...]]:
    """(jobs [K, Fj], globals [S], options [K, O, Fo], masks [K, O]) per case."""
    rng = np.random.default_rng(3)
    for case in range(CASES):
        jobs = _valid_rows(rng, 8, cfg.job_features, 1 + case)
        glob = rng.random(cfg.global_features, dtype=np.float32)
        options = rng.random((8, 5, cfg.option_features), dtype=np.float32)
        masks = rng.random((8, 5)) < 0.6
        masks[:, -1] = True
        yield jobs, glob, options, masks
