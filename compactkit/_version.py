"""The package version, in a module of its own so that layers can read it without importing
the top level (which names every layer)."""

__version__ = "0.1.0"
