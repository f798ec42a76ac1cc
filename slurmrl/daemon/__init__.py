"""The policy daemon that runs beside slurmctld (``slurmrl daemon``)."""
