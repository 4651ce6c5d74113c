"""Argument checks every compressor shares: sizes are finite numbers, inputs are snapshots."""

from __future__ import annotations

import math
from collections.abc import Iterable

from compactkit.errors import ConfigError
from compactkit.items.snapshot import MemorySnapshot, require_snapshot

__all__ = ["check_sizes", "snapshot_arg"]


def check_sizes(owner: str, required: Iterable[str] = (), **sizes: object) -> None:
    """Raise ``ConfigError`` unless each size is a finite number, or ``None`` where it is not
    ``required`` (NaN passes every ``x <= 0`` check and would size compactions arbitrarily; a
    string fails deep inside)."""
    needed = set(required)
    for name, value in sizes.items():
        if value is None and name not in needed:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise ConfigError(
                f"{owner}: {name} must be a positive whole number of tokens (or items), got "
                f"{value!r}; pass an int such as {name}=2000"
            )


def snapshot_arg(owner: object, value: object) -> MemorySnapshot:
    """``value`` when it is a snapshot; a ``ConfigError`` naming the compressor otherwise."""
    return require_snapshot(value, f"{type(owner).__name__}.compress()")
