"""Named benchmark scenarios: a trace window, a cluster and an offered load.

A full-size Philly cluster runs the shared window at about a quarter of its
GPUs busy, where every policy looks the same. Each scenario therefore picks a
cluster and compresses arrivals until the offered load (GPU-seconds asked per
GPU-second available) reaches a target, so that queues form and ordering and
placement decisions matter.
"""

from slurmrl.scenarios.catalog import SCENARIOS, Scenario, get_scenario, scenario_names

__all__ = ["SCENARIOS", "Scenario", "get_scenario", "scenario_names"]
