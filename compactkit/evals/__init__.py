"""Eval suites for compressors (see docs/evals.md)."""
