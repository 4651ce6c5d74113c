"""The append patch's JSON written by hand (``compactkit.sessions._patch_json``) holds what the
plain version — ``json.dumps`` of the record with the items' ``dump_python(mode="json")`` —
writes, for any counters, metadata and items; its header byte for byte."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.items import (
    ITEMS_ADAPTER,
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ProviderCompaction,
    Reasoning,
    TextPart,
)
from compactkit.sessions._patch_json import append_patch, iso_of_ns, items_json, utc_now_iso

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)
TEXT = st.text(max_size=40)
ITEMS = st.lists(
    st.one_of(
        st.builds(Message, role=st.sampled_from(["user", "assistant"]), content=TEXT),
        st.builds(
            Message,
            role=st.just("assistant"),
            content=st.lists(st.builds(TextPart, text=TEXT), max_size=2).map(tuple),
            extra=st.none() | st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=2),
        ),
        st.builds(FunctionCall, call_id=TEXT, name=TEXT, arguments=TEXT),
        st.builds(
            FunctionCallOutput,
            call_id=TEXT,
            output=TEXT,
            is_error=st.none() | st.booleans(),
        ),
        st.builds(
            Reasoning,
            format=st.just("responses"),
            payload=st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=3),
        ),
    ).flatmap(
        lambda item: st.integers(1, 10**12).map(lambda seq: item.model_copy(update={"seq": seq}))
    ),
    max_size=4,
)
COUNTER = st.integers(0, 10**15) | st.booleans() | st.none()


def plain(record: dict[str, Any], items: list[Item]) -> bytes:
    whole = {**record, "append": ITEMS_ADAPTER.dump_python(items, mode="json")}
    return json.dumps(whole, ensure_ascii=False, separators=(",", ":")).encode()


@settings(deadline=None, max_examples=300)
@given(
    revision=st.integers(1, 10**15),
    turn=COUNTER,
    step=COUNTER,
    version=COUNTER,
    metadata=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4),
    dropped=st.none()
    | st.fixed_dictionaries(
        {"count": st.integers(1, 99), "first": st.integers(0, 9), "last": st.integers(0, 99)}
    ),
    items=ITEMS,
)
def test_an_append_patch_holds_what_the_plain_encoder_writes(
    revision: int,
    turn: Any,
    step: Any,
    version: Any,
    metadata: dict[str, Any],
    dropped: dict[str, Any] | None,
    items: list[Item],
) -> None:
    updated_at = utc_now_iso()
    record: dict[str, Any] = {
        "revision": revision,
        "turn": turn,
        "step": step,
        "metadata": metadata,
        "updated_at": updated_at,
        "version": version,
    }
    if dropped is not None:
        record["dropped_archive"] = dropped
    fast = append_patch(revision, turn, step, metadata, updated_at, version, dropped, items)
    expected = plain(record, items)
    assert json.loads(fast) == json.loads(expected)
    head, _, _ = expected.partition(b',"append":')
    assert fast.startswith(head + b',"append":')


@given(ns=st.integers(0, 2**62))
def test_a_time_is_written_as_isoformat_writes_it(ns: int) -> None:
    moment = EPOCH + timedelta(microseconds=ns // 1000)
    assert iso_of_ns(ns) == moment.isoformat()


def test_now_is_now_in_utc() -> None:
    before = datetime.now(timezone.utc)
    now = datetime.fromisoformat(utc_now_iso())
    after = datetime.now(timezone.utc)
    assert before <= now <= after
    assert now.utcoffset() == timedelta(0)


class Note(Message):
    """An item of a subclass: written by the union's serializer, as before."""

    note: str = "kept"


@settings(deadline=None, max_examples=300)
@given(
    items=ITEMS,
    compactions=st.lists(
        st.builds(
            ProviderCompaction,
            format=st.sampled_from(["responses", "anthropic"]),
            payload=st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=3),
        ),
        max_size=2,
    ),
    notes=st.lists(st.builds(Note, role=st.just("user"), content=TEXT), max_size=1),
    order=st.randoms(),
)
def test_items_are_written_as_the_union_serializer_writes_them(
    items: list[Item], compactions: list[Item], notes: list[Item], order: Any
) -> None:
    every = [*items, *compactions, *notes]
    order.shuffle(every)
    assert items_json(every) == ITEMS_ADAPTER.dump_json(every)
