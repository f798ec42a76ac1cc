"""Replays of trace windows on a live Slurm cluster (``slurmrl replay``)."""
