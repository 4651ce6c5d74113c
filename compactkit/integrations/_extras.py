"""The one error for an integration imported without its framework installed."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, *, extra: str, integration: str) -> ModuleType:
    """Import ``module``, or raise an ``ImportError`` naming the extra to install.

    Args:
        module: The framework's top-level module (``"agents"``, ``"langchain"``, …).
        extra: The compactkit extra that installs it (``"openai-agents"``, …).
        integration: The integration module asking, for the message.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{integration} needs the {module!r} package, which is not installed: run "
            f"pip install 'compactkit[{extra}]'"
        ) from exc
