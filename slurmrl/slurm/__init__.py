"""Talking to Slurm: reading its configuration files and, later, its controller.

The simulator and the daemon must agree on what the cluster looks like, and on
a real site the truth is whatever ``slurm.conf``, ``gres.conf`` and
``topology.conf`` say. Modules here read those files without needing Slurm
installed, so a cluster can be modelled from a copy of its configuration.
"""
