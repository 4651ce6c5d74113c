"""The process-wide count of texts: keyed by content, bounded, and never a different number."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget._encodings import TextCounts, get_encoding, text_counts, token_count
from compactkit.budget.tokens import TiktokenCounter
from compactkit.items import Message
from compactkit.items.snapshot import summary_message


class Encoder:
    """A real encoding that records which texts it was asked to encode."""

    def __init__(self) -> None:
        self.encode = get_encoding("o200k_base").encode_ordinary
        self.calls: list[str] = []

    def __call__(self, text: str) -> int:
        self.calls.append(text)
        return len(self.encode(text))


def test_equal_text_in_a_new_object_is_not_encoded_again() -> None:
    encoder = Encoder()
    counts = TextCounts(encoder)
    first = "".join(["read ", "src/app.py"])
    second = "".join(["read src/", "app.py"])  # equal, another object
    assert first is not second
    assert counts(first) == counts(second) == len(encoder.encode(first))
    assert encoder.calls == [first]


def test_a_fresh_counter_counts_a_known_history_from_memory() -> None:
    text = "a tool output the agent saw before " * 50
    TiktokenCounter("o200k_base").count_item(Message(role="user", content=text))
    assert text in text_counts("o200k_base")._counts  # what a cold projector will find
    fresh = TiktokenCounter("o200k_base")
    assert fresh.count_text(text) == len(get_encoding("o200k_base").encode_ordinary(text))


@settings(deadline=None, max_examples=60)
@given(texts=st.lists(st.text(max_size=40), max_size=60), limit=st.integers(0, 200))
def test_counts_stay_exact_and_within_the_limit(texts: list[str], limit: int) -> None:
    encoder = Encoder()
    counts = TextCounts(encoder, limit=limit)
    for text in texts * 2:
        assert counts(text) == len(encoder.encode(text))
    assert sum(map(len, counts._counts)) <= limit


SPECIAL = ["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>"]


@settings(deadline=None, max_examples=300)
@given(
    parts=st.lists(
        st.one_of(st.text(max_size=60), st.sampled_from(SPECIAL), st.just("\ud800 lone")),
        max_size=8,
    ),
    name=st.sampled_from(["o200k_base", "cl100k_base"]),
)
def test_the_buffer_count_is_the_length_of_encode_ordinary(parts: list[str], name: str) -> None:
    """Counting tiktoken's token buffer gives exactly ``len(encode_ordinary(text))``: special
    token strings count as plain text, lone surrogates are repaired the same way."""
    encoding = get_encoding(name)
    text = "".join(parts)
    assert token_count(encoding)(text) == len(encoding.encode_ordinary(text))


LINES = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=50),
        st.sampled_from(["## Files modified", "- `src/app.py` — edited", "  indented", "/path"]),
        st.sampled_from(["", " ", "\t", "\u00a0x", "x  ", "Ω", "// note", "1. step"]),
    ),
    min_size=40,
    max_size=160,
)


@settings(deadline=None, max_examples=150)
@given(lines=LINES, name=st.sampled_from(["o200k_base", "cl100k_base"]))
def test_a_long_summary_counted_by_lines_is_its_whole_count(lines: list[str], name: str) -> None:
    """A summary message's text is counted by lines, each line remembered (a summary keeps most
    of its lines between compactions); the count is the whole text's, exactly."""
    summary = "Earlier work, in brief. " * 90 + "\n" + "\n".join(lines)  # long: by lines
    message = summary_message(summary)
    text = message.text
    encoding = get_encoding(name)
    counter = TiktokenCounter(name)
    role = len(encoding.encode_ordinary(message.role))
    expected = counter.tokens_per_message + role + len(encoding.encode_ordinary(text))
    assert counter.count_item(message) == expected
    if "\r" not in text:  # counted by lines: its pieces are remembered
        assert text.split("\n", 1)[0] + "\n" in text_counts(name)._counts


def test_a_remembered_count_is_given_back_without_encoding() -> None:
    encoder = Encoder()
    counts = TextCounts(encoder)
    counts.remember("counted another way", 4)
    assert counts("".join(["counted ", "another way"])) == 4
    counts.remember("counted another way", 99)  # (the first count stays)
    assert counts("counted another way") == 4
    assert encoder.calls == []


def test_remember_text_tokens_reaches_only_a_tiktoken_counters_counts() -> None:
    from compactkit.budget.tokens import EstimateCounter, remember_text_tokens

    text = "a summary counted bullet by bullet " * 20
    counter = TiktokenCounter("o200k_base")
    remember_text_tokens(counter, text, counter.count_text(text))
    assert text_counts("o200k_base")._counts[text] == counter.count_text(text)
    remember_text_tokens(EstimateCounter(4), "other " * 30, 1)  # nothing to reach
    assert "other " * 30 not in text_counts("o200k_base")._counts
