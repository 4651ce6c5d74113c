"""The conformance kit can fail: the docs' toy memory passes it, and each variant breaking one
rule is reported with a readable failure naming that rule (a kit that cannot fail is no kit).

The toy ``DictMemory`` is taken from docs/memory.md itself, so the backend the docs show is the
one proven here.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from compactkit.errors import SessionBusyError, SessionNotFoundError
from compactkit.items import Message
from compactkit.items.snapshot import CompactResult
from compactkit.sessions import FileSessionStore, InMemorySessionStore
from compactkit.sessions.lease import SessionLease
from compactkit.sessions.session import AgentSession, SessionState
from compactkit.testing.conformance import (
    ConformanceReport,
    check_memory,
    check_store,
    memory_rules,
    store_rules,
)

pytest_plugins = ["pytester"]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "memory.md"


def _docs_namespace() -> dict[str, Any]:
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS.read_text(), re.M | re.S)
    source = next(b for b in blocks if "class DictMemory(BaseMemory)" in b)
    namespace: dict[str, Any] = {"__name__": "docs_dict_memory"}
    exec(compile(source, "docs/memory.md", "exec"), namespace)
    return namespace


DictMemory: Any = _docs_namespace()["DictMemory"]


def check(memory_class: Any, *, shared_object: bool = False, **capabilities: Any) -> Any:
    records: dict[str, Any] = {}
    if shared_object:
        one = memory_class("one", records)
        return check_memory(lambda session_id, **options: one, persistent=True, **capabilities)
    return check_memory(
        lambda session_id, **options: memory_class(session_id, records, **options),
        persistent=True,
        **capabilities,
    )


def readable(report: ConformanceReport, rule: str) -> str:
    """The failure message of ``rule``: it names the rule, states it and says what broke."""
    (message,) = [f.message for f in report.failures if f.rule == rule]
    rules: list[Any] = [*memory_rules(), *store_rules()]
    statement = next(r.statement for r in rules if r.name == rule)
    assert message.startswith(f"[{rule}] {statement}\n  broken: ")
    return message


def test_the_docs_toy_memory_keeps_every_rule() -> None:
    report = check(DictMemory)
    assert report.ok, str(report)
    offered = [r.name for r in memory_rules() if "recall" not in r.needs]
    assert report.passed == offered
    assert [name for name, _ in report.not_run] == [
        r.name for r in memory_rules() if "recall" in r.needs
    ]


# -- one broken rule per variant ----------------------------------------------------------------


class DropsToolOutputWithoutCallId(DictMemory):  # type: ignore[misc, valid-type]
    def add_tool_output(self, call_id: Any, output: Any, **fields: Any) -> None:
        if call_id:
            super().add_tool_output(call_id, output, **fields)


class CollapsesSummaryIntoItems(DictMemory):  # type: ignore[misc, valid-type]
    """Keeps the summary as an ordinary first message, the way many hand-written memories do."""

    def apply(self, result: CompactResult) -> bool:
        applied: bool = super().apply(result)
        record = self._r
        if applied and record["summary"]:
            text = Message(role="user", content=f"Summary: {record['summary']}", seq=10_000)
            record.update(summary="", active=[text, *record["active"]])
        return applied


class NonAtomicApply(DictMemory):  # type: ignore[misc, valid-type]
    """Writes the new summary before it checks the result, so a refused result leaves it."""

    def apply(self, result: CompactResult) -> bool:
        if result.changed:
            self._r["summary"] = result.snapshot.summary
        return bool(super().apply(result))


class IgnoresTheSessionId(DictMemory):  # type: ignore[misc, valid-type]
    def __init__(self, session_id: str, records: dict[str, Any], **options: Any) -> None:
        super().__init__("the one session", records, **options)


class SwallowsCompactionFailures(DictMemory):  # type: ignore[misc, valid-type]
    """Hides failed compactions from on_compact and last_compaction, and eats compressor bugs."""

    def _record(self, result: CompactResult) -> None:
        if result.outcome != "failed":
            super()._record(result)

    def _write(self, items: Sequence[Any]) -> None:
        with contextlib.suppress(RuntimeError):
            super()._write(items)


class AppliesFailedResults(DictMemory):  # type: ignore[misc, valid-type]
    def apply(self, result: CompactResult) -> bool:
        if result.outcome in ("failed", "unchanged"):
            result = result.model_copy(update={"outcome": "compacted"})
        return bool(super().apply(result))


class AppliesStaleResults(DictMemory):  # type: ignore[misc, valid-type]
    """Skips the version check: a result from an old snapshot overwrites newer writes."""

    def apply(self, result: CompactResult) -> bool:
        version = self._r["version"]
        result = result.model_copy(
            update={"snapshot": result.snapshot.model_copy(update={"version": version})}
        )
        return bool(super().apply(result))


class LosesConcurrentWrites(DictMemory):  # type: ignore[misc, valid-type]
    """Reads, then writes back, without holding the lock: concurrent appends overwrite."""

    def _append(self, items: Sequence[Any]) -> None:
        record = self._r
        before = list(record["active"])
        super()._append(items)
        added = record["active"][len(before) :]
        time.sleep(0.001)  # another thread's append lands here
        record["active"] = before + added


class DeletesWhatItFolds(DictMemory):  # type: ignore[misc, valid-type]
    def apply(self, result: CompactResult) -> bool:
        applied = bool(super().apply(result))
        record = self._r
        kept = {item.seq for item in record["active"]}
        record["history"] = {s: i for s, i in record["history"].items() if s in kept}
        return applied


class ReusesSeqsAfterClear(DictMemory):  # type: ignore[misc, valid-type]
    def clear(self) -> None:
        super().clear()
        self._r["next_seq"] = 1


class StoresHalfABatch(DictMemory):  # type: ignore[misc, valid-type]
    def _append(self, items: Sequence[Any]) -> None:
        for item in items:
            super()._append([item])


class ForgetsPins(DictMemory):  # type: ignore[misc, valid-type]
    def apply(self, result: CompactResult) -> bool:
        applied = bool(super().apply(result))
        record = self._r
        record["active"] = [i.model_copy(update={"pinned": False}) for i in record["active"]]
        return applied


class RestoresWithoutCallIds(DictMemory):  # type: ignore[misc, valid-type]
    def restore(self, snapshot: Any, *, history: Any = ()) -> None:
        super().restore(snapshot, history=history)
        self._r["calls"] = type(self._r["calls"])()


class RestoresOverNewerAppends(DictMemory):  # type: ignore[misc, valid-type]
    """Restores a checkpoint even when another worker appended since: their turns vanish."""

    def restore(self, snapshot: Any, *, history: Any = ()) -> None:
        self._r["history"] = {}
        super().restore(snapshot, history=history)


BROKEN: list[tuple[Any, str, dict[str, Any]]] = [
    (DropsToolOutputWithoutCallId, "tool-output-needs-call-id", {}),
    (CollapsesSummaryIntoItems, "summary-is-its-own-message", {}),
    (NonAtomicApply, "stale-results-are-refused", {}),
    (IgnoresTheSessionId, "a-new-session-starts-empty", {}),
    (IgnoresTheSessionId, "sessions-never-share-state", {}),
    (DictMemory, "each-session-gets-its-own-memory", {"shared_object": True}),
    (SwallowsCompactionFailures, "failed-compaction-is-reported-not-swallowed", {}),
    (AppliesFailedResults, "failed-results-change-nothing", {}),
    (AppliesStaleResults, "stale-results-are-refused", {}),
    (AppliesStaleResults, "a-stale-result-from-another-handle-is-refused", {}),
    (LosesConcurrentWrites, "concurrent-writers-lose-nothing", {}),
    (DeletesWhatItFolds, "history-keeps-archived-items", {}),
    (ReusesSeqsAfterClear, "clear-forgets-but-never-reuses-seqs", {}),
    (StoresHalfABatch, "a-batch-is-all-or-nothing", {}),
    (ForgetsPins, "pins-survive-compaction", {}),
    (RestoresWithoutCallIds, "restore-round-trips", {}),
    (RestoresWithoutCallIds, "checkpoint-round-trips-through-a-store", {}),
    (RestoresOverNewerAppends, "restore-never-deletes-newer-appends", {}),
]


@pytest.mark.parametrize(
    ("memory_class", "rule", "how"),
    BROKEN,
    ids=[f"{cls.__name__}-{rule}" for cls, rule, _ in BROKEN],
)
def test_each_broken_rule_is_reported(memory_class: Any, rule: str, how: dict[str, Any]) -> None:
    report = check(memory_class, **how)
    assert report.failed(rule), f"{memory_class.__name__} passed {rule!r}:\n{report}"
    message = readable(report, rule)
    assert len(message) < 1200  # a sentence, not a dump


def test_the_failure_says_what_the_backend_did() -> None:
    messages = {
        cls.__name__: readable(check(cls, **how), rule)
        for cls, rule, how in BROKEN
        if (cls, rule)
        in (
            (DropsToolOutputWithoutCallId, "tool-output-needs-call-id"),
            (CollapsesSummaryIntoItems, "summary-is-its-own-message"),
            (IgnoresTheSessionId, "a-new-session-starts-empty"),
        )
    }
    assert messages["DropsToolOutputWithoutCallId"].endswith(
        "add_tool_output(None, 'lost?') should raise ConfigError saying 'call id'; it returned "
        "normally"
    )
    assert (
        "memory.summary after a compaction: expected 'said one', got ''"
        in (messages["CollapsesSummaryIntoItems"])
    )
    assert re.search(
        r"already holds \[.*'secret of another session'", messages["IgnoresTheSessionId"]
    )


def test_a_shared_factory_is_named() -> None:
    message = readable(check(DictMemory, shared_object=True), "each-session-gets-its-own-memory")
    assert "returned the same DictMemory object for sessions" in message


def test_a_backend_crashing_inside_a_rule_fails_it_with_the_cause() -> None:
    class Crashes(DictMemory):  # type: ignore[misc, valid-type]
        def history(self) -> Any:
            raise TypeError("history() takes 2 positional arguments")

    report = check(Crashes, rules=["history-keeps-archived-items"])
    message = readable(report, "history-keeps-archived-items")
    assert "the backend raised TypeError: history() takes 2 positional arguments" in message


def test_rules_needing_an_undeclared_capability_are_listed_not_passed() -> None:
    report = check(DictMemory, thread_safe=False, options=False)
    needing = {r.name for r in memory_rules() if r.needs - {"persistent"}}
    assert {name for name, _ in report.not_run} == needing
    assert needing.isdisjoint(report.passed) and report.ok


# -- stores ---------------------------------------------------------------------------------------


class LiveObjectStore(InMemorySessionStore):
    """Keeps the live session, so later writes change what was 'saved'."""

    def __init__(self) -> None:
        super().__init__()
        self._live: dict[str, AgentSession] = {}

    def save(self, session: AgentSession) -> None:
        super().save(session)
        self._live[session.session_id] = session

    def load(self, session_id: str) -> SessionState:
        super().load(session_id)
        return self._live[session_id].state()


class SanitisingStore(InMemorySessionStore):
    """Maps ids to 'safe' names, so a/b and a:b collide."""

    def save(self, session: AgentSession) -> None:
        renamed = AgentSession(session_id=re.sub(r"[^a-z0-9]", "_", session.session_id.lower()))
        renamed.memory.restore(session.memory.snapshot(), history=session.memory.history())
        super().save(renamed)

    def load(self, session_id: str) -> SessionState:
        return super().load(re.sub(r"[^a-z0-9]", "_", session_id.lower()))


class PlainKeyErrorStore(InMemorySessionStore):
    def load(self, session_id: str) -> SessionState:
        try:
            return super().load(session_id)
        except SessionNotFoundError:
            raise KeyError(session_id) from None


class TearingStore(InMemorySessionStore):
    """Writes the metadata and the memory in two steps: a reader can see one without the other."""

    def __init__(self) -> None:
        super().__init__()
        self._meta: dict[str, Any] = {}

    def save(self, session: AgentSession) -> None:
        self._meta[session.session_id] = dict(session.metadata)
        time.sleep(0.001)
        super().save(session)

    def load(self, session_id: str) -> SessionState:
        state = super().load(session_id)
        return state.model_copy(update={"metadata": self._meta[session_id]})


@pytest.mark.parametrize(
    ("store_class", "rule"),
    [
        (LiveObjectStore, "a-save-replaces-and-is-a-copy"),
        (SanitisingStore, "hostile-ids-round-trip"),
        (SanitisingStore, "saved-sessions-never-share-state"),
        (PlainKeyErrorStore, "unknown-session-is-a-clear-error"),
        (TearingStore, "concurrent-saves-never-tear"),
    ],
)
def test_each_broken_store_rule_is_reported(store_class: Any, rule: str) -> None:
    report = check_store(store_class)
    assert report.failed(rule), f"{store_class.__name__} passed {rule!r}:\n{report}"
    readable(report, rule)


def test_the_in_memory_store_keeps_every_rule() -> None:
    report = check_store(InMemorySessionStore)
    assert report.ok, str(report)


class FreeForAllLeases(FileSessionStore):
    """Hands every caller the same lease: nobody ever waits, the token never grows."""

    def acquire(self, session_id: str, **options: Any) -> SessionLease:
        holder = options.get("holder") or "anyone"
        return SessionLease(session_id, holder, 1, datetime.now(timezone.utc), 0, "nowhere")

    def release(self, lease: SessionLease) -> None:
        pass


class UnfencedSaves(FileSessionStore):
    """Saves under any lease, lost or not."""

    def save(self, session: AgentSession) -> None:
        lease, session.lease = session.lease, None
        try:
            if lease is not None:
                self.release(self.acquire(session.session_id, timeout=0.0))
            super().save(session)
        except SessionBusyError:
            self._save_locked(session, self.path(session.session_id))
        finally:
            session.lease = lease


@pytest.mark.parametrize(
    ("store_class", "rule"),
    [
        (FreeForAllLeases, "a-held-lease-makes-others-wait"),
        (FreeForAllLeases, "every-acquisition-gets-a-larger-token"),
        (UnfencedSaves, "a-save-under-a-lost-lease-is-refused"),
    ],
)
def test_each_broken_lease_rule_is_reported(store_class: Any, rule: str, tmp_path: Path) -> None:
    folders = iter(range(1000))
    report = check_store(lambda: store_class(tmp_path / f"s{next(folders)}"), leases=True)
    assert report.failed(rule), f"{store_class.__name__} passed {rule!r}:\n{report}"
    readable(report, rule)


def test_lease_rules_apply_only_to_stores_declaring_leases(tmp_path: Path) -> None:
    folders = iter(range(1000))
    report = check_store(lambda: FileSessionStore(tmp_path / f"s{next(folders)}"), leases=True)
    assert report.ok, str(report)
    leasing = [r.name for r in store_rules() if "leases" in r.needs]
    assert set(leasing) <= set(report.passed) and len(leasing) == 4
    plain = check_store(InMemorySessionStore)
    assert sorted(name for name, _ in plain.not_run) == sorted(leasing)


# -- through pytest, as a user runs it ------------------------------------------------------------


def test_pytest_reports_the_broken_rule_by_name(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mine=f"""
import pytest
from compactkit.testing.conformance import MemoryConformance

exec(compile({_docs_source()!r}, "docs", "exec"))


class Forgiving(DictMemory):
    def add_tool_output(self, call_id, output, **fields):
        if call_id:
            super().add_tool_output(call_id, output, **fields)


class TestMine(MemoryConformance):
    thread_safe = False

    @pytest.fixture
    def memory_factory(self):
        records = {{}}
        return lambda session_id, **options: Forgiving(session_id, records, **options)
"""
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    expected = len([r for r in memory_rules() if r.needs <= {"options"}])
    result.assert_outcomes(passed=expected - 1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ConformanceFailure: [[]tool-output-needs-call-id[]] A tool output without a call id*",
            "*broken: add_tool_output(None, 'lost?') should raise ConfigError*returned normally",
            "FAILED test_mine.py::TestMine::test_memory_rule[[]tool-output-needs-call-id[]]*",
        ]
    )


def _docs_source() -> str:
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS.read_text(), re.M | re.S)
    return next(b for b in blocks if "class DictMemory(BaseMemory)" in b)


def test_the_kit_runs_without_pytest_installed() -> None:
    code = (
        "import sys\n"
        "sys.modules['pytest'] = None  # as if pytest were not installed\n"
        "sys.modules['hypothesis'] = None\n"
        "from compactkit.memory import InMemoryMemory\n"
        "from compactkit.sessions import InMemorySessionStore\n"
        "from compactkit.testing.conformance import check_memory, check_store\n"
        "report = check_memory(lambda session_id, **options: InMemoryMemory(**options))\n"
        "assert report.ok, str(report)\n"
        "assert check_store(InMemorySessionStore).ok\n"
        "print(len(report.passed), len(report.not_run))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    applicable = [r for r in memory_rules() if r.needs <= {"threads", "options"}]
    assert run.stdout.split() == [
        str(len(applicable)),
        str(len(memory_rules()) - len(applicable)),
    ]


def test_the_docs_list_every_rule_as_the_kit_states_it() -> None:
    page = DOCS.read_text()
    for rule in [*memory_rules(), *store_rules()]:
        assert f"| `{rule.name}` | {rule.statement} |" in page, rule.name


def test_a_recall_that_forgets_the_archive_is_reported() -> None:
    from compactkit.memory import InMemoryMemory

    class ForgetfulRecall(InMemoryMemory):
        def recall(self, query: str, *, limit: int = 5) -> list[Any]:
            return [hit for hit in super().recall(query, limit=limit) if not hit.seq]

    report = check_memory(
        lambda session_id, **options: ForgetfulRecall(**options),
        recall=True,
        rules=["recall-finds-what-compaction-folded"],
    )
    message = readable(report, "recall-finds-what-compaction-folded")
    assert "recall('zq7north') found nothing" in message
