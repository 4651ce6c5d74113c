"""The conformance kit: hold your own memory or session store to compactkit's contract.

An agent keeps working on a custom backend (Redis, MongoDB, your company's session service) only
if it keeps the contract every built-in backend keeps: the three writes become items the next
prompt can use, a tool output without a call id is an error, the summary is never collapsed
into the items, a compaction is applied atomically or not at all, a failed compaction is
reported instead of swallowed, two session ids never share state, concurrent writers lose
nothing, and a checkpoint resumes the session exactly. Each of those is a ``Rule`` here: one
sentence and a check that drives your backend and says, when it fails, what it did instead.

With pytest, subclass and give one fixture — everything else is the kit's::

    from compactkit.testing.conformance import MemoryConformance

    class TestMyMemory(MemoryConformance):
        @pytest.fixture
        def memory_factory(self):
            return lambda session_id, **options: MyMemory(session_id, **options)

Each rule becomes a test (``test_memory_rule[tool-output-needs-call-id]``). Declare what your
backend offers with class attributes: ``thread_safe`` (one object used from many threads),
``persistent`` (``factory(id)`` twice opens the same stored session, as two processes would),
``options`` (the factory takes ``BaseMemory``'s keyword options) and ``recall`` (it offers
``recall``/``expand``); rules needing what you do not declare are not generated. ``SessionStoreConformance`` does the same for a
``SessionStore`` with a ``store_factory`` fixture (a callable returning a fresh, empty store);
declare ``leases`` when it leases sessions to runs (``LeasingStore``).

Without pytest, ``check_memory(factory)`` and ``check_store(factory)`` run every rule and return
a ``ConformanceReport``. The kit itself imports nothing from pytest: its base classes only use
pytest's ``pytest_generate_tests`` protocol.
"""

from __future__ import annotations

from typing import Any

from compactkit.testing.conformance import (  # noqa: F401 (they register their rules)
    _memory_compaction,
    _memory_recall,
    _memory_sessions,
    _store_leases,
)
from compactkit.testing.conformance._kit import (
    ConformanceFailure,
    ConformanceReport,
    Rule,
    RuleFailure,
    run_rules,
)
from compactkit.testing.conformance._memory_sessions import (
    OPERATIONS,
    operations_keep_invariants,
)
from compactkit.testing.conformance._memory_writes import RULES as _MEMORY_RULES
from compactkit.testing.conformance._stores import HOSTILE_IDS, StoreFactory, StoreKit
from compactkit.testing.conformance._stores import RULES as _STORE_RULES
from compactkit.testing.conformance._support import MemoryFactory, MemoryKit

__all__ = [
    "HOSTILE_IDS",
    "OPERATIONS",
    "ConformanceFailure",
    "ConformanceReport",
    "MemoryConformance",
    "MemoryFactory",
    "MemoryKit",
    "Rule",
    "RuleFailure",
    "SessionStoreConformance",
    "StoreFactory",
    "StoreKit",
    "check_memory",
    "check_store",
    "memory_rules",
    "operations_keep_invariants",
    "store_rules",
]


def memory_rules() -> list[Rule[MemoryKit]]:
    """Every memory rule, in the order they run."""
    return list(_MEMORY_RULES)


def store_rules() -> list[Rule[StoreKit]]:
    """Every session-store rule, in the order they run."""
    return list(_STORE_RULES)


def _capabilities(
    *, thread_safe: bool, persistent: bool, options: bool, recall: bool = False
) -> set[str]:
    named = {
        "threads": thread_safe,
        "persistent": persistent,
        "options": options,
        "recall": recall,
    }
    return {name for name, offered in named.items() if offered}


def check_memory(
    factory: MemoryFactory,
    *,
    thread_safe: bool = True,
    persistent: bool = False,
    options: bool = True,
    recall: bool = False,
    rules: list[str] | None = None,
) -> ConformanceReport:
    """Run the memory rules against ``factory`` and report which it keeps.

    Args:
        factory: ``factory(session_id, **options)`` returns the memory of ``session_id``.
        thread_safe: One memory object may be used from several threads.
        persistent: ``factory(id)`` twice opens the same stored session.
        options: The factory takes ``BaseMemory``'s keyword options (``policy``,
            ``compressor``, ``on_compact``, ``accept_unknown_call_ids``, ``summary_role``).
        recall: The memory offers ``recall(query)`` / ``expand(ref)`` (``Recallable``).
        rules: Run only the rules with these names.
    """
    kit = MemoryKit(factory, thread_safe=thread_safe, persistent=persistent, options=options)
    chosen = [r for r in _MEMORY_RULES if rules is None or r.name in rules]
    capabilities = _capabilities(
        thread_safe=thread_safe, persistent=persistent, options=options, recall=recall
    )
    return run_rules(chosen, kit, capabilities)


def check_store(
    factory: StoreFactory,
    *,
    hostile_ids: list[str] | None = None,
    leases: bool = False,
    rules: list[str] | None = None,
) -> ConformanceReport:
    """Run the session-store rules against ``factory`` (a fresh, empty store per call).

    Args:
        factory: Returns a fresh, empty ``SessionStore``.
        hostile_ids: The ids the store must round-trip (``HOSTILE_IDS`` by default).
        leases: The store leases sessions to runs (``compactkit.sessions.lease.LeasingStore``):
            run the lease rules too.
        rules: Run only the rules with these names.
    """
    kit = StoreKit(factory, list(HOSTILE_IDS if hostile_ids is None else hostile_ids))
    chosen = [r for r in _STORE_RULES if rules is None or r.name in rules]
    return run_rules(chosen, kit, {"leases"} if leases else set())


class MemoryConformance:
    """pytest base class: subclass as ``Test<Backend>`` and define the ``memory_factory``
    fixture (``factory(session_id, **options) -> memory``); each rule becomes a test."""

    thread_safe: bool = True
    """One memory object may be used from several threads at once."""
    persistent: bool = False
    """``factory(id)`` twice opens the same stored session (two handles, as two processes)."""
    options: bool = True
    """The factory takes ``BaseMemory``'s keyword options."""
    recall: bool = False
    """The memory offers ``recall(query)`` / ``expand(ref)`` (``compactkit.memory.Recallable``)."""

    def pytest_generate_tests(self, metafunc: Any) -> None:
        """Parametrize ``memory_rule`` with the rules this backend's capabilities cover."""
        if "memory_rule" in metafunc.fixturenames:
            capabilities = _capabilities(
                thread_safe=self.thread_safe,
                persistent=self.persistent,
                options=self.options,
                recall=self.recall,
            )
            chosen = [r for r in _MEMORY_RULES if r.needs <= capabilities]
            metafunc.parametrize("memory_rule", chosen, ids=[r.name for r in chosen])

    def test_memory_rule(self, memory_factory: MemoryFactory, memory_rule: Rule[MemoryKit]) -> None:
        """The backend keeps ``memory_rule``."""
        memory_rule.run(
            MemoryKit(
                memory_factory,
                thread_safe=self.thread_safe,
                persistent=self.persistent,
                options=self.options,
            )
        )


class SessionStoreConformance:
    """pytest base class: subclass as ``Test<Store>`` and define the ``store_factory`` fixture
    (a callable returning a fresh, empty store); each rule becomes a test."""

    hostile_ids: list[str] = HOSTILE_IDS
    """The ids the store must round-trip; narrow it when your backend refuses some (say so)."""
    leases: bool = False
    """The store leases sessions to runs (``LeasingStore``): the lease rules apply."""

    def pytest_generate_tests(self, metafunc: Any) -> None:
        """Parametrize ``store_rule`` with every store rule the store's capabilities cover."""
        if "store_rule" in metafunc.fixturenames:
            offered = {"leases"} if self.leases else set()
            chosen = [r for r in _STORE_RULES if r.needs <= offered]
            metafunc.parametrize("store_rule", chosen, ids=[r.name for r in chosen])

    def test_store_rule(self, store_factory: StoreFactory, store_rule: Rule[StoreKit]) -> None:
        """The store keeps ``store_rule``."""
        store_rule.run(StoreKit(store_factory, list(self.hostile_ids)))
