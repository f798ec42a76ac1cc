"""The shipped policies and placements: names, import paths and summaries.

Plain data, so that listing names or running a heuristic imports none of the
policy modules (the learned ones pull in torch); :mod:`slurmrl.policy.registry`
reads these tables and loads a factory on first use.

Each policy's ``cost`` is its replay's CPU time per job relative to fifo's,
measured on philly-sample with its default placement (``slurmrl compare
--scenario philly-sample --jobs 1 --out DIR``, then each run's
``wall_seconds``; the learned ones with ``--policies`` naming them). Load and
placement move the figures; only their order matters (see ``Entry.cost``).
"""

from slurmrl.policy.entry import Entry

PLACEMENTS: tuple[Entry, ...] = (
    Entry(
        "first-fit",
        "slurmrl.policy.placement.first_fit:FirstFit",
        "lowest-numbered nodes with enough free GPUs, as Slurm's linear selection",
    ),
    Entry(
        "consolidate",
        "slurmrl.policy.placement.consolidate:Consolidate",
        "best fit: fewest nodes, fullest node that still fits, keeping whole nodes free",
    ),
    Entry(
        "topology",
        "slurmrl.policy.placement.topology:Topology",
        "closest free GPUs: one NVLink island, else one node, else one rack, else fewest racks",
    ),
    Entry(
        "interference-aware",
        "slurmrl.policy.placement.interference:InterferenceAware",
        "best fit that keeps interference-sensitive models off each other's nodes",
    ),
    Entry(
        "type-aware",
        "slurmrl.policy.placement.type_aware:TypeAware",
        "fastest GPU type for the job's model (any model: fastest free type), then closest free GPUs there",
    ),
)

POLICIES: tuple[Entry, ...] = (
    Entry(
        "fifo",
        "slurmrl.policy.ordering.fifo:make_fifo",
        "first come, first served; the head job blocks the queue",
        cost=1,
    ),
    Entry(
        "fifo-backfill",
        "slurmrl.policy.ordering.fifo:make_fifo_backfill",
        "first come, first served with EASY backfill on time limits",
        default_placement="first-fit",
        cost=2.4,
    ),
    Entry(
        "slurm",
        "slurmrl.policy.ordering.multifactor:make_slurm",
        "stock Slurm: multifactor priority (age, size, Fair Tree) with Slurm's backfill; a cluster's own settings when it has them",
        default_placement="first-fit",
        cost=4.8,
    ),
    Entry(
        "sjf-oracle",
        "slurmrl.policy.ordering.oracle:make_sjf_oracle",
        "shortest true duration first with backfill (bound; uses true durations)",
        deployable=False,
        cost=2.1,
    ),
    Entry(
        "srtf-oracle",
        "slurmrl.policy.ordering.oracle:make_srtf_oracle",
        "shortest remaining time first, preemptive (bound; uses true durations)",
        deployable=False,
        cost=6.1,
    ),
    Entry(
        "srtf-oracle-elastic",
        "slurmrl.policy.elastic.oracle:make_elastic_srtf_oracle",
        "srtf-oracle widening elastic jobs in passes where nobody is left waiting (elastic reference; uses true durations)",
        deployable=False,
        default_placement="topology",
        cost=5.9,
    ),
    Entry(
        "sjf-limit",
        "slurmrl.policy.ordering.limits:make_sjf_limit",
        "smallest asked GPU-time (GPUs x time limit) first with EASY backfill: sjf-oracle on what Slurm knows",
        cost=2.2,
    ),
    Entry(
        "srtf-limit",
        "slurmrl.policy.ordering.limits:make_srtf_limit",
        "smallest remaining asked GPU-time (GPUs x (limit - run so far)) first, preemptive: srtf-oracle on what Slurm knows",
        default_placement="consolidate",
        cost=3.7,
    ),
    Entry(
        "gittins-limit",
        "slurmrl.policy.ordering.gittins:make_gittins_limit",
        "highest Gittins index first, preemptive: run times over limits learned per limit class from ended jobs",
        default_placement="consolidate",
        cost=7.6,
    ),
    Entry(
        "tiresias",
        "slurmrl.policy.ordering.tiresias:make_tiresias",
        "2D-LAS on attained GPU-time, two queues, preemptive, starvation guard (Tiresias NSDI'19)",
        default_placement="consolidate",
        cost=4.2,
    ),
    Entry(
        "qssf",
        "slurmrl.policy.ordering.qssf:make_qssf",
        "estimated GPU-time first, estimates learned from users' finished jobs (Helios SC'21)",
        cost=2.8,
    ),
    Entry(
        "afs",
        "slurmrl.policy.elastic.afs:make_afs",
        "elastic: starts jobs on their smallest allowed GPU count, grows them by marginal gain (AFS NSDI'21); rigid jobs first-fit",
        default_placement="consolidate",
        cost=2.0,
    ),
    Entry(
        "topdrl",
        "slurmrl.rl.topdrl:make_topdrl",
        "TopDRL-style RL agent (CNN over the GPU grid) picks jobs over gittins-limit's pass (zero output = gittins-limit; "
        "preemptive); trained on Philly weeks 1-2",
        default_placement="type-aware",
        learned=True,
        cost=21,
    ),
    Entry(
        "topdrl-first",
        "slurmrl.rl.window_policy:make_topdrl_first",
        "baseline for topdrl: its candidate window and placement, always the window's first job that fits",
        default_placement="type-aware",
        cost=1.9,
    ),
    Entry(
        "harmony",
        "slurmrl.rl.harmony.policy:make_harmony",
        "Harmony-style RL placement (pointer over nodes, led by type-aware, paired JCT reward) under sjf-limit's order; trained on Gavel msr VCs",
        default_placement="type-aware",
        learned=True,
        cost=10.5,
    ),
    Entry(
        "meta-rl",
        "slurmrl.rl.meta.policy:make_meta_rl",
        "Harmony-style RL placement meta-trained with Reptile over Gavel/Philly workload mixes; adapt with `slurmrl adapt`",
        default_placement="interference-aware",
        learned=True,
        cost=10.8,
    ),
    Entry(
        "maifs",
        "slurmrl.rl.maifs.policy:make_maifs",
        "MAIFS-style multi-agent RL: a window of jobs choose GPU count (elastic range) and rack together, attention + "
        "coordination graph, over gittins-limit's pass (preemptive); trained on Philly weeks 1-2 with --elastic fraction:0.5",
        default_placement="topology",
        learned=True,
        cost=17,
    ),
)
