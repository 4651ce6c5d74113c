"""Window, mask, digest and ladder: the contract every compressor keeps, on random histories."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors import (
    DigestCompressor,
    LadderCompressor,
    MaskingCompressor,
    MemoryCompressor,
    SummaryDocument,
    WindowedCompressor,
    is_masked,
    mask_output,
)
from compactkit.compressors._plan import Layout, request_tokens
from compactkit.errors import ConfigError
from compactkit.formats.chat import items_to_chat, validate_chat
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Reasoning
from compactkit.items.snapshot import CompactResult, MemorySnapshot, summary_message

COUNTER = TiktokenCounter("o200k_base")

# -- random histories --------------------------------------------------------------------------

_USER = [
    "Please fix the failing test in src/app{n}.py.",
    "Don't touch the public API of module{n}.",
    "Always run pytest before committing change {n}.",
    "Use httpx, never requests, in service{n}.",
    "Set TIMEOUT_{n} = {n}0 and keep the rest as is.",
]
_ASSISTANT = [
    "I'll read the file first.",
    "I decided to use a retry loop instead of recursion because it is simpler ({n}).",
    "The tests pass now; next I'll update the docs for step {n}.",
]


def _output(tool: str, n: int, lines: int) -> str:
    body = "\n".join(f"line {i} of output {n}: some text to make it bulky" for i in range(lines))
    if tool != "run_shell":
        return body
    if n % 2:
        return (
            f"{body}\nCI log: https://ci.example.com/runs/{n}\n"
            "Traceback (most recent call last):\n"
            '  File "src/app.py", line 3, in <module>\n'
            f"ValueError: bad value {n}\n[exit code: 1]"
        )
    return f"{body}\n[exit code: 0]"


def _call(tool: str, call_id: str, n: int) -> FunctionCall:
    args: dict[str, Any] = {
        "read_file": {"path": f"src/file{n}.py"},
        "run_shell": {"command": f"pytest -q tests/test_{n}.py"},
        "edit_file": {"path": f"src/file{n}.py", "old_str": f"x = {n}", "new_str": f"x = {n + 1}"},
        "lookup": {"query": f"ticket {n}"},
    }[tool]
    return FunctionCall(call_id=call_id, name=tool, arguments=json.dumps(args))


@st.composite
def histories(draw: st.DrawFn) -> MemorySnapshot:
    items: list[Item] = [
        Message(role="system", content=f"You are agent {i}.")
        for i in range(draw(st.integers(0, 2)))
    ]
    calls = 0
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["user", "assistant", "assistant", "text", "developer"]))
        n = draw(st.integers(0, 99))
        if kind == "user":
            items.append(Message(role="user", content=draw(st.sampled_from(_USER)).format(n=n)))
        elif kind == "developer":
            items.append(Message(role="developer", content=f"Mid-run note {n}: be brief."))
        elif kind == "text":
            text = draw(st.sampled_from(_ASSISTANT)).format(n=n)
            items.append(Message(role="assistant", content=text))
        else:
            if draw(st.booleans()):
                items.append(Reasoning(format="responses", payload={"type": "reasoning", "n": n}))
            if draw(st.booleans()):
                items.append(Message(role="assistant", content=f"Working on step {n}."))
            tools = draw(
                st.lists(
                    st.sampled_from(["read_file", "run_shell", "edit_file", "lookup"]),
                    min_size=1,
                    max_size=3,
                )
            )
            group_calls = []
            for tool in tools:
                calls += 1
                group_calls.append((tool, f"call_{calls}"))
                items.append(_call(tool, f"call_{calls}", n))
            order = draw(st.permutations(group_calls))
            for tool, call_id in order:
                lines = draw(st.sampled_from([0, 1, 5, 40, 120]))
                items.append(FunctionCallOutput(call_id=call_id, output=_output(tool, n, lines)))
    if draw(st.booleans()):  # a pending call at the end
        calls += 1
        items.append(_call("run_shell", f"call_{calls}", 7))
    pins = draw(st.sets(st.integers(0, max(len(items) - 1, 0)), max_size=2)) if items else set()
    items = [
        item.model_copy(update={"seq": index + 1, "pinned": index in pins})
        for index, item in enumerate(items)
    ]
    summary = ""
    if draw(st.booleans()):
        summary = SummaryDocument.of(
            goal=["Ship the retry feature."], constraints=["Never push to main."]
        ).render()
    return MemorySnapshot(summary=summary, items=tuple(items), version=draw(st.integers(0, 5)))


@st.composite
def compressors(draw: st.DrawFn) -> MemoryCompressor:
    which = draw(
        st.sampled_from(
            ["window_items", "window_tokens", "mask", "digest", "digest_target", "ladder"]
        )
    )
    if which == "window_items":
        return WindowedCompressor(max_items=draw(st.integers(1, 20)), counter=COUNTER)
    if which == "window_tokens":
        return WindowedCompressor(max_tokens=draw(st.integers(50, 3000)), counter=COUNTER)
    if which == "mask":
        return MaskingCompressor(
            keep_last_groups=draw(st.integers(0, 4)),
            min_tokens=draw(st.integers(0, 50)),
            counter=COUNTER,
        )
    if which == "digest":
        return DigestCompressor(keep_last_groups=draw(st.integers(0, 4)), counter=COUNTER)
    if which == "digest_target":
        return DigestCompressor(target_tokens=draw(st.integers(200, 4000)), counter=COUNTER)
    return LadderCompressor(
        target_tokens=draw(st.integers(100, 4000)),
        keep_last_groups=draw(st.integers(0, 3)),
        counter=COUNTER,
    )


PROPERTY = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


def _pending_ids(items: tuple[Item, ...]) -> set[str]:
    return {cid for group in Layout.of(items).groups for cid in group.pending}


def check_contract(snapshot: MemorySnapshot, result: CompactResult) -> None:
    """What every compressor guarantees, whatever it did."""
    before, after = snapshot.items, result.snapshot.items
    # Never an orphan: the only tool-call problems are the calls that were pending before.
    _, problems = validate_chat(
        items_to_chat(result.snapshot.render_items(), lossy=True), mode="repair"
    )
    assert {(p.kind, p.call_id) for p in problems} <= {
        ("missing_output", cid) for cid in _pending_ids(before)
    }
    # Order kept; nothing invented: every kept item is an input item (or replaces one, same seq).
    seqs = [i.seq for i in after if i.seq is not None]
    assert seqs == sorted(seqs)
    assert len(seqs) == len(set(seqs))
    assert set(seqs) <= {i.seq for i in before}
    # Nothing lost silently: folded + kept account for every input item.
    folded = {i.seq for i in result.folded}
    assert {i.seq for i in before} == set(seqs) | folded
    assert all(any(i is f for i in before) for f in result.folded)
    # Never dropped: instructions (unaltered), pins, the latest user input, pending calls.
    lead = Layout.of(before).lead
    assert after[:lead] == before[:lead]
    kept = {i.seq: i for i in after}
    for item in before:
        if item.pinned:
            assert item.seq in kept
    users = [i for i in before if isinstance(i, Message) and i.role == "user"]
    if users:
        assert kept.get(users[-1].seq) == users[-1]
    pending = _pending_ids(before)
    assert pending <= {i.call_id for i in after if isinstance(i, FunctionCall)}
    # The summary is carried, and the version too.
    if snapshot.summary:
        assert result.snapshot.summary
    assert result.snapshot.version == snapshot.version
    # The outcome says what happened; unchanged/failed return the input itself.
    if result.outcome in ("unchanged", "failed"):
        assert result.snapshot is snapshot
        assert not result.folded
    assert (result.error is not None) == (result.outcome in ("failed", "fallback"))
    assert result.stats.tokens_before == request_tokens(snapshot, COUNTER)
    assert result.stats.tokens_after == request_tokens(result.snapshot, COUNTER)
    assert result.stats.items_after == len(after)


@PROPERTY
@given(histories(), compressors())
def test_every_compressor_keeps_the_contract(
    snapshot: MemorySnapshot, compressor: MemoryCompressor
) -> None:
    dumped = snapshot.model_dump()
    result = compressor.compress(snapshot)
    assert snapshot.model_dump() == dumped  # the input is never mutated
    check_contract(snapshot, result)


@PROPERTY
@given(histories(), st.integers(100, 4000))
def test_ladder_meets_its_target_whenever_achievable(snapshot: MemorySnapshot, target: int) -> None:
    result = LadderCompressor(target, counter=COUNTER).compress(snapshot)
    layout = Layout.of(snapshot.items)
    fixed = request_tokens(MemorySnapshot.of(layout.fixed_items), COUNTER)
    floor = fixed + COUNTER.count_item(summary_message("")) + 64
    if "target_unreachable" in result.stats.details:
        # Everything reducible was folded; what is left is the never-reduced part (the newest
        # group among it), over the target: kept as the best reduction there is.
        assert result.outcome == "compacted"
        assert result.stats.tokens_after is not None and result.stats.tokens_after > target
        assert sum(result.stats.details["irreducible"].values()) >= result.stats.tokens_after
        assert result.stats.tokens_after < result.stats.tokens_before  # type: ignore[operator]
    elif result.outcome in ("compacted", "unchanged"):
        assert result.stats.tokens_after is not None and result.stats.tokens_after <= target
    else:
        assert result.outcome == "failed"
        assert result.snapshot is snapshot
        assert result.error and "cannot reach target" in result.error
        # Only fails when the irreducible part (nearly) fills it: the fixed items, the framed
        # and sealed summary message itself, and the 64 tokens a digest's header and first
        # entry need.
        assert floor > target


@PROPERTY
@given(histories(), st.integers(100, 4000))
def test_digest_never_exceeds_its_target(snapshot: MemorySnapshot, target: int) -> None:
    # The summary is budgeted by need (and the tail masked to make room), then trimmed to the
    # exact room left: a compacted result is within the target, unless only the user's goal
    # and rules are left in the summary (a target never drops those).
    result = DigestCompressor(target_tokens=target, counter=COUNTER).compress(snapshot)
    check_contract(snapshot, result)
    layout = Layout.of(snapshot.items)
    fixed = request_tokens(MemorySnapshot.of(layout.fixed_items), COUNTER)
    # Room for the framed summary message and its title and trimming note: then always within.
    if (
        result.outcome == "compacted"
        and fixed + COUNTER.count_item(summary_message("")) + 80 <= target
    ):
        after = result.stats.tokens_after
        assert after is not None
        assert result.stats.details["target_met"] is (after <= target)
        if after > target:
            doc = SummaryDocument.parse(result.snapshot.summary or "")
            assert set(doc.sections) <= {"goal", "constraints"}, doc.sections
            assert not any(e.startswith("Later: ") for e in doc.entries("constraints"))
            assert doc.entries("goal") or doc.entries("constraints")


@PROPERTY
@given(histories(), st.integers(0, 4))
def test_window_forgets_but_keeps_the_summary_unchanged(
    snapshot: MemorySnapshot, keep: int
) -> None:
    result = WindowedCompressor(max_items=keep + 1, counter=COUNTER).compress(snapshot)
    assert result.snapshot.summary == snapshot.summary


@PROPERTY
@given(histories(), st.integers(0, 3))
def test_masking_only_replaces_old_outputs(snapshot: MemorySnapshot, keep: int) -> None:
    result = MaskingCompressor(keep_last_groups=keep, min_tokens=0, counter=COUNTER).compress(
        snapshot
    )
    before, after = snapshot.items, result.snapshot.items
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        if new is not old:
            assert isinstance(old, FunctionCallOutput) and is_masked(new)
            assert isinstance(new, FunctionCallOutput)
            assert (new.call_id, new.seq, new.pinned) == (old.call_id, old.seq, old.pinned)
            assert COUNTER.count_item(new) < COUNTER.count_item(old)
    assert {i.seq for i in result.folded} == {
        o.seq for o, n in zip(before, after, strict=True) if o is not n
    }


# -- examples --------------------------------------------------------------------------------


def _turn(n: int, tool: str = "run_shell", lines: int = 60) -> list[Item]:
    call = _call(tool, f"c{n}", n)
    return [
        Message(role="assistant", content=f"Step {n}."),
        call,
        FunctionCallOutput(call_id=f"c{n}", output=_output(tool, n * 2 + 1, lines)),
    ]


def _session(turns: int = 12) -> MemorySnapshot:
    items: list[Item] = [
        Message(role="system", content="You are a coding agent."),
        Message(role="user", content="Fix the build. Never push to main."),
    ]
    for n in range(turns):
        items += _turn(n, "read_file" if n % 2 else "run_shell")
    items.append(Message(role="user", content="Now write the changelog entry."))
    return MemorySnapshot.of([i.model_copy(update={"seq": k}) for k, i in enumerate(items, 1)])


def test_window_keeps_last_items_group_safe() -> None:
    snapshot = _session()
    result = WindowedCompressor(max_items=4, counter=COUNTER).compress(snapshot)
    assert result.outcome == "compacted"
    # system + the latest user input (protected) + the newest whole group (3 items) fits 4.
    assert [i.seq for i in result.snapshot.items] == [1, 36, 37, 38, 39]
    assert result.stats.details["summary_unchanged"] is True


def test_window_under_its_limit_is_unchanged() -> None:
    snapshot = _session(2)
    result = WindowedCompressor(max_items=100, counter=COUNTER).compress(snapshot)
    assert result.outcome == "unchanged" and result.snapshot is snapshot


def test_window_reports_an_unreachable_token_limit() -> None:
    result = WindowedCompressor(max_tokens=10, counter=COUNTER).compress(_session())
    assert result.outcome == "compacted"
    assert result.stats.details["target_met"] is False
    assert "latest user input" in result.stats.details["irreducible"]


def test_masking_placeholder_names_tool_size_and_error() -> None:
    output = FunctionCallOutput(
        call_id="c1", output="Traceback (most recent call last):\nKeyError: 'x'\n", seq=9
    )
    placeholder = mask_output(output, tool="run_shell", tokens=1234)
    assert placeholder.call_id == "c1" and placeholder.seq == 9
    assert placeholder.text.startswith("[masked output of run_shell (call_id c1): 1,234 tokens")
    assert "last error: KeyError: 'x'" in placeholder.text
    assert is_masked(placeholder) and not is_masked(output)


def test_masking_stops_at_the_target_oldest_first() -> None:
    snapshot = _session()
    everything = MaskingCompressor(keep_last_groups=1, counter=COUNTER).compress(snapshot)
    target = (everything.stats.tokens_before + everything.stats.tokens_after) // 2
    partial = MaskingCompressor(keep_last_groups=1, target_tokens=target, counter=COUNTER)
    result = partial.compress(snapshot)
    assert result.stats.details["target_met"] is True
    assert 0 < result.stats.details["masked"] < everything.stats.details["masked"]
    masked = result.stats.details["masked_call_ids"]
    assert masked == everything.stats.details["masked_call_ids"][: len(masked)]


def test_digest_folds_into_the_summary_and_keeps_the_newest_groups() -> None:
    result = DigestCompressor(keep_last_groups=2, counter=COUNTER).compress(_session())
    assert result.outcome == "compacted"
    doc = SummaryDocument.parse(result.snapshot.summary)
    assert doc.entries("goal") == ("Fix the build. Never push to main. [#2]",)  # its item
    assert any("pytest -q tests/test_0.py" in e for e in doc.entries("commands"))
    assert any("src/file1.py" in e for e in doc.entries("files_read"))
    assert result.stats.details["folded_groups"] == 11  # the first user message + 10 turns


def test_digest_that_would_grow_the_prompt_is_unchanged() -> None:
    items = [Message(role="user", content="hi there, fix it"), *_turn(1, lines=0)]
    items.append(Message(role="user", content="thanks, next"))
    result = DigestCompressor(keep_last_groups=0, counter=COUNTER).compress(
        MemorySnapshot.of(items)
    )
    assert result.outcome == "unchanged"
    assert "not be smaller" in result.stats.details["reason"]


def test_ladder_stops_at_the_first_step_that_meets_the_target() -> None:
    snapshot = _session()
    masked = MaskingCompressor(counter=COUNTER, keep_last_groups=10).compress(snapshot)
    target = masked.stats.tokens_after + 50
    result = LadderCompressor(target, keep_last_groups=10, counter=COUNTER).compress(snapshot)
    assert result.outcome == "compacted"
    assert result.stats.compressor == "ladder>mask"
    assert [s["step"] for s in result.stats.details["steps"]] == ["mask"]
    assert not result.snapshot.summary


def test_ladder_digests_what_masking_hid() -> None:
    snapshot = _session()
    result = LadderCompressor(600, keep_last_groups=1, counter=COUNTER).compress(snapshot)
    assert result.outcome == "compacted", result.error
    assert result.stats.compressor.startswith("ladder>mask+digest")
    # The digest read the original outputs, not the placeholders (which keep only the error).
    doc = SummaryDocument.parse(result.snapshot.summary)
    assert any("ValueError: bad value" in e for e in doc.entries("errors"))
    assert any("https://ci.example.com/runs/" in e for e in doc.entries("identifiers"))
    masked = result.stats.details["steps"][0]["masked_call_ids"]
    assert masked and all(
        any(f.call_id == c for f in result.folded if isinstance(f, FunctionCallOutput))
        for c in masked
    )


def test_failed_ladder_returns_the_input_and_names_what_cannot_shrink() -> None:
    big = Message(role="user", content="word " * 3000, seq=3)
    pinned = Message(role="assistant", content="pinned note " * 300, seq=2, pinned=True)
    snapshot = MemorySnapshot.of([Message(role="system", content="sys", seq=1), pinned, big])
    result = LadderCompressor(500, counter=COUNTER).compress(snapshot)
    assert result.outcome == "failed"
    assert result.snapshot is snapshot and not result.folded
    assert result.error is not None
    assert result.error.startswith("cannot reach target 500 tokens")
    assert "latest user input (3,00" in result.error and "pinned items (" in result.error
    assert result.stats.details["irreducible"]["latest user input"] > 3000


class _Broken:
    name = "broken"

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        raise RuntimeError("summarizer endpoint is down")


def test_ladder_falls_back_past_a_failing_step() -> None:
    snapshot = _session()
    ladder = LadderCompressor(
        400,
        steps=[_Broken(), WindowedCompressor(max_tokens=400, counter=COUNTER)],
        counter=COUNTER,
    )
    result = ladder.compress(snapshot)
    assert result.outcome == "fallback"
    assert result.error == "broken failed: RuntimeError: summarizer endpoint is down"
    assert isinstance(result.cause, RuntimeError)
    assert result.stats.tokens_after is not None and result.stats.tokens_after <= 400


def test_ladder_under_target_is_unchanged() -> None:
    snapshot = _session(1)
    result = LadderCompressor(100_000, counter=COUNTER).compress(snapshot)
    assert result.outcome == "unchanged" and result.stats.details["target_met"] is True


@pytest.mark.parametrize(
    "make",
    [
        lambda: WindowedCompressor(),
        lambda: WindowedCompressor(max_items=0),
        lambda: WindowedCompressor(max_tokens=-5),
        lambda: MaskingCompressor(keep_last_groups=-1),
        lambda: MaskingCompressor(target_tokens=0),
        lambda: DigestCompressor(summary_cap_tokens=0),
        lambda: LadderCompressor(0),
        lambda: LadderCompressor(100, steps=[]),
    ],
)
def test_misuse_is_a_config_error(make: Any) -> None:
    with pytest.raises(ConfigError):
        make()


def test_every_compressor_is_a_memory_compressor() -> None:
    for compressor in (
        WindowedCompressor(max_items=3),
        MaskingCompressor(),
        DigestCompressor(),
        LadderCompressor(1000),
    ):
        assert isinstance(compressor, MemoryCompressor)


def test_an_abandoned_call_mid_conversation_is_folded_not_kept_as_pending() -> None:
    items: list[Item] = [
        Message(role="system", content="sys"),
        Message(role="user", content="first"),
        FunctionCall(call_id="lost", name="run_shell", arguments='{"command": "make"}'),
        Message(role="user", content="never mind that, do this instead"),
        Message(role="assistant", content="ok"),
        FunctionCall(call_id="live", name="read_file", arguments='{"path": "a.py"}'),
    ]
    layout = Layout.of(items)
    assert [r for r in layout.protected if r] == ["latest user input", "pending calls"]
    result = WindowedCompressor(max_items=3).compress(MemorySnapshot.of(items))
    kept_calls = [i.call_id for i in result.snapshot.items if isinstance(i, FunctionCall)]
    assert kept_calls == ["live"]
    assert any(isinstance(i, FunctionCall) and i.call_id == "lost" for i in result.folded)
