"""The scheduling settings of a Slurm cluster, as its ``slurm.conf`` gives them.

The simulator's ``slurm`` policy should order and backfill jobs the way a
given site's slurmctld does, so the settings that decide that are read from
the same file slurmctld reads. Every field falls back to Slurm's documented
default where the file is silent (slurm.conf(5), Slurm 22.05):

* ``PriorityType`` defaults to ``priority/basic``: priority by submit order,
  a plain FIFO; ``priority/multifactor`` turns the weights on.
* every ``PriorityWeight*`` defaults to 0;
* ``PriorityMaxAge`` and ``PriorityDecayHalfLife`` default to ``7-0`` and take
  Slurm time strings (a bare number is minutes; ``D-HH:MM:SS`` and its
  shorter forms); a half-life of 0 turns decay off;
* ``PriorityCalcPeriod`` defaults to 5 minutes;
* ``PriorityFavorSmall`` defaults to ``NO``;
* ``PriorityFlags``: Fair Tree is the fair-share algorithm since 19.05
  unless ``NO_FAIR_TREE`` (or ``DEPTH_OBLIVIOUS``, which implies it) is set
  (fair_tree.html); ``SMALL_RELATIVE_TO_TIME`` sizes jobs per minute of
  time limit; the other flags are read and checked but change nothing the
  simulator models;
* ``SchedulerType`` defaults to ``sched/backfill``; ``SchedulerParameters``
  gives ``bf_interval`` (seconds, default 30), ``bf_resolution`` (seconds,
  default 60), ``bf_window`` (minutes, default 1440) and
  ``bf_max_job_test`` (default 500) and ``bf_node_space_size`` (records of
  backfill's resource/time table, default ``bf_max_job_test``; from 2 to
  2,000,000, ``backfill.c``); the ranges checked are the ones slurm.conf(5)
  documents for them.

The same ``Key = "value"`` pairs make the ``[scheduler]`` table of a TOML
cluster spec (:meth:`SchedulerSettings.as_conf` writes them), so a spec
written from a live cluster carries its scheduler with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from slurmrl.errors import SpecError
from slurmrl.slurm.conf import SlurmConf, read_slurm_conf

DAY = 86400.0
PRIORITY_TYPES = ("priority/basic", "priority/multifactor")
SCHEDULER_TYPES = ("sched/backfill", "sched/builtin")
# Every PriorityFlags value slurm.conf(5) lists for 22.05; slurmctld refuses others.
PRIORITY_FLAGS = (
    "ACCRUE_ALWAYS",
    "CALCULATE_RUNNING",
    "DEPTH_OBLIVIOUS",
    "NO_FAIR_TREE",
    "INCR_ONLY",
    "MAX_TRES",
    "NO_NORMAL_ALL",
    "NO_NORMAL_ASSOC",
    "NO_NORMAL_PART",
    "NO_NORMAL_QOS",
    "NO_NORMAL_TRES",
    "SMALL_RELATIVE_TO_TIME",
)
WEIGHT_KEYS = (
    "PriorityWeightAge",
    "PriorityWeightJobSize",
    "PriorityWeightFairshare",
    "PriorityWeightPartition",
    "PriorityWeightQOS",
)
# The slurm.conf keys read here, in the order they are written back.
KEYS = (
    "PriorityType",
    *WEIGHT_KEYS,
    "PriorityMaxAge",
    "PriorityDecayHalfLife",
    "PriorityCalcPeriod",
    "PriorityFavorSmall",
    "PriorityFlags",
    "SchedulerType",
    "SchedulerParameters",
)
# SchedulerParameters options read here: (option, unit in seconds, minimum, maximum) as in slurm.conf(5).
BF_OPTIONS = {
    "bf_interval": (1.0, 1, 10800),
    "bf_resolution": (1.0, 1, 3600),
    "bf_window": (60.0, 1, 43200),
    "bf_max_job_test": (1.0, 1, 1_000_000),
    "bf_node_space_size": (1.0, 2, 2_000_000),
}
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


@dataclass(frozen=True)
class SchedulerSettings:
    """What decides the order and backfilling of jobs on one Slurm cluster (times in seconds)."""

    priority_type: str = "priority/basic"
    weight_age: int = 0
    weight_job_size: int = 0
    weight_fairshare: int = 0
    weight_partition: int = 0
    weight_qos: int = 0
    max_age: float = 7 * DAY
    decay_half_life: float = 7 * DAY  # 0: usage never decays
    calc_period: float = 300.0
    favor_small: bool = False
    priority_flags: tuple[str, ...] = ()
    scheduler_type: str = "sched/backfill"
    bf_interval: float = 30.0
    bf_resolution: float = 60.0
    bf_window: float = DAY
    bf_max_job_test: int = 500
    bf_node_space_size: int | None = None  # None: bf_max_job_test's, as in Slurm
    source: str = field(default="", compare=False)  # the file they came from ("" for defaults)

    @property
    def multifactor(self) -> bool:
        return self.priority_type == "priority/multifactor"

    @property
    def backfill(self) -> bool:
        return self.scheduler_type == "sched/backfill"

    @property
    def node_space_size(self) -> int:
        """Records backfill's resource/time table may hold (bf_node_space_size, else bf_max_job_test)."""
        return self.bf_node_space_size if self.bf_node_space_size is not None else self.bf_max_job_test

    @property
    def fair_tree(self) -> bool:
        """Fair Tree unless a flag asks for the classic (or depth-oblivious) formula."""
        return not {"NO_FAIR_TREE", "DEPTH_OBLIVIOUS"} & set(self.priority_flags)

    def time_scaled(self, k: float) -> SchedulerSettings:
        """The settings on a clock ``k`` times slower: a replay at ``k`` trace seconds per wall
        second runs the cluster's timers, so its simulated twin sees each of them ``k`` times longer."""
        return replace(
            self,
            max_age=self.max_age * k,
            decay_half_life=self.decay_half_life * k,
            calc_period=self.calc_period * k,
            bf_interval=self.bf_interval * k,
            bf_resolution=self.bf_resolution * k,
            bf_window=self.bf_window * k,
        )

    def as_conf(self) -> dict[str, str]:
        """The settings as slurm.conf ``Key=Value`` pairs that read back to the same settings."""
        params = (
            f"bf_interval={_num(self.bf_interval)},bf_max_job_test={self.bf_max_job_test},"
            f"bf_resolution={_num(self.bf_resolution)},bf_window={_num(self.bf_window / 60.0)}"
        )
        if self.bf_node_space_size is not None:
            params += f",bf_node_space_size={self.bf_node_space_size}"
        return {
            "PriorityType": self.priority_type,
            "PriorityWeightAge": str(self.weight_age),
            "PriorityWeightJobSize": str(self.weight_job_size),
            "PriorityWeightFairshare": str(self.weight_fairshare),
            "PriorityWeightPartition": str(self.weight_partition),
            "PriorityWeightQOS": str(self.weight_qos),
            "PriorityMaxAge": format_time(self.max_age),
            "PriorityDecayHalfLife": format_time(self.decay_half_life),
            "PriorityCalcPeriod": _minutes(self.calc_period),
            "PriorityFavorSmall": "YES" if self.favor_small else "NO",
            "PriorityFlags": ",".join(self.priority_flags),
            "SchedulerType": self.scheduler_type,
            "SchedulerParameters": params,
        }

    def describe(self) -> str:
        """One line for command output: the settings a user would check first."""
        if self.multifactor:
            prio = (
                f"multifactor (age {self.weight_age}, size {self.weight_job_size}, fair-share "
                f"{self.weight_fairshare} {'fair tree' if self.fair_tree else 'classic'}, partition "
                f"{self.weight_partition}, QOS {self.weight_qos}; max age {format_time(self.max_age)}, "
                f"half-life {format_time(self.decay_half_life)}, every {_num(self.calc_period / 60.0)} min)"
            )
        else:
            prio = "basic (submit order)"
        sched = (
            f"backfill every {_num(self.bf_interval)} s, window {_num(self.bf_window / 60.0)} min, "
            f"resolution {_num(self.bf_resolution)} s, up to {self.bf_max_job_test} jobs"
            if self.backfill
            else "builtin (strict priority, no backfill)"
        )
        return f"priority {prio}; scheduler {sched}"


def scheduler_settings(conf: SlurmConf) -> SchedulerSettings:
    """The scheduler settings of a parsed slurm.conf; bad values name file, line and key."""
    found: dict[str, tuple[str, str, int | None]] = {}
    wanted = {k.lower(): k for k in KEYS}
    for s in conf.settings:  # the last one wins, as in Slurm
        key = wanted.get(s.key.lower())
        if key is not None:
            found[key] = (s.value, s.file, s.line)
    return settings_from_pairs(found, conf.path)


def read_scheduler_settings(path: str | Path) -> SchedulerSettings:
    return scheduler_settings(read_slurm_conf(path))


def settings_from_show_config(text: str, source: str = "scontrol show config") -> SchedulerSettings:
    """The settings a running slurmctld reports in ``scontrol show config`` (``Key = Value`` lines).

    It prints ``PriorityCalcPeriod`` as ``HH:MM:SS`` and unset values as
    ``(null)``, both read here; keys it leaves out keep Slurm's defaults.
    """
    wanted = {k.lower(): k for k in KEYS}
    found: dict[str, tuple[str, str, int | None]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        key, eq, value = line.partition("=")
        name = wanted.get(key.strip().lower())
        if name is None or not eq:
            continue
        value = value.strip()
        if value and value != "(null)":
            found[name] = (value, source, number)
    return settings_from_pairs(found, source)


def settings_from_mapping(table: Mapping[str, object], where: str) -> SchedulerSettings:
    """Settings from a ``[scheduler]`` table of slurm.conf keys (a TOML spec's); errors name ``where``."""
    wanted = {k.lower(): k for k in KEYS}
    found: dict[str, tuple[str, str, int | None]] = {}
    for key, value in table.items():
        name = wanted.get(str(key).lower())
        if name is None:
            raise SpecError(
                f"unknown key '{key}'; allowed: {', '.join(KEYS)}", file=where, column=f"scheduler.{key}"
            )
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise SpecError(
                f"{key} must be a string or a number, got {value!r}", file=where, column=f"scheduler.{key}"
            )
        found[name] = (str(value), where, None)
    return settings_from_pairs(found, where, prefix="scheduler.")


def settings_from_pairs(
    found: Mapping[str, tuple[str, str, int | None]], source: str, prefix: str = ""
) -> SchedulerSettings:
    """Settings from ``{key: (value, file, line)}``; keys absent keep Slurm's defaults."""
    defaults = SchedulerSettings()
    read = _Pairs(found, prefix)
    flags, calc = read.flags(), read.calc_period(defaults.calc_period)
    bf = _scheduler_parameters(
        read.text("SchedulerParameters"), lambda m: read.fail("SchedulerParameters", m)
    )
    return SchedulerSettings(
        priority_type=read.choice("PriorityType", PRIORITY_TYPES, defaults.priority_type),
        weight_age=read.weight("PriorityWeightAge"),
        weight_job_size=read.weight("PriorityWeightJobSize"),
        weight_fairshare=read.weight("PriorityWeightFairshare"),
        weight_partition=read.weight("PriorityWeightPartition"),
        weight_qos=read.weight("PriorityWeightQOS"),
        max_age=read.duration("PriorityMaxAge", defaults.max_age),
        decay_half_life=read.duration("PriorityDecayHalfLife", defaults.decay_half_life),
        calc_period=calc,
        favor_small=read.yes_no("PriorityFavorSmall"),
        priority_flags=flags,
        scheduler_type=read.choice("SchedulerType", SCHEDULER_TYPES, defaults.scheduler_type),
        bf_interval=bf.get("bf_interval", defaults.bf_interval),
        bf_resolution=bf.get("bf_resolution", defaults.bf_resolution),
        bf_window=bf.get("bf_window", defaults.bf_window),
        bf_max_job_test=int(bf.get("bf_max_job_test", defaults.bf_max_job_test)),
        bf_node_space_size=int(bf["bf_node_space_size"]) if "bf_node_space_size" in bf else None,
        source=source,
    )


class _Pairs:
    """Typed reads of ``{key: (value, file, line)}``; a bad value fails naming its file, line and key."""

    def __init__(self, found: Mapping[str, tuple[str, str, int | None]], prefix: str) -> None:
        self.found = found
        self.prefix = prefix

    def fail(self, key: str, message: str) -> SpecError:
        _, file, line = self.found[key]
        return SpecError(message, file=file, line=line, column=self.prefix + key)

    def text(self, key: str) -> str | None:
        hit = self.found.get(key)
        return hit[0].strip() if hit is not None else None

    def choice(self, key: str, allowed: tuple[str, ...], default: str) -> str:
        value = self.text(key)
        if value is None:
            return default
        if value.lower() not in allowed:
            raise self.fail(key, f"{key}={value} is not supported; use one of {', '.join(allowed)}")
        return value.lower()

    def weight(self, key: str) -> int:
        value = self.text(key)
        if value is None:
            return 0
        if not value.isdigit() or int(value) > 0xFFFFFFFF:
            raise self.fail(key, f"{key}={value} must be a whole number from 0 to 4294967295")
        return int(value)

    def duration(self, key: str, default: float) -> float:
        value = self.text(key)
        if value is None:
            return default
        seconds = parse_time(value)
        if seconds is None:
            raise self.fail(key, f"{key}={value} is not a time; use minutes or D-HH:MM:SS")
        return seconds

    def yes_no(self, key: str) -> bool:
        value = self.text(key)
        if value is None:
            return False
        if value.upper() not in ("YES", "NO"):
            raise self.fail(key, f"{key}={value} must be YES or NO")
        return value.upper() == "YES"

    def flags(self) -> tuple[str, ...]:
        value = self.text("PriorityFlags")
        if value is None:
            return ()
        flags = tuple(f.strip().upper() for f in value.split(",") if f.strip())
        unknown = [f for f in flags if f not in PRIORITY_FLAGS]
        if unknown:
            raise self.fail(
                "PriorityFlags",
                f"unknown PriorityFlags {','.join(unknown)}; known: {', '.join(PRIORITY_FLAGS)}",
            )
        return flags

    def calc_period(self, default: float) -> float:
        value = self.text("PriorityCalcPeriod")
        calc = default if value is None else parse_time(value)
        if calc is None or calc <= 0:
            raise self.fail(
                "PriorityCalcPeriod", f"PriorityCalcPeriod={value} must be a positive number of minutes"
            )
        return calc


def _scheduler_parameters(value: str | None, fail: Callable[[str], SpecError]) -> dict[str, float]:
    """The backfill options of a SchedulerParameters list, in seconds; other options are ignored."""
    out: dict[str, float] = {}
    for item in (value or "").split(","):
        name, eq, raw = item.strip().partition("=")
        spec = BF_OPTIONS.get(name.strip().lower())
        if spec is None:
            continue
        unit, low, high = spec
        raw = raw.strip()
        if not eq or not raw.isdigit() or not low <= int(raw) <= high:
            raise fail(f"SchedulerParameters {name}={raw} must be a whole number from {low} to {high}")
        out[name.strip().lower()] = int(raw) * unit
    return out


def parse_time(text: str) -> float | None:
    """Seconds of a Slurm time string: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``.

    The forms are those of slurm.conf(5) and sbatch(1) ``--time``; None when
    ``text`` is none of them. ``INFINITE``/``UNLIMITED`` are refused: no
    setting read here accepts them.
    """
    m = _TIME.match(text.strip())
    if m is None:
        return None
    days, a, b, c = m.groups()
    if days is not None:  # D-H, D-H:M, D-H:M:S
        hours, minutes, seconds = int(a), int(b or 0), int(c or 0)
        return float(int(days) * 86400 + hours * 3600 + minutes * 60 + seconds)
    if c is not None:  # H:M:S
        return float(int(a) * 3600 + int(b) * 60 + int(c))
    if b is not None:  # M:S
        return float(int(a) * 60 + int(b))
    return float(int(a) * 60)  # M


def format_time(seconds: float) -> str:
    """``D-HH:MM:SS``, the form :func:`parse_time` reads back exactly (whole seconds)."""
    total = int(round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"


def _minutes(seconds: float) -> str:
    """Whole minutes as a bare number (slurm.conf's form), anything else as a time string."""
    return str(int(seconds // 60)) if seconds % 60 == 0 else format_time(seconds)


def _num(value: float) -> str:
    return str(int(value)) if math.isclose(value, round(value)) else f"{value:g}"
