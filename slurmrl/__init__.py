"""slurmrl: scheduling policies for deep-learning GPU jobs on Slurm clusters.

The package is split by job: ``traces`` reads workloads, ``cluster`` models the
hardware, ``perf`` turns placements into speeds, ``sim`` replays traces,
``policy`` holds the one interface every scheduler implements, ``slurm`` and
``daemon`` connect that interface to a live controller, ``rl`` trains policies
and ``report`` renders results.
"""

__version__ = "0.1.0"
