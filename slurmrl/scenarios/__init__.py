"""Named benchmark scenarios: a trace window on a cluster.

Every scenario replays its trace on the trace's own timeline (arrival scale
1) and sizes the cluster to the trace; contended variants use a smaller
cluster for the same timeline, never stretched or compressed time. The
offered load is what comes out (``slurmrl scenarios`` computes it), not a
target; ``--arrival-scale``/``--target-load`` change it explicitly.
"""

from slurmrl.scenarios.catalog import SCENARIOS, Scenario, get_scenario, scenario_names

__all__ = ["SCENARIOS", "Scenario", "get_scenario", "scenario_names"]
