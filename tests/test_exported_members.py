"""Every public name of the package is exported from the top level (and nothing private)."""

from __future__ import annotations

import importlib
import pkgutil

import compactkit


def test_all_is_sorted_and_complete() -> None:
    exported = set(compactkit.__all__)

    def isort_key(name: str) -> tuple[int, str]:  # constants, then classes, then functions
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert list(compactkit.__all__) == sorted(compactkit.__all__, key=isort_key)
    for name in exported:
        assert hasattr(compactkit, name), name
    missing = []
    for module_info in pkgutil.walk_packages(compactkit.__path__, "compactkit."):
        if any(part.startswith("_") for part in module_info.name.split(".")):
            continue
        if module_info.name.split(".")[1] in {"cli", "testing"}:
            continue
        module = importlib.import_module(module_info.name)
        for name in getattr(module, "__all__", []):
            if name not in exported:
                missing.append(f"{module_info.name}.{name}")
    assert not missing, f"public names missing from compactkit.__all__: {missing}"
