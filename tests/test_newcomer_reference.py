"""Every public name (the front door's, and every layer package's) has an entry in the rendered API reference.

mkdocstrings renders, for a ``::: compactkit.<layer>`` directive, the names in that layer's
``__all__`` that have a docstring (or all of them with ``show_if_no_docstring``), and for a
``::: compactkit.<layer>.<Name>`` directive that one object. This test reads the directives of
``docs/reference/*.md`` the same way (griffe, the loader mkdocstrings uses), so a name exported
from ``compactkit`` but missing from the reference (not in its layer's ``__all__``, or a type
alias without a docstring) fails here instead of silently missing from the site.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import griffe

import compactkit

_REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference"
_DIRECTIVE = re.compile(r"^::: (compactkit[\w.]*)\n((?:    .*\n)*)", re.MULTILINE)


def _rendered_names() -> set[str]:
    package = griffe.load("compactkit")
    names: set[str] = set()
    for page in sorted(_REFERENCE.glob("*.md")):
        for target, options in _DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            obj = package
            for part in target.split(".")[1:]:
                obj = obj[part]
            if not obj.is_module:
                names.add(target.rsplit(".", 1)[-1])
                continue
            show_all = "show_if_no_docstring: true" in options
            listed = re.search(r"members: \[(.*)\]", options)
            exported = obj.exports if listed is None else listed.group(1).split(", ")
            for name in exported or ():
                if show_all or obj[name].docstring is not None:
                    names.add(name)
    return names


def _public_names() -> set[str]:
    """The front door's names and every name a layer package (or ``compactkit.errors``) exports."""
    names = set(compactkit.__all__)
    for info in pkgutil.iter_modules(compactkit.__path__):
        if not info.name.startswith("_") and info.name not in ("cli", "testing"):
            names |= set(importlib.import_module(f"compactkit.{info.name}").__all__)
    return names


def test_every_public_name_is_in_the_api_reference() -> None:
    missing = sorted(_public_names() - _rendered_names())
    assert missing == [], f"public names without an API reference entry: {missing}"
