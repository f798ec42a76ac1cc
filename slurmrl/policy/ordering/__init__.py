"""Queue orderings: each ranks the pending jobs by what Slurm knows of them."""
