"""The machinery of the conformance kit: rules, the failure they raise, and the report.

A rule is one sentence of the contract plus a check: a function that drives a backend and raises
``ConformanceFailure`` (an ``AssertionError``) naming what the backend did instead. The checks use
the small helpers here (``expect``, ``same``, ``raises``) rather than ``assert`` statements, so
that they work without pytest's assertion rewriting and under ``python -O``, and so that every
failure reads as a sentence.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = [
    "ConformanceFailure",
    "ConformanceReport",
    "RuleFailure",
    "Rule",
    "expect",
    "raises",
    "same",
]

KitT = TypeVar("KitT")


class ConformanceFailure(AssertionError):
    """A backend broke a rule of the contract; the message says which and how."""


@dataclass(frozen=True)
class Rule(Generic[KitT]):
    """One rule of a contract and the check that proves a backend keeps it."""

    name: str
    """A short stable id (``tool-output-needs-call-id``): the pytest test id."""
    statement: str
    """The rule as one sentence a backend author can act on."""
    check: Callable[[KitT], None] = field(repr=False)
    """Drives a backend through the kit; raises ``ConformanceFailure`` when the rule is broken."""
    needs: frozenset[str] = frozenset()
    """Capabilities the backend must declare for this rule to apply (``threads``,
    ``persistent``, ``options``, ``recall``)."""

    def run(self, kit: KitT) -> None:
        """Run the check; any failure is re-raised as a ``ConformanceFailure`` naming the rule.

        A backend that raises something unexpected (a ``TypeError`` from a missing argument, a
        driver error) fails the rule too: the message keeps its type, text and where it came
        from.
        """
        try:
            self.check(kit)
        except ConformanceFailure as exc:
            raise ConformanceFailure(f"[{self.name}] {self.statement}\n  broken: {exc}") from None
        except Exception as exc:
            where = _origin(exc)
            raise ConformanceFailure(
                f"[{self.name}] {self.statement}\n  broken: the backend raised "
                f"{type(exc).__name__}: {exc}{where}"
            ) from exc

    def __str__(self) -> str:
        return self.name


def _origin(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" (at {last.filename}:{last.lineno} in {last.name})"


@dataclass(frozen=True)
class RuleFailure:
    """A rule a backend broke, and how."""

    rule: str
    """The rule's name."""
    message: str
    """The readable failure: the rule's statement and what the backend did instead."""


@dataclass
class ConformanceReport:
    """What ``check_memory`` / ``check_store`` found: rules kept, broken and not applicable."""

    passed: list[str] = field(default_factory=list)
    """Names of the rules the backend keeps."""
    failures: list[RuleFailure] = field(default_factory=list)
    """The rules it breaks, with readable messages."""
    not_run: list[tuple[str, str]] = field(default_factory=list)
    """``(rule, why)`` for rules that need a capability the backend did not declare."""

    @property
    def ok(self) -> bool:
        """``True`` when no rule failed."""
        return not self.failures

    def failed(self, rule: str) -> bool:
        """Whether the rule named ``rule`` failed."""
        return any(failure.rule == rule for failure in self.failures)

    def raise_for_failures(self) -> None:
        """Raise one ``ConformanceFailure`` listing every broken rule (nothing when ok)."""
        if self.failures:
            raise ConformanceFailure(str(self))

    def __str__(self) -> str:
        lines = [
            f"{len(self.passed)} rules kept, {len(self.failures)} broken, "
            f"{len(self.not_run)} not applicable"
        ]
        lines += [failure.message for failure in self.failures]
        return "\n".join(lines)


def run_rules(rules: list[Rule[KitT]], kit: KitT, capabilities: set[str]) -> ConformanceReport:
    """Run every rule whose needs ``capabilities`` covers; collect the outcome of each."""
    report = ConformanceReport()
    for rule in rules:
        missing = sorted(rule.needs - capabilities)
        if missing:
            report.not_run.append((rule.name, f"needs {', '.join(missing)}"))
            continue
        try:
            rule.run(kit)
        except ConformanceFailure as exc:
            report.failures.append(RuleFailure(rule.name, str(exc)))
        else:
            report.passed.append(rule.name)
    return report


# -- helpers the checks use ----------------------------------------------------------------------


def expect(condition: object, message: str) -> None:
    """Fail with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ConformanceFailure(message)


def same(actual: Any, expected: Any, what: str) -> None:
    """Fail unless ``actual == expected``; the message shows both."""
    if actual != expected:
        raise ConformanceFailure(f"{what}: expected {_short(expected)}, got {_short(actual)}")


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


@contextmanager
def raises(
    error: type[BaseException] | tuple[type[BaseException], ...],
    *,
    doing: str,
    match: str | None = None,
) -> Iterator[None]:
    """Fail unless the block raises ``error`` (with ``match`` found in its message).

    ``doing`` names the call for the message: ``add_tool_output(None, 'x')``.
    """
    names = " or ".join(e.__name__ for e in error) if isinstance(error, tuple) else error.__name__
    saying = f" saying {match!r}" if match else ""
    try:
        yield
    except ConformanceFailure:
        raise
    except error as exc:
        if match is not None and not re.search(match, str(exc)):
            raise ConformanceFailure(
                f"{doing} raised {type(exc).__name__} as it should, but its message "
                f"{str(exc)!r} does not say {match!r}"
            ) from exc
        return
    except Exception as exc:
        raise ConformanceFailure(
            f"{doing} should raise {names}{saying}; it raised {type(exc).__name__}: {exc}"
        ) from exc
    raise ConformanceFailure(f"{doing} should raise {names}{saying}; it returned normally")
