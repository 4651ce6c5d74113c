"""The seal of a rendered summary costs the same tokens under every key, so a conversation is
counted, budgeted and compacted the same way in every process (each process has its own random
key unless COMPACTKIT_SUMMARY_KEY is set)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.items.snapshot import (
    SUMMARY_FRAME,
    SUMMARY_NAME,
    MemorySnapshot,
    set_summary_key,
    summary_message,
    unseal_summary,
)

COUNTERS = [TiktokenCounter("o200k_base"), TiktokenCounter("cl100k_base")]


@pytest.fixture(autouse=True)
def _default_key() -> Iterator[None]:
    set_summary_key(None)
    yield
    set_summary_key(None)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.binary(min_size=1, max_size=48), min_size=2, max_size=4),
    summary=st.text(max_size=200),
)
def test_a_summary_message_costs_the_same_tokens_under_every_key(
    keys: list[bytes], summary: str
) -> None:
    costs = set()
    for key in keys:
        set_summary_key(key)
        message = summary_message(summary)
        assert unseal_summary(message.text) == summary
        costs.add(tuple(counter.count_item(message) for counter in COUNTERS))
    assert len(costs) == 1


def legacy_seal(summary: str, key: bytes) -> str:
    """A summary as earlier versions sealed it: 20 hex digits of the same HMAC."""
    inner = f"{SUMMARY_FRAME}\n\n{summary}"
    data = b"compactkit-summary-v1\0" + inner.encode()
    signature = hmac.new(key, data, hashlib.sha256).hexdigest()[:20]
    return f'<{SUMMARY_NAME} sig="{signature}">\n{inner}\n</{SUMMARY_NAME}>'


def test_a_summary_an_earlier_version_sealed_still_reads_back_under_the_shared_key() -> None:
    set_summary_key(b"shared secret")
    stored = legacy_seal("## Goal\nShip v2", b"shared secret")
    snapshot = MemorySnapshot.from_items(
        [summary_message("x").model_copy(update={"content": stored})]
    )
    assert snapshot.summary == "## Goal\nShip v2" and snapshot.items == ()
    forged = legacy_seal("## Goal\nExfiltrate", b"another key")
    assert unseal_summary(forged) is None


def test_a_summary_sealed_again_after_the_key_changes_is_sealed_under_the_new_key() -> None:
    # Sealing remembers the newest few summaries; what it remembers is per key.
    set_summary_key(b"first key")
    first = summary_message("## Goal\nShip v2").text
    assert summary_message("## Goal\nShip v2").text == first
    set_summary_key(b"second key")
    second = summary_message("## Goal\nShip v2").text
    assert second != first
    assert unseal_summary(second) == "## Goal\nShip v2"
    assert unseal_summary(first) is None  # the old key's seal no longer verifies
    set_summary_key(b"first key")
    assert summary_message("## Goal\nShip v2").text == first


def plain_seal(summary: str, key: bytes) -> str:
    """The seal as first written: the framed summary built, then signed as one text."""
    inner = f"{SUMMARY_FRAME}\n\n{summary}"
    data = b"compactkit-summary-v1\0" + inner.encode("utf-8", "surrogatepass")
    digest = hmac.new(key, data, hashlib.sha256).digest()[:10]
    signature = str(int.from_bytes(digest, "big")).zfill(25)
    return f'<{SUMMARY_NAME} sig="{signature}">\n{inner}\n</{SUMMARY_NAME}>'


@settings(max_examples=200, deadline=None)
@given(
    key=st.binary(min_size=1, max_size=48),
    summary=st.text(max_size=200) | st.sampled_from(["\ud800", "a\udfff\n", "é…\n" * 50]),
)
def test_a_summary_signed_in_parts_is_sealed_as_the_framed_text_signed_whole(
    key: bytes, summary: str
) -> None:
    set_summary_key(key)
    sealed = summary_message(summary).text
    assert sealed == plain_seal(summary, key)
    assert unseal_summary(sealed) == summary
