"""The registry of shipped policies and placements.

Only names and import paths live here; the modules load on first use.
"""

from slurmrl.policy.registry import register_placement, register_policy

register_placement(
    "first-fit",
    "slurmrl.policy.placement.first_fit:FirstFit",
    "lowest-numbered nodes with enough free GPUs, as Slurm's linear selection",
)

register_policy(
    "fifo",
    "slurmrl.policy.ordering.fifo:make_fifo",
    "first come, first served; the head job blocks the queue",
)

register_placement(
    "consolidate",
    "slurmrl.policy.placement.consolidate:Consolidate",
    "best fit: fewest nodes, fullest node that still fits, keeping whole nodes free",
)
register_placement(
    "topology",
    "slurmrl.policy.placement.topology:Topology",
    "closest free GPUs: one NVLink island, else one node, else one rack, else fewest racks",
)
register_placement(
    "interference-aware",
    "slurmrl.policy.placement.interference:InterferenceAware",
    "best fit that keeps interference-sensitive models off each other's nodes",
)
register_placement(
    "type-aware",
    "slurmrl.policy.placement.type_aware:TypeAware",
    "fastest GPU type for the job's model (any model: fastest free type), then closest free GPUs there",
)
register_policy(
    "fifo-backfill",
    "slurmrl.policy.ordering.fifo:make_fifo_backfill",
    "first come, first served with EASY backfill on time limits",
    default_placement="first-fit",
)
register_policy(
    "slurm",
    "slurmrl.policy.ordering.multifactor:make_slurm",
    "stock Slurm: multifactor priority (age, size, Fair Tree) with Slurm's backfill; a cluster's own settings when it has them",
    default_placement="first-fit",
)
register_policy(
    "sjf-oracle",
    "slurmrl.policy.ordering.oracle:make_sjf_oracle",
    "shortest true duration first with backfill (bound; uses true durations)",
    deployable=False,
)
register_policy(
    "srtf-oracle",
    "slurmrl.policy.ordering.oracle:make_srtf_oracle",
    "shortest remaining time first, preemptive (bound; uses true durations)",
    deployable=False,
)
register_policy(
    "srtf-oracle-elastic",
    "slurmrl.policy.elastic.oracle:make_elastic_srtf_oracle",
    "srtf-oracle widening elastic jobs in passes where nobody is left waiting (elastic reference; uses true durations)",
    deployable=False,
    default_placement="topology",
)
register_policy(
    "sjf-limit",
    "slurmrl.policy.ordering.limits:make_sjf_limit",
    "smallest asked GPU-time (GPUs x time limit) first with EASY backfill: sjf-oracle on what Slurm knows",
)
register_policy(
    "srtf-limit",
    "slurmrl.policy.ordering.limits:make_srtf_limit",
    "smallest remaining asked GPU-time (GPUs x (limit - run so far)) first, preemptive: srtf-oracle on what Slurm knows",
    default_placement="consolidate",
)
register_policy(
    "tiresias",
    "slurmrl.policy.ordering.tiresias:make_tiresias",
    "2D-LAS on attained GPU-time, two queues, preemptive, starvation guard (Tiresias NSDI'19)",
    default_placement="consolidate",
)
register_policy(
    "qssf",
    "slurmrl.policy.ordering.qssf:make_qssf",
    "estimated GPU-time first, estimates learned from users' finished jobs (Helios SC'21)",
)
register_policy(
    "afs",
    "slurmrl.policy.elastic.afs:make_afs",
    "elastic: starts jobs on their smallest allowed GPU count, grows them by marginal gain (AFS NSDI'21); rigid jobs first-fit",
    default_placement="consolidate",
)
register_policy(
    "topdrl",
    "slurmrl.rl.topdrl:make_topdrl",
    "TopDRL-style RL agent (CNN over the GPU grid) picks jobs; trained on Philly weeks 1-2",
    default_placement="topology",
    learned=True,
)
register_policy(
    "topdrl-first",
    "slurmrl.rl.window_policy:make_topdrl_first",
    "baseline for topdrl: its candidate window and placement, always the window's first job that fits",
    default_placement="topology",
)
register_policy(
    "harmony",
    "slurmrl.rl.harmony.policy:make_harmony",
    "Harmony-style RL placement (pointer over nodes vs co-location interference) under qssf's order; trained on Gavel msr VCs",
    default_placement="interference-aware",
    learned=True,
)
register_policy(
    "meta-rl",
    "slurmrl.rl.meta.policy:make_meta_rl",
    "Harmony-style RL placement meta-trained with Reptile over Gavel/Philly workload mixes; adapt with `slurmrl adapt`",
    default_placement="interference-aware",
    learned=True,
)
register_policy(
    "maifs",
    "slurmrl.rl.maifs.policy:make_maifs",
    "MAIFS-style multi-agent RL: a window of jobs choose GPU count (elastic range) and rack together, attention + coordination graph; trained on Philly weeks 1-2 with --elastic fraction:0.5",
    default_placement="topology",
    learned=True,
)
