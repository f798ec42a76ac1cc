"""Fields of a checkpoint's config.json, read with their types and ranges checked.

A checkpoint folder is an input like a trace: copied between machines, edited
by hand, written by other versions. Reading ``int(data["window"])`` took a
string of digits, turned ``-3`` into a crash inside ``itertools.islice`` and
``1e9`` into a billion-row array; ``bool("no")`` is true. Each reader here
raises :class:`ValueError` naming the field (``obs.window``), which the
loaders report with the file's path, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any, TypeVar

# No window, layer width or count of a checkpoint comes near this; a larger
# one is a damaged or foreign file, not a network to build.
MAX_SIZE = 4096

_T = TypeVar("_T")


def _name(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def section(data: Any, where: str) -> Mapping[str, Any]:
    """A table of the config (``net``, ``obs``); None: the config has none."""
    if data is None:
        raise ValueError(f"'{where}' is missing")
    if not isinstance(data, Mapping):
        raise ValueError(f"'{where}' must be a table of fields, not {type(data).__name__}")
    return data


def whole(
    data: Mapping[str, Any],
    key: str,
    where: str,
    *,
    least: int = 1,
    most: int = MAX_SIZE,
    default: Any = MISSING,
) -> int:
    """A whole number in ``[least, most]``; ``default`` when the field is absent (MISSING: it is required)."""
    if key not in data:
        if default is MISSING:
            raise ValueError(f"'{_name(where, key)}' is missing")
        return int(default)
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ValueError(
            f"'{_name(where, key)}' must be a whole number from {least} to {most}, not {value!r}"
        )
    return value


def flag(data: Mapping[str, Any], key: str, where: str, *, default: bool) -> bool:
    """True or false (also 1 or 0, as some checkpoints wrote it)."""
    value = data.get(key, default)
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise ValueError(f"'{_name(where, key)}' must be true or false, not {value!r}")


def names(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    """A list of distinct names (a model vocabulary)."""
    value = data.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"'{_name(where, key)}' must be a list of names, not {value!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"'{_name(where, key)}' names a model twice")
    return tuple(value)


def only(data: Mapping[str, Any], known: set[str], where: str) -> None:
    """Refuse fields the reader does not know: they would be dropped without a word."""
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"'{where}' has unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")


def whole_fields(cls: type[_T], data: Any, where: str) -> _T:
    """A dataclass whose fields are all whole numbers (a network's sizes), each checked."""
    table = section(data, where)
    only(table, {f.name for f in fields(cls)}, where)  # type: ignore[arg-type]
    return cls(**{f.name: whole(table, f.name, where, default=f.default) for f in fields(cls)})  # type: ignore[arg-type]


def choice(data: Mapping[str, Any], key: str, where: str, known: list[str], *, default: str) -> str:
    """One of ``known`` (a placement's name)."""
    value = data.get(key, default)
    if value not in known:
        raise ValueError(f"'{_name(where, key)}' must be one of {', '.join(known)}, not {value!r}")
    return str(value)
