"""Cache-aware projection: between re-plans every prompt extends the previous one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.errors import BudgetError, ConfigError
from compactkit.formats.validate import validate_items
from compactkit.governance.projector import ContextProjector, Projection
from compactkit.items import FunctionCall, FunctionCallOutput, Item, ItemsChain, Message, Tool
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory.in_memory import InMemoryMemory

COUNTER = TiktokenCounter("o200k_base")
TOOLS = [Tool(name="read_file", description="Read a file.", parameters={"type": "object"})]


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i % 7}" for i in range(n))


@st.composite
def sessions(draw: st.DrawFn) -> list[list[Item]]:
    """Batches of items, each followed by a model call: a user turn, then tool rounds."""
    batches: list[list[Item]] = [[Message(role="system", content="You are a coding agent.")]]
    call = 0
    sizes = st.sampled_from([5, 30, 120, 400, 900])
    for turn in range(draw(st.integers(1, 8))):
        batches[-1].append(
            Message(role="user", content=words(draw(st.integers(1, 80)), f"u{turn}"))
        )
        for _ in range(draw(st.integers(0, 5))):
            ids = [f"c{call + k}" for k in range(draw(st.integers(1, 2)))]
            call += len(ids)
            batch: list[Item] = [FunctionCall(call_id=cid, name="read_file") for cid in ids]
            batch += [FunctionCallOutput(call_id=c, output=words(draw(sizes), c)) for c in ids]
            batches.append(batch)
        if draw(st.booleans()):
            batches.append([Message(role="assistant", content=words(20, "done"))])
        batches.append([])
    return [batch for batch in batches if batch]


def sends_newest(prompt: Projection, items: list[Item]) -> bool:
    """Whether the prompt ends with the newest item (a bulky output maybe masked)."""
    end, newest = prompt.items[-1], items[-1]
    if isinstance(newest, FunctionCallOutput) and isinstance(end, FunctionCallOutput):
        return end.call_id == newest.call_id
    return end is newest


def extends(new: tuple[Item, ...], old: tuple[Item, ...]) -> bool:
    return new[: len(old)] == old


@settings(deadline=None, max_examples=150)
@given(sessions(), st.integers(300, 4000), st.sampled_from([0.5, 0.75, 1.0]), st.booleans())
def test_each_prompt_extends_the_last_until_the_extension_does_not_fit(
    batches: list[list[Item]], budget: int, refill: float, tools: bool
) -> None:
    projector = ContextProjector(
        COUNTER, budget=budget, mask_threshold=100, cache_aware=True, cache_refill=refill
    )
    plain = ContextProjector(COUNTER, budget=budget, mask_threshold=100)
    offered = TOOLS if tools else []
    items: list[Item] = []
    previous: Projection | None = None
    reached = False
    handed_out: list[tuple[Projection, tuple[Item, ...]]] = []
    for batch in batches:
        items += batch
        snapshot = MemorySnapshot.of(items)
        try:
            prompt = projector.project(snapshot, tools=offered)
        except BudgetError:
            with pytest.raises(BudgetError):
                plain.project(snapshot, tools=offered)
            previous = None
            continue
        assert prompt.tokens <= budget
        assert COUNTER.count(prompt.items, tools=offered).tokens == prompt.tokens
        validate_items(prompt.items, format="chat")  # raises on a broken tool-call pair
        assert sends_newest(prompt, items) or not sends_newest(
            plain.project(snapshot, tools=offered), items
        )
        if previous is not None:
            grown = previous.tokens + sum(COUNTER.count_item(item) for item in batch)
            if grown <= budget and reached:  # it fits: the previous prompt plus the batch
                assert prompt.items == (*previous.items, *batch)
                assert prompt.report.cached_prefix_tokens == previous.tokens - 3  # no priming
            else:  # a re-plan: the whole memory, or a window with room to grow
                whole = plain.project(snapshot, tools=offered)
                if whole.report.omitted or whole.report.masked:
                    try:
                        room = plain.project(snapshot, tools=offered, budget=int(budget * refill))
                    except BudgetError:
                        room = whole
                    newest = len(batch) if batch[0].type == "function_call" else 1
                    if room.items[-newest:] != whole.items[-newest:]:
                        room = whole  # the newest group is sent as the full plan sends it
                    assert prompt.items == room.items
                else:
                    assert prompt.items == whole.items
        previous = prompt
        reached = sends_newest(prompt, items)  # else the next one cannot simply extend it
        handed_out.append((prompt, tuple(prompt.items)))
    # Extending grows one list in place: every prompt handed out still holds what it held.
    for prompt, frozen in handed_out:
        assert tuple(prompt.items) == frozen and len(prompt.items) == len(frozen)


def test_plain_projection_slides_while_cache_aware_holds_still() -> None:
    """A long tool loop over a small budget: the plain window moves every call, the
    cache-aware one re-plans in a few large steps and is otherwise a prefix extension."""
    items: list[Item] = [Message(role="system", content="sys"), Message(role="user", content="go")]
    modes = {
        "plain": ContextProjector(COUNTER, budget=8000, mask_threshold=100),
        "cache": ContextProjector(COUNTER, budget=8000, mask_threshold=100, cache_aware=True),
    }
    breaks = dict.fromkeys(modes, 0)
    shared = dict.fromkeys(modes, 0)
    sent = dict.fromkeys(modes, 0)
    last: dict[str, tuple[Item, ...]] = {}
    for step in range(120):
        items += [
            FunctionCall(call_id=f"c{step}", name="read_file"),
            FunctionCallOutput(call_id=f"c{step}", output=words(150, f"o{step}")),
        ]
        for name, projector in modes.items():
            prompt = projector.project(MemorySnapshot.of(items))
            if name in last and not extends(prompt.items, last[name]):
                breaks[name] += 1
            last[name] = prompt.items
            shared[name] += prompt.report.cached_prefix_tokens
            sent[name] += prompt.tokens
    assert breaks["cache"] * 4 <= breaks["plain"]
    assert shared["cache"] / sent["cache"] > 0.8 > shared["plain"] / sent["plain"]


def test_a_new_summary_or_new_tools_plan_afresh() -> None:
    projector = ContextProjector(COUNTER, budget=5000, cache_aware=True)
    items: list[Item] = [Message(role="user", content="hello")]
    first = projector.project(MemorySnapshot.of(items))
    items.append(Message(role="assistant", content="hi"))
    assert projector.project(MemorySnapshot.of(items)).report.cached_prefix_tokens > 0
    folded = projector.project(MemorySnapshot.of(items[1:], summary="the user said hello"))
    assert folded.report.cached_prefix_tokens == 0  # the summary changed the first message
    with_tools = projector.project(MemorySnapshot.of(items), tools=TOOLS)
    assert with_tools.report.cached_prefix_tokens == 0  # tool schemas come first
    assert first.report.cached_prefix_tokens == 0


def test_for_model_is_cache_aware_where_the_provider_caches() -> None:
    assert ContextProjector.for_model("gpt-5").cache_aware
    assert ContextProjector.for_model("claude-sonnet-4-5").cache_aware
    assert not ContextProjector.for_model("gpt-4").cache_aware  # no prompt caching there
    assert not ContextProjector.for_model("gpt-5", cache_aware=False).cache_aware
    with pytest.raises(ConfigError, match="cache_refill"):
        ContextProjector(COUNTER, cache_refill=1.5)
    with pytest.raises(ConfigError, match="cache_aware"):
        ContextProjector(COUNTER, cache_aware="yes")  # type: ignore[arg-type]


@st.composite
def prompt_sequences(draw: st.DrawFn) -> list[list[Item]]:
    """Prompts of one session as a projector changes them: appends, one more output masked
    (or sent whole again), the window sliding, an equal copy of an item in place."""
    pool: list[Item] = [Message(role="user", content=words(n, f"p{n}")) for n in range(1, 40)]
    prompt: list[Item] = [Message(role="system", content="You are a coding agent.")]
    prompt += draw(st.lists(st.sampled_from(pool), max_size=30))
    prompts = [list(prompt)]
    for _ in range(draw(st.integers(1, 12))):
        change = draw(st.sampled_from(["append", "swap", "slide", "copy"]))
        if change == "append" or len(prompt) < 3:
            prompt += draw(st.lists(st.sampled_from(pool), min_size=1, max_size=5))
        else:
            at = draw(st.integers(1, len(prompt) - 1))
            if change == "swap":
                prompt[at] = draw(st.sampled_from(pool))
            elif change == "slide":
                del prompt[1 : at + 1]
            else:
                prompt[at] = prompt[at].model_copy()
        prompts.append(list(prompt))
    return prompts


@settings(deadline=None, max_examples=200)
@given(prompt_sequences(), st.booleans())
def test_the_cached_prefix_is_the_tokens_shared_with_the_previous_prompt(
    prompts: list[list[Item]], with_tools: bool
) -> None:
    """Every projection's cached prefix is what a brute-force count gives: the tool schemas
    and the items a byte-identical prefix of the session's previous prompt."""
    tools = TOOLS if with_tools else []
    projector = ContextProjector(COUNTER, budget=1_000_000)
    schema = COUNTER.count_overhead(tools) - COUNTER.count_overhead(())
    previous: list[Item] | None = None
    for items in prompts:
        prompt = projector.project(
            MemorySnapshot.model_construct(summary="", items=tuple(items)), tools=tools
        )
        assert list(prompt.items) == items  # everything fits: the prompt is the history
        if previous is None:
            assert prompt.report.cached_prefix_tokens == 0
        else:
            shared = 0
            while shared < min(len(items), len(previous)) and items[shared] == previous[shared]:
                shared += 1
            expected = schema + sum(COUNTER.count_item(item) for item in items[:shared])
            assert prompt.report.cached_prefix_tokens == expected
        previous = items


def brute_shared(new: Projection, old: Projection, tools: list[Tool]) -> int:
    """Tool schemas plus the tokens of the items ``new`` shares with ``old`` from the start."""
    a, b = tuple(new.items), tuple(old.items)
    shared = 0
    while shared < min(len(a), len(b)) and a[shared] == b[shared]:
        shared += 1
    schema = COUNTER.count_overhead(tools) - COUNTER.count_overhead(())
    return schema + sum(COUNTER.count_item(item) for item in a[:shared])


@settings(deadline=None, max_examples=120)
@given(sessions(), st.sampled_from([300, 900, 2_500, 8_000]), st.integers(20, 400))
def test_a_growing_session_reports_the_prefix_it_shares_with_its_last_prompt(
    batches: list[list[Item]], budget: int, threshold: int
) -> None:
    """As a memory grows under a small budget the window slides and outputs are masked and sent
    whole again; every prompt's cached prefix is the brute-force count against the last one."""
    memory = InMemoryMemory()
    projector = ContextProjector(COUNTER, budget=budget, mask_threshold=threshold)
    previous: Projection | None = None
    for batch in batches:
        for item in batch:
            if isinstance(item, Message) and item.role == "user":
                memory.add_user_input(item)
            else:
                memory.add_output_items([item])
        try:
            prompt = projector.project(memory.snapshot(), tools=TOOLS)
        except BudgetError:
            continue
        if previous is None:
            assert prompt.report.cached_prefix_tokens == 0
        else:
            assert prompt.report.cached_prefix_tokens == brute_shared(prompt, previous, TOOLS)
        previous = prompt


def item_variants() -> st.SearchStrategy[list[Item]]:
    """An item and changed or equal copies of it (what two prompts hold at one position)."""
    bases: list[Item] = [
        Message(role="user", content="fix the bug"),
        FunctionCall(call_id="c1", name="read_file", arguments='{"path": "a.py"}'),
        FunctionCallOutput(call_id="c1", output="def f(): pass"),
    ]
    updates = st.sampled_from(
        [{}, {"seq": 3}, {"pinned": True}, {"call_id": "c2"}, {"output": "[masked]"}]
    )

    @st.composite
    def variants(draw: st.DrawFn) -> list[Item]:
        base = draw(st.sampled_from(bases))
        out = [base]
        for update in draw(st.lists(updates, max_size=4)):
            fields = {k: v for k, v in update.items() if k in type(base).model_fields}
            out.append(base.model_copy(update=fields) if fields else base.model_copy())
        return out

    return variants()


@settings(deadline=None, max_examples=200)
@given(item_variants(), item_variants())
def test_the_fast_item_comparison_agrees_with_pydantic(a: list[Item], b: list[Item]) -> None:
    """The prefix tracker's ``_differ`` (a ``__dict__`` comparison first) is ``!=`` exactly:
    for copies equal field by field, copies differing in one field and other item types."""
    from compactkit.governance._prefix import _differ

    for x in [*a, *b]:
        for y in [*a, *b]:
            assert _differ(x, y) == (x != y)


def test_the_running_totals_of_forgotten_prompts_are_dropped() -> None:
    """Three hundred sessions, ten at a time, through one prefix tracker (it remembers
    sixteen prompts): each prompt masks a later output of its session's history than the last,
    so the tracker sums the shared items from that history's running totals. Every cached
    prefix is the brute-force count, and the totals of histories no remembered prompt holds
    are dropped (kept, they would grow with every session ever seen)."""
    from compactkit.governance._prefix import PrefixTracker

    tracker = PrefixTracker()
    largest = 0
    for block in range(30):
        histories: list[list[Item]] = [
            [
                Message(role="user", content=words(20 + k % 5, f"b{block}h{h}i{k}"))
                for k in range(60)
            ]
            for h in range(10)
        ]
        previous: dict[int, list[Item]] = {}
        for turn in range(4):
            for number, history in enumerate(histories):
                at = 20 + 8 * turn + number % 3  # the output masked this turn
                placeholder = [Message(role="user", content=f"[masked {at}]")]
                prompt = ItemsChain.joined(
                    [(history, 0, at), (placeholder, 0, 1), (history, at + 1, 60)]
                )
                tokens = sum(map(COUNTER.count_item, prompt))
                shared = tracker.observe(COUNTER, prompt, (), tokens + COUNTER.count_overhead(()))
                old = previous.get(number)
                if old is None:
                    assert shared == 0
                else:
                    same = 0
                    while same < min(len(old), len(prompt)) and old[same] == prompt[same]:
                        same += 1
                    assert shared == sum(map(COUNTER.count_item, list(prompt)[:same]))
                previous[number] = list(prompt)
                largest = max(largest, len(tracker._totals))
    assert largest <= 4 * 16 + 2 * 16 + 1


@settings(deadline=None, max_examples=40)
@given(st.lists(sessions(), min_size=2, max_size=20), st.sampled_from([300, 900, 2_500]))
def test_pruning_the_running_totals_never_changes_a_cached_prefix(
    histories: list[list[list[Item]]], budget: int
) -> None:
    """Many sessions through one projector: the prefix tracker drops the running token totals
    of prompts it no longer remembers; doing that before every prompt reports the same cached
    prefixes as never doing it."""
    pruned = ContextProjector(COUNTER, budget=budget, mask_threshold=60)
    kept = ContextProjector(COUNTER, budget=budget, mask_threshold=60)
    memories = [InMemoryMemory() for _ in histories]
    rounds = max(len(batches) for batches in histories)
    for turn in range(rounds):
        for memory, batches in zip(memories, histories, strict=True):
            if turn >= len(batches):
                continue
            for item in batches[turn]:
                if isinstance(item, Message) and item.role == "user":
                    memory.add_user_input(item)
                else:
                    memory.add_output_items([item])
            pruned._memo._prefixes._prune_at = -1  # prune at this prompt
            kept._memo._prefixes._prune_at = 10**9
            try:
                a = pruned.project(memory.snapshot(), tools=TOOLS)
            except BudgetError:
                with pytest.raises(BudgetError):
                    kept.project(memory.snapshot(), tools=TOOLS)
                continue
            b = kept.project(memory.snapshot(), tools=TOOLS)
            assert a.report.cached_prefix_tokens == b.report.cached_prefix_tokens
