"""Harmony-style placement agent: the ordering picks which jobs start, a learned pointer picks where.

After Bao et al., "Deep Learning-based Job Placement in Distributed Machine
Learning Clusters" (INFOCOM 2019). Modules: ``features`` (observations),
``placement`` (the learned placement), ``policy`` (the deployable policy and
its checkpoints), ``env`` (episodes and simulator rewards), ``replay``
(experience replay), ``reward_model`` (learned reward predictor), ``train``. The network itself (torch
``HarmonyNet`` and its numpy twin) is in :mod:`slurmrl.rl.nets`.
"""
