"""Grids of simulation runs: cells, their expansion from flags or TOML, and the sweep that runs them.

A :class:`~slurmrl.grid.cells.Cell` is one replay (workload, cluster,
policy, placement, seed, options); :mod:`slurmrl.grid.spec` crosses axes
into cells; :mod:`slurmrl.grid.store` keeps one result folder per cell so a
sweep resumes where it stopped; :mod:`slurmrl.grid.sweep` runs the cells
that are missing on an executor (:mod:`slurmrl.executors`).
"""
