"""A stand-in for pyslurm 25.11 with the documented classes and attributes slurmrl uses.

``Jobs.load()``/``Nodes.load()`` return dict-like collections of ``Job``/``Node``;
GRES attributes have pyslurm's dict forms (``{"gpu:v100": 8}``, and
``{"gpu:v100": {"count": "2", "indexes": "0-1"}}`` for GRES with indices).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__version__ = "25.11.0"


class RPCError(Exception):
    pass


class Job:
    def __init__(self, **attrs: Any) -> None:
        defaults = dict(
            id=0,
            array_id=None,
            array_task_id=None,
            array_tasks_waiting=None,
            name="",
            user_name="root",
            account=None,
            partition="gpu",
            qos=None,
            state="PENDING",
            state_reason="None",
            submit_time=0,
            start_time=None,
            time_limit=None,
            priority=1,
            num_nodes=1,
            allocated_nodes=None,
            required_nodes=None,
            gres_per_node={},
            comment=None,
            admin_comment=None,
            dependencies={},
        )
        defaults.update(attrs)
        self._layout = defaults.pop("layout", {})
        self.__dict__.update(defaults)

    def get_resource_layout_per_node(self) -> dict:
        return self._layout


class Node:
    def __init__(self, **attrs: Any) -> None:
        defaults = dict(
            name="",
            state="IDLE",
            partitions=[],
            configured_gres={},
            allocated_gres={},
            total_cpus=0,
            real_memory=0,
            reason=None,
        )
        defaults.update(attrs)
        self.__dict__.update(defaults)


class _Collection(dict):
    pass


class Jobs(_Collection):
    fail = False
    items: list[Job] = []

    @staticmethod
    def load(preload_passwd_info: bool = False, frozen: bool = False) -> Jobs:
        if Jobs.fail:
            raise RPCError("Unable to contact slurm controller")
        return Jobs({j.id: j for j in Jobs.items})


class Nodes(_Collection):
    items: list[Node] = []

    @staticmethod
    def load(preload_passwd_info: bool = False) -> Nodes:
        return Nodes({n.name: n for n in Nodes.items})


def module() -> ModuleType:
    import sys

    return sys.modules[__name__]
