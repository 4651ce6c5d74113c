"""Every bad input listed in issue 17 is a typed ``CompactkitError`` raised at the boundary,
whose message names the argument and says what to pass instead (regression tests: each of these
used to be a ``TypeError``/``AttributeError``/``RecursionError``/``FileNotFoundError`` from deep
inside, or was silently accepted)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compactkit.budget.profiles import budget_for
from compactkit.budget.tokens import TiktokenCounter, counter_for
from compactkit.cli.main import main
from compactkit.compressors import (
    DigestCompressor,
    LadderCompressor,
    MaskingCompressor,
    WindowedCompressor,
)
from compactkit.compressors.summary import SummaryCompressor
from compactkit.errors import CompactkitError, ConfigError
from compactkit.formats import (
    anthropic_to_items,
    chat_to_items,
    items_to_chat,
    responses_to_items,
    validate_chat,
)
from compactkit.formats.transcript import load_transcript, parse_transcript
from compactkit.governance.policy import CompactPolicy, tokens_over
from compactkit.governance.projector import ContextProjector
from compactkit.items import FunctionCall, FunctionCallOutput, Message
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory import InMemoryMemory
from compactkit.sessions import AgentSession
from compactkit.sessions.file import FileSessionStore
from compactkit.testing import ScriptedLLM

COUNTER = TiktokenCounter("o200k_base")
SNAPSHOT = MemorySnapshot.of([Message(role="user", content="hi")])
NAN, INF = float("nan"), float("inf")


def projector() -> ContextProjector:
    return ContextProjector(COUNTER, budget=1000)


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


CASES: dict[str, tuple[Callable[[], Any], str]] = {
    # (call, a word the message must contain: the argument or the fix)
    "chat_to_items(None)": (lambda: chat_to_items(None), "chat_to_items"),  # type: ignore[arg-type]
    "chat_to_items({})": (lambda: chat_to_items({}), '"messages"'),
    "responses_to_items(None)": (lambda: responses_to_items(None), "responses_to_items"),  # type: ignore[arg-type]
    "anthropic_to_items(None)": (lambda: anthropic_to_items(None), "anthropic_to_items"),  # type: ignore[arg-type]
    "items_to_chat(dicts)": (lambda: items_to_chat([{"role": "user"}]), "chat_to_items"),  # type: ignore[list-item]
    "validate_chat([None])": (lambda: validate_chat([None]), "message 0"),  # type: ignore[list-item]
    "add_output_items(None)": (lambda: InMemoryMemory().add_output_items(None), "add_output_items"),  # type: ignore[arg-type]
    "memory.restore(None)": (lambda: InMemoryMemory().restore(None), "MemorySnapshot"),  # type: ignore[arg-type]
    "restore(history=None)": (
        lambda: InMemoryMemory().restore(SNAPSHOT, history=None),  # type: ignore[arg-type]
        "history",
    ),
    "DigestCompressor().compress([])": (
        lambda: DigestCompressor().compress([]),  # type: ignore[arg-type]
        "DigestCompressor.compress()",
    ),
    "WindowedCompressor.compress(None)": (
        lambda: WindowedCompressor(max_items=3).compress(None),  # type: ignore[arg-type]
        "WindowedCompressor.compress()",
    ),
    "MaskingCompressor.compress(None)": (
        lambda: MaskingCompressor().compress(None),  # type: ignore[arg-type]
        "MaskingCompressor",
    ),
    "LadderCompressor.compress('x')": (
        lambda: LadderCompressor(100).compress("x"),  # type: ignore[arg-type]
        "LadderCompressor",
    ),
    "project(tools=[dict])": (
        lambda: projector().project(SNAPSHOT, tools=[{"type": "function"}]),  # type: ignore[list-item]
        "tools_from_chat",
    ),
    "project(instructions=5)": (
        lambda: projector().project(SNAPSHOT, instructions=5),  # type: ignore[arg-type]
        "instructions",
    ),
    "project(budget='100')": (
        lambda: projector().project(SNAPSHOT, budget="100"),  # type: ignore[arg-type]
        "budget",
    ),
    "project(budget=nan)": (lambda: projector().project(SNAPSHOT, budget=NAN), "budget"),  # type: ignore[arg-type]
    "project(budget=inf)": (lambda: projector().project(SNAPSHOT, budget=INF), "budget"),  # type: ignore[arg-type]
    "ContextProjector(budget=nan)": (lambda: ContextProjector(COUNTER, budget=NAN), "budget"),  # type: ignore[arg-type]
    "ContextProjector(mask_threshold=nan)": (
        lambda: ContextProjector(COUNTER, budget=10, mask_threshold=NAN),  # type: ignore[arg-type]
        "mask_threshold",
    ),
    "ContextProjector(None)": (lambda: ContextProjector(None, budget=10), "counter"),  # type: ignore[arg-type]
    "counter_for(None)": (lambda: counter_for(None), "model"),  # type: ignore[arg-type]
    "budget_for(5)": (lambda: budget_for(5), "model"),  # type: ignore[arg-type]
    "parse_transcript(bad bytes)": (lambda: parse_transcript(b"\xff\xfe\x00"), "UTF-8"),  # type: ignore[arg-type]
    "parse_transcript(None)": (lambda: parse_transcript(None), "parse_transcript"),  # type: ignore[arg-type]
    "load_transcript(missing)": (
        lambda: load_transcript("/nonexistent/transcript.json"),
        "/nonexistent/transcript.json",
    ),
    "load_transcript(None)": (lambda: load_transcript(None), "load_transcript"),  # type: ignore[arg-type]
    "FileSessionStore(None)": (lambda: FileSessionStore(None), "FileSessionStore"),  # type: ignore[arg-type]
    "parse_transcript(deep)": (
        lambda: parse_transcript('{"messages": ' + deep(100_000) + "}"),
        "nested too deeply",
    ),
    "AgentSession(metadata=nan)": (
        lambda: AgentSession(metadata={"score": NAN}),
        "metadata['score']",
    ),
    "session.state() with inf": (
        lambda: _session_with({"rates": [1.0, INF]}).state(),
        "metadata['rates'][1]",
    ),
    "MemorySnapshot.from_items(None)": (lambda: MemorySnapshot.from_items(None), "from_items"),  # type: ignore[arg-type]
    "CompactPolicy(budget=nan)": (
        lambda: CompactPolicy(tokens_over(1000), target=100, budget=NAN),  # type: ignore[arg-type]
        "budget",
    ),
    "CompactPolicy(budget=inf)": (
        lambda: CompactPolicy(tokens_over(1000), target=100, budget=INF),  # type: ignore[arg-type]
        "budget",
    ),
}

for name, cls, options in [
    ("DigestCompressor", DigestCompressor, ["target_tokens", "keep_tokens", "summary_cap_tokens"]),
    ("WindowedCompressor", WindowedCompressor, ["max_tokens", "max_items"]),
    ("MaskingCompressor", MaskingCompressor, ["target_tokens", "min_tokens"]),
]:
    for option in options:
        for value in (NAN, INF, "100"):
            CASES[f"{name}({option}={value!r})"] = (
                lambda cls=cls, option=option, value=value: cls(**{option: value}),
                option,
            )
for value in (NAN, INF, "100"):
    CASES[f"LadderCompressor({value!r})"] = (
        lambda value=value: LadderCompressor(value),  # type: ignore[arg-type]
        "target_tokens",
    )
    CASES[f"SummaryCompressor(target_tokens={value!r})"] = (
        lambda value=value: SummaryCompressor(ScriptedLLM([]), target_tokens=value),  # type: ignore[arg-type]
        "target_tokens",
    )


def _session_with(metadata: dict[str, Any]) -> AgentSession:
    session = AgentSession()
    session.metadata = metadata
    return session


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_a_typed_error_naming_the_argument(case: str) -> None:
    call, named = CASES[case]
    with pytest.raises(CompactkitError) as raised:
        call()
    assert isinstance(raised.value, ConfigError)  # misuse: fix the call, do not retry
    assert named in str(raised.value), str(raised.value)


def test_deeply_nested_arguments_do_not_crash_the_digest() -> None:
    snapshot = MemorySnapshot.of(
        [
            Message(role="user", content="a" * 400),
            FunctionCall(call_id="c", name="f", arguments='{"a": ' + deep(50_000) + "}"),
            FunctionCallOutput(call_id="c", output="x"),
            Message(role="user", content="b"),
        ]
    )
    result = DigestCompressor(target_tokens=60, counter=COUNTER).compress(snapshot)
    assert result.outcome in ("compacted", "unchanged", "failed")


def test_the_cli_answers_deep_json_with_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"messages": ' + deep(100_000) + "}")
    assert main(["count", str(path), "--model", "gpt-4o"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deeply" in err


def test_finite_metadata_still_round_trips(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession(session_id="s", metadata={"score": 0.5, "tags": ["a"], "n": None})
    store.save(session)
    assert store.load("s").metadata == {"score": 0.5, "tags": ["a"], "n": None}
