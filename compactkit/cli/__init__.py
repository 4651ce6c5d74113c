"""The ``compactkit`` command line: one module per command, ``main`` wires them.

Thin: each command parses its flags, calls the library and prints. May import every layer.
"""

from compactkit.cli.main import main

__all__ = ["main"]
