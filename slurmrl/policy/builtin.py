"""The registry of shipped policies and placements.

Only names and import paths live here; the modules load on first use.
"""

from slurmrl.policy.registry import register_placement, register_policy

register_placement("first-fit", "slurmrl.policy.placement.first_fit:FirstFit", "lowest-numbered nodes with enough free GPUs, as Slurm's linear selection")

register_policy("fifo", "slurmrl.policy.ordering.fifo:make_fifo", "first come, first served; the head job blocks the queue")
