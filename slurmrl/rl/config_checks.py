"""The numbers of a training config checked when it is made, so a bad one fails at once, by name.

A discount above 1 turns the network's outputs into NaN some minutes into a
run, and a negative learning rate reaches torch's optimiser as a traceback;
counts of zero were rounded up in silence. Every trainer's config calls
:func:`check_numbers` from its ``__post_init__``, every environment when it is built.
"""

from __future__ import annotations

from collections.abc import Iterable

from slurmrl.errors import ConfigError


def check_numbers(
    owner: str,
    config: object,
    *,
    counts: Iterable[str] = (),
    fractions: Iterable[str] = (),
    positive: Iterable[str] = (),
    non_negative: Iterable[str] = (),
) -> None:
    """Counts at least 1, fractions in [0, 1], positive numbers above 0 (None: off), the rest not negative."""
    for name in counts:
        if getattr(config, name) < 1:
            raise ConfigError(f"{owner} {name} must be at least 1, got {getattr(config, name)}")
    for name in fractions:
        if not 0.0 <= getattr(config, name) <= 1.0:
            raise ConfigError(f"{owner} {name} must lie in [0, 1], got {getattr(config, name)}")
    for name in positive:
        value = getattr(config, name)
        if value is not None and not value > 0.0:
            raise ConfigError(f"{owner} {name} must be positive, got {value}")
    for name in non_negative:
        if not getattr(config, name) >= 0.0:
            raise ConfigError(f"{owner} {name} must not be negative, got {getattr(config, name)}")
