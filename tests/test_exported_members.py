"""Every public name of the package is exported from the top level (and nothing private).

The core layers export through ``compactkit``; the optional top layers (``compactkit.evals``,
``compactkit.integrations``, whose dependencies are extras) export through their own package
``__init__``, so that ``import compactkit`` never needs an extra.
"""

from __future__ import annotations

import importlib
import pkgutil

import compactkit

# These subpackages list their names themselves.
OWN_EXPORTS = {"checkup", "evals", "integrations", "redis"}
SKIPPED = {"cli", "testing"}
# A backend author's toolkit: importable from its module, not crowding the top level.
# The dry-run toolkit (Governor.preview's result type and its helpers) and the session lease
# protocols for store authors: from their modules.
MODULE_EXPORTS = {
    "compactkit.memory.rules",
    "compactkit.compressors.preview",
    "compactkit.sessions.lease",
}


def isort_key(name: str) -> tuple[int, str]:  # constants, then classes, then functions
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_complete() -> None:
    exported = set(compactkit.__all__)
    assert list(compactkit.__all__) == sorted(compactkit.__all__, key=isort_key)
    for name in exported:
        assert hasattr(compactkit, name), name
    missing = []
    for module_info in pkgutil.walk_packages(compactkit.__path__, "compactkit."):
        parts = module_info.name.split(".")
        if any(part.startswith("_") for part in parts) or parts[1] in SKIPPED:
            continue
        if module_info.name in MODULE_EXPORTS:
            continue
        if parts[1] in OWN_EXPORTS:
            package = importlib.import_module(f"compactkit.{parts[1]}")
            owner, names = f"compactkit.{parts[1]}", set(getattr(package, "__all__", ()))
        else:
            owner, names = "compactkit", exported
        try:
            module = importlib.import_module(module_info.name)
        except ImportError as exc:  # an integration whose extra is not installed says so
            assert "pip install" in str(exc), (module_info.name, exc)
            continue
        for name in getattr(module, "__all__", []):
            if name not in names:
                missing.append(f"{module_info.name}.{name} (export it from {owner})")
    assert not missing, f"public names missing from __all__: {missing}"
