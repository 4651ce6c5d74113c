"""Bad input to the public surface is a typed compactkit error naming the value (issue 32).

Every public constructor and entry point below is called with arbitrary values of the wrong
type or range, one argument at a time; the only exception allowed out is a ``CompactkitError``
(never a raw ``TypeError``, pydantic ``ValidationError`` or a NaN silently accepted).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import compactkit as ck
from compactkit.budget import budget_for
from compactkit.compressors import RetryPolicy
from compactkit.formats import anthropic_to_items, parse_transcript, responses_to_items
from compactkit.governance import every_turns, items_over
from compactkit.items import Reasoning, load_items
from compactkit.items.snapshot import MemorySnapshot

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=4),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.just(object()),
)

SNAPSHOT = MemorySnapshot.from_items([ck.Message(role="user", content="hi")])
PROJECTOR = ck.ContextProjector.for_model("gpt-4o")

Entry = Callable[..., Any]
ENTRIES: dict[str, tuple[Entry, tuple[str, ...]]] = {
    "Message": (
        lambda **k: ck.Message(**{"role": "user", "content": "x", **k}),
        ("role", "content", "name", "id", "seq", "pinned", "extra"),
    ),
    "FunctionCall": (
        lambda **k: ck.FunctionCall(**{"call_id": "c", "name": "f", **k}),
        ("call_id", "name", "arguments", "extra"),
    ),
    "FunctionCallOutput": (
        lambda **k: ck.FunctionCallOutput(**{"call_id": "c", "output": "o", **k}),
        ("call_id", "output"),
    ),
    "Reasoning": (
        lambda **k: Reasoning(**{"format": "responses", "payload": {}, **k}),
        ("format", "payload"),
    ),
    "RetryPolicy": (
        RetryPolicy,
        ("attempts", "initial_wait", "multiplier", "max_wait", "jitter", "max_retry_after"),
    ),
    "ContextProjector.for_model": (
        lambda **k: ck.ContextProjector.for_model("gpt-4o", **k),
        ("budget", "mask_threshold", "summary_role", "validate", "cache_aware", "cache_refill"),
    ),
    "ContextProjector.project": (
        lambda **k: PROJECTOR.project(SNAPSHOT, **k),
        ("budget", "tools", "instructions"),
    ),
    "BudgetPolicy": (ck.BudgetPolicy, ("reserved_output", "safety_margin", "trigger", "target")),
    "CompactPolicy": (
        lambda **k: ck.CompactPolicy(**{"trigger": items_over(10), "target": 100, **k}),
        ("trigger", "target", "budget", "model"),
    ),
    "WindowedCompressor": (ck.WindowedCompressor, ("max_items", "max_tokens")),
    "MaskingCompressor": (
        ck.MaskingCompressor,
        ("keep_last_groups", "min_tokens", "target_tokens"),
    ),
    "DigestCompressor": (
        ck.DigestCompressor,
        ("keep_last_groups", "keep_tokens", "target_tokens", "summary_cap_tokens"),
    ),
    "LadderCompressor": (
        lambda **k: ck.LadderCompressor(**{"target_tokens": 1000, **k}),
        ("target_tokens", "keep_last_groups", "summary_cap_tokens"),
    ),
    "ratio_over": (lambda value: ck.ratio_over(value), ("value",)),
    "items_over": (lambda value: items_over(value), ("value",)),
    "tokens_over": (lambda value: ck.tokens_over(value), ("value",)),
    "every_turns": (lambda value: every_turns(value), ("value",)),
    "budget_for": (lambda value: budget_for(value), ("value",)),
    "chat_to_items": (lambda value: ck.chat_to_items(value), ("value",)),
    "responses_to_items": (lambda value: responses_to_items(value), ("value",)),
    "anthropic_to_items": (lambda value: anthropic_to_items(value), ("value",)),
    "parse_transcript": (lambda value: parse_transcript(value), ("value",)),
    "load_items": (lambda value: load_items(value), ("value",)),
}
CASES = [(name, arg) for name, (_, args) in ENTRIES.items() for arg in args]


@pytest.mark.parametrize(("entry", "argument"), CASES, ids=[f"{n}-{a}" for n, a in CASES])
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=JUNK)
def test_bad_values_raise_only_compactkit_errors(entry: str, argument: str, value: Any) -> None:
    call, _ = ENTRIES[entry]
    with contextlib.suppress(ck.CompactkitError):  # anything else fails the test
        call(**{argument: value})


def test_the_three_reported_cases_name_the_value_and_the_fix() -> None:
    with pytest.raises(ck.ConfigError, match=r"budget.*'100'.*budget=8000"):
        PROJECTOR.project(SNAPSHOT, budget="100")  # type: ignore[arg-type]
    with pytest.raises(ck.ConfigError, match=r"initial_wait=nan.*finite"):
        RetryPolicy(initial_wait=math.nan)
    with pytest.raises(ck.ConfigError, match=r"role='bogus'.*'user'"):
        ck.Message(role="bogus", content="x")  # type: ignore[arg-type]
