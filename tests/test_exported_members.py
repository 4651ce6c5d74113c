"""Every public name is exported from its layer's package, and the top level is the front door.

``compactkit`` exports what the three jobs need; every other public name is importable from its
layer's package (``compactkit.governance``, ``compactkit.sql``, …), which is what the API
reference documents. A name that moved off the top level still resolves there for one release,
with a ``DeprecationWarning`` naming the import to use instead.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from types import ModuleType

import pytest

import compactkit

SKIPPED = {"cli", "testing"}
# Toolkits importable from their module, not crowding their layer: the memory rules and the
# session lease protocols for backend authors, the dry-run toolkit (``Governor.preview``'s types),
# the compaction cost arithmetic (``CompactionEvent.cost``).
MODULE_EXPORTS = {
    "compactkit.memory.rules",
    "compactkit.memory.lease",
    "compactkit.compressors.preview",
    "compactkit.governance.cost",
    "compactkit.sessions.lease",
}


def isort_key(name: str) -> tuple[int, str]:  # constants, then classes, then functions
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def layer_packages() -> dict[str, list[str]]:
    """``{"compactkit.budget": [...its __all__...], ...}`` for every public layer (a package, or
    ``compactkit.errors``)."""
    layers = {}
    for info in pkgutil.iter_modules(compactkit.__path__):
        if not info.name.startswith("_") and info.name not in SKIPPED:
            package = importlib.import_module(f"compactkit.{info.name}")
            layers[package.__name__] = list(package.__all__)
    return layers


def exported(layer: str, name: str) -> object:
    """``layer.name``; a function named like its module (``compactkit.runtime.recall_tools``) is
    shadowed on the package by its module once that module is imported, so read it from there."""
    value = getattr(importlib.import_module(layer), name)
    return getattr(value, name) if isinstance(value, ModuleType) else value


def test_every_public_name_is_exported_from_its_layer_package() -> None:
    layers = layer_packages()
    missing = []
    for module_info in pkgutil.walk_packages(compactkit.__path__, "compactkit."):
        parts = module_info.name.split(".")
        if any(part.startswith("_") for part in parts) or parts[1] in SKIPPED:
            continue
        if module_info.name in MODULE_EXPORTS or len(parts) == 2:
            continue
        try:
            module = importlib.import_module(module_info.name)
        except ImportError as exc:  # an integration whose extra is not installed says so
            assert "pip install" in str(exc), (module_info.name, exc)
            continue
        layer = f"compactkit.{parts[1]}"
        for name in getattr(module, "__all__", []):
            if name not in layers[layer]:
                missing.append(f"{module_info.name}.{name} (export it from {layer})")
    assert not missing, f"public names missing from their layer's __all__: {missing}"


def test_layer_exports_are_sorted_and_resolve() -> None:
    for layer, names in layer_packages().items():
        package = importlib.import_module(layer)
        for name in names:
            assert getattr(package, name) is not None, f"{layer}.{name}"


def test_front_door_is_sorted_and_each_name_comes_from_a_layer() -> None:
    assert list(compactkit.__all__) == sorted(compactkit.__all__, key=isort_key)
    layers = layer_packages()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a front-door name is never deprecated
        for name in compactkit.__all__:
            value = getattr(compactkit, name)
            homes = [
                layer
                for layer, names in layers.items()
                if name in names and exported(layer, name) is value
            ]
            assert homes, f"compactkit.{name} is exported by no layer package"


@pytest.mark.parametrize("name", sorted(compactkit._MOVED))
def test_a_moved_name_still_works_with_a_warning_naming_its_new_import(name: str) -> None:
    home = compactkit._MOVED[name]
    assert name not in compactkit.__all__
    with pytest.warns(DeprecationWarning, match=rf"`from {home} import {name}`"):
        value = getattr(compactkit, name)
    assert value is exported(home, name)


def test_a_moved_name_warns_at_the_line_that_imports_it() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        exec("from compactkit import group_items", {})
    assert caught[0].filename == "<string>"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from compactkit.items import group_items  # the new import is silent

    assert callable(group_items)


def test_the_front_door_is_about_fifty_names_with_the_plain_list_entry_point() -> None:
    assert 40 <= len(compactkit.__all__) <= 60
    assert {"compact_messages", "MessageCompactor", "FunctionCompressor", "Agent"} <= set(
        compactkit.__all__
    )
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        compactkit.nothing_here  # noqa: B018
