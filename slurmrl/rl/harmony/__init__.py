"""Harmony-style placement agent: the ordering picks which jobs start, a learned pointer picks where.

After Bao et al., "Deep Learning-based Job Placement in Distributed Machine
Learning Clusters" (INFOCOM 2019). Modules: ``features`` (observations),
``network`` (torch actor-critic), ``numpy_net`` (deployed inference),
``placement`` (the learned placement), ``policy`` (the deployable policy and
its checkpoints), ``env`` (episodes and simulator rewards), ``replay``
(experience replay), ``reward_model`` (learned reward predictor), ``train``.
"""
