"""A meta-learned placement policy: Reptile over a family of workloads, adapted in a few episodes.

``family`` draws tasks (workloads with a model mix, arrival rate and job-size
tilt resampled from the shared Gavel traces), ``inner`` runs the Harmony
trainer's updates for a few episodes, ``reptile`` meta-trains an
initialisation with them, ``adapt`` measures the adaptation curve on a shifted
workload and ``policy`` is the deployable ``meta-rl`` policy.
"""
