"""Names a package exports but loads with their module on first use (PEP 562).

A package ``__init__`` lists ``{name: module}`` and installs the pair of module hooks this
builds::

    __getattr__, __dir__ = lazy_exports(globals(), {"Governor": "compactkit.runtime.governor"})

so that importing the package loads none of those modules, and ``package.Governor`` imports
``compactkit.runtime.governor`` once and keeps the value. ``moved`` names are the ones that left
the package's surface: they still resolve, from their new home, with a ``DeprecationWarning``
that names the import to use (and are not cached, so every use says so).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_exports(
    namespace: MutableMapping[str, Any],
    lazy: Mapping[str, str],
    moved: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``.

    Args:
        namespace: The package's ``globals()`` (its ``__name__``; ``__all__`` is read at call
            time, so it may be defined after the hooks).
        lazy: ``{name: module that defines it}`` for the names loaded on first use.
        moved: ``{name: package to import it from now}`` for deprecated names.
    """
    package = namespace["__name__"]
    moved = moved or {}

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
            namespace[name] = value
            return value
        home = moved.get(name)
        if home is not None:
            warnings.warn(
                f"{package}.{name} is deprecated and leaves the top level in the next release: "
                f"use `from {home} import {name}`",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(importlib.import_module(home), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__
