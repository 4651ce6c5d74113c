"""Anthropic's ``system=`` blocks refreshed in place between calls (a date, a rule appended) are
read again: the result's ``system`` and the count are those of the blocks as they are now, as a
compactor that never saw the earlier version gives them."""

from __future__ import annotations

from typing import Any

from compactkit.integrations import MessageCompactor

MODEL = "claude-sonnet-4-5"


def _call(compactor: MessageCompactor, messages: list[dict[str, Any]], system: Any) -> Any:
    return compactor(messages, system=system)


def test_system_blocks_edited_and_appended_in_place_are_read_again() -> None:
    compactor = MessageCompactor(MODEL, format="anthropic")
    system = [{"type": "text", "text": "You are a coding agent. Today is Monday."}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the bug in src/app.py."}]
    first = _call(compactor, messages, system)
    assert first.system == [{"type": "text", "text": "You are a coding agent. Today is Monday."}]
    for change in ("edit", "append"):
        if change == "edit":
            system[0]["text"] = "You are a coding agent. Today is Tuesday."
        else:
            system.append({"type": "text", "text": "New rule: never push. " * 20})
        messages = [
            *messages,
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": change},
        ]
        turn = _call(compactor, messages, system)
        fresh = _call(
            MessageCompactor(MODEL, format="anthropic"), list(messages), [dict(b) for b in system]
        )
        assert turn.system == fresh.system == system
        assert turn.tokens == fresh.tokens


def test_the_same_system_object_unchanged_is_read_once() -> None:
    compactor = MessageCompactor(MODEL, format="anthropic")
    system = [{"type": "text", "text": "You are a coding agent."}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    read: list[Any] = []
    for step in range(3):
        messages = [*messages, {"role": "assistant", "content": f"ok {step}"}]
        compactor([*messages, {"role": "user", "content": "more"}], system=system)
        assert compactor._instruction_cache is not None
        read.append(compactor._instruction_cache[2])  # the system messages it read
    assert read[0] is read[1] is read[2]
