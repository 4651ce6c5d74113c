"""The summary gives way before the newest group (docs/projector.md, rule 6).

When what is never dropped is over the budget with the summary whole, the summary sent is
trimmed to the room the rest leaves (the user's goal and rules kept whole when that is enough),
rather than the newest output cut or a ``BudgetError`` raised; the stored summary is unchanged,
and the next request with room sends it whole again. Asserted on what the projection sends.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit.budget import counter_for
from compactkit.compressors.masking import is_cut
from compactkit.compressors.sections import SummaryDocument
from compactkit.compressors.shrink import user_words_summary
from compactkit.errors import BudgetError
from compactkit.governance.projector import ContextProjector
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.snapshot import MemorySnapshot, is_summary_message, unseal_summary

COUNTER = counter_for("gpt-4o")
GOAL = "Fix the failing date parser in src/dates.py without changing its public API."
RULES = [
    f"Rule {n}: never edit tests/test_case_{n}.py; keep the changelog in order." for n in range(8)
]


def digest(files: int = 120, rules: list[str] = RULES) -> str:
    """A running summary as a digest writes it: the user's words and many facts."""
    return SummaryDocument.of(
        goal=[GOAL],
        constraints=rules,
        files_read=[
            f"src/pkg/module_{n}.py (read for the helper it defines)" for n in range(files)
        ],
        commands=[f"pytest tests/test_case_{n}.py -x -q" for n in range(files // 2)],
        decisions=[f"Chose approach {n} because the earlier one broke parsing." for n in range(20)],
    ).render()


def output(tokens: int, call: str = "c9") -> FunctionCallOutput:
    words = " ".join(f"line{n}" for n in range(tokens))
    return FunctionCallOutput(call_id=call, output=words[: len(words)])


def snapshot(summary: str, newest_tokens: int) -> MemorySnapshot:
    items: list[Item] = [
        Message(role="user", content="Go on with the fix."),
        FunctionCall(call_id="c9", name="read_file", arguments='{"path": "src/dates.py"}'),
        output(newest_tokens),
    ]
    return MemorySnapshot.of(items, summary)


def sent_summary(items: list[Item]) -> str:
    found = [unseal_summary(item.text) for item in items if is_summary_message(item)]
    assert len(found) == 1, "the summary is sent exactly once"
    return found[0]


def fits_whole(summary: str, newest_tokens: int, budget: int) -> bool:
    projector = ContextProjector(COUNTER, budget=10**9)
    return projector.project(snapshot(summary, newest_tokens)).tokens <= budget


def test_a_newest_output_that_fits_beside_a_trimmed_summary_is_sent_whole() -> None:
    summary = digest()
    whole = ContextProjector(COUNTER, budget=10**9).project(snapshot(summary, 1_500)).tokens
    budget = whole - 400  # the summary must give 400 tokens
    projector = ContextProjector(COUNTER, budget=budget)
    sent = projector.project(snapshot(summary, 1_500))
    items = list(sent.items)
    assert sent.tokens <= budget
    assert COUNTER.count(items).tokens == sent.tokens
    assert items[-1] == output(1_500) and not is_cut(items[-1])  # verbatim, last
    text = sent_summary(items)
    assert COUNTER.count_text(text) < COUNTER.count_text(summary)
    kept = SummaryDocument.parse(text)
    assert kept.entries("goal") == (GOAL,) and kept.entries("constraints") == tuple(RULES)
    assert "trimmed" in text  # the summary's own note says entries were left out
    assert any("summary trimmed" in note for note in sent.report.notes)
    # The stored summary is unchanged: with room again, it is sent whole.
    again = projector.project(snapshot(summary, 50))
    assert sent_summary(list(again.items)) == summary


def test_when_the_rules_alone_outgrow_the_room_the_oldest_go_first() -> None:
    rules = [f"Rule {n}:" + " keep every public name stable and documented." * 6 for n in range(30)]
    summary = digest(files=10, rules=rules)
    whole = ContextProjector(COUNTER, budget=10**9).project(snapshot(summary, 800)).tokens
    rules_tokens = COUNTER.count_text("\n".join(rules))
    budget = whole - rules_tokens // 2
    sent = ContextProjector(COUNTER, budget=budget).project(snapshot(summary, 800))
    items = list(sent.items)
    assert sent.tokens <= budget and items[-1] == output(800)
    kept = SummaryDocument.parse(sent_summary(items)).entries("constraints")
    assert kept and len(kept) < len(rules)
    assert kept == tuple(rules[-len(kept) :])  # the newest rules kept, in order


def test_a_prose_summary_is_trimmed_too() -> None:
    paragraphs = [
        f"Paragraph {n}: the agent looked at module {n} and found nothing." for n in range(60)
    ]
    summary = "\n\n".join(paragraphs)
    whole = ContextProjector(COUNTER, budget=10**9).project(snapshot(summary, 600)).tokens
    budget = whole - 300
    sent = ContextProjector(COUNTER, budget=budget).project(snapshot(summary, 600))
    items = list(sent.items)
    assert sent.tokens <= budget and items[-1] == output(600)
    text = sent_summary(items)
    assert paragraphs[-1] in text  # the newest part of the summary is kept


def test_an_output_larger_than_the_budget_is_still_cut_and_the_summary_kept_whole() -> None:
    summary = digest(files=20)
    budget = 3_000
    sent = ContextProjector(COUNTER, budget=budget).project(snapshot(summary, 20_000))
    items = list(sent.items)
    assert sent.tokens <= budget and is_cut(items[-1])
    assert sent_summary(items) == summary  # trimming it would not have saved the output


def test_a_latest_user_input_larger_than_the_budget_still_raises() -> None:
    huge = MemorySnapshot.of([Message(role="user", content="please " * 9_000)], digest())
    with pytest.raises(BudgetError) as raised:
        ContextProjector(COUNTER, budget=6_000).project(huge)
    assert raised.value.part == "latest user input"
    assert "Raise the budget" in str(raised.value)


def test_the_cache_aware_projection_sends_the_same_fitted_summary() -> None:
    summary = digest()
    whole = ContextProjector(COUNTER, budget=10**9).project(snapshot(summary, 1_500)).tokens
    budget = whole - 400
    plain = ContextProjector(COUNTER, budget=budget).project(snapshot(summary, 1_500))
    aware = ContextProjector(COUNTER, budget=budget, cache_aware=True)
    first = aware.project(snapshot(summary, 1_500))
    assert list(first.items) == list(plain.items) and first.tokens <= budget


@settings(deadline=None, max_examples=60)
@given(
    files=st.integers(0, 150),
    newest=st.integers(1, 4_000),
    give=st.integers(1, 3_000),
)
@example(files=120, newest=1_500, give=400)
@example(files=0, newest=10, give=1)
def test_never_over_budget_and_the_newest_whole_when_a_shortest_summary_allows(
    files: int, newest: int, give: int
) -> None:
    summary = digest(files=files)
    whole = ContextProjector(COUNTER, budget=10**9).project(snapshot(summary, newest)).tokens
    budget = max(1, whole - give)
    shortest = SummaryDocument.parse(summary).trim_to(1, COUNTER).render()
    try:
        sent = ContextProjector(COUNTER, budget=budget).project(snapshot(summary, newest))
    except BudgetError:
        assert not fits_whole(shortest, newest, budget)  # not even the shortest summary fits
        return
    items = list(sent.items)
    assert sent.tokens <= budget
    text = sent_summary(items)
    if fits_whole(shortest, newest, budget):
        assert items[-1] == output(newest)  # the summary gave way, not the output
    if text != summary:
        assert not fits_whole(summary, newest, budget)  # trimmed only when it had to be


def test_the_rules_stay_whole_while_other_last_trimmed_facts_can_make_the_room() -> None:
    # The constraints are the largest of the sections trimmed last (with the goal and the
    # current values): the values give way first, the user's rules stay whole.
    rules = [
        f"Rule {n}: every public function keeps its signature and its docstring." for n in range(12)
    ]
    values = [f"retry_limit_{n} = {n}" for n in range(40)]
    summary = SummaryDocument.of(goal=[GOAL], constraints=rules, values=values).render()
    whole = ContextProjector(COUNTER, budget=10**9).project(snapshot(summary, 500)).tokens
    budget = whole - COUNTER.count_text("\n".join(values)) // 2
    sent = ContextProjector(COUNTER, budget=budget).project(snapshot(summary, 500))
    items = list(sent.items)
    assert sent.tokens <= budget and items[-1] == output(500)
    kept = SummaryDocument.parse(sent_summary(items))
    assert kept.entries("constraints") == tuple(rules) and kept.entries("goal") == (GOAL,)
    assert len(kept.entries("values")) < len(values)


WORDS = [f"In step {n} the agent read src/module_{n}.py and kept the API." for n in range(80)]
NO_SPACES = [f"手順{n}でエージェントはファイルを読み、公開APIを変えなかった。" for n in range(120)]


@pytest.mark.parametrize(
    ("sentences", "joiner"), [(WORDS, " "), (NO_SPACES, "")], ids=["words", "no-spaces"]
)
def test_a_summary_without_sections_keeps_its_head_and_its_newest_part(
    sentences: list[str], joiner: str
) -> None:
    # An LLM's or a user's summary has no sections to trim by: it is cut once, at a word
    # boundary (at a character in scripts without spaces), its head and newest part kept, with
    # a marker, to the room left.
    summary = joiner.join(sentences)
    whole = ContextProjector(COUNTER, budget=10**9).project(snapshot(summary, 900)).tokens
    budget = whole - COUNTER.count_text(summary) // 2
    sent = ContextProjector(COUNTER, budget=budget).project(snapshot(summary, 900))
    items = list(sent.items)
    assert sent.tokens <= budget and items[-1] == output(900)
    text = sent_summary(items)
    assert text.startswith(sentences[0][:6]) and text.endswith(sentences[-1])
    assert "left out here to fit" in text
    # the cut uses the room it has: the request is nearly full, not the marker alone
    assert sent.tokens >= budget - 20


def test_a_cache_aware_replan_sends_the_summary_whole_when_the_budget_holds_it() -> None:
    # The cache-aware projector re-plans a window at a lower fill (room to grow); that fill
    # must not trim a summary the real budget holds whole.
    summary = digest(files=150)
    items: list[Item] = [Message(role="user", content="Fix the parser; keep the tests green.")]
    for n in range(12):
        items.append(FunctionCall(call_id=f"old{n}", name="read_file", arguments="{}"))
        items.append(FunctionCallOutput(call_id=f"old{n}", output=f"line of code {n}\n" * 120))
    items += [
        FunctionCall(call_id="c9", name="read_file", arguments='{"path": "src/dates.py"}'),
        output(1_800),
    ]
    state = MemorySnapshot.of(items, summary)
    head = ContextProjector(COUNTER, budget=10**9).project(snapshot(summary, 1_800)).tokens
    budget = head * 100 // 85  # summary and newest group: 85 % of the budget
    plain = ContextProjector(COUNTER, budget=budget).project(state)
    aware = ContextProjector(COUNTER, budget=budget, cache_aware=True).project(state)
    assert plain.report.omitted or plain.report.masked  # (so the re-plan runs)
    assert sent_summary(list(plain.items)) == summary
    assert sent_summary(list(aware.items)) == summary
    assert aware.tokens <= budget and aware.items[-1] == output(1_800)


def test_a_budget_error_names_the_part_that_keeps_the_request_over_not_the_summary() -> None:
    # The summary is trimmed to its shortest before the error: what is over is the rest.
    instructions = "Follow the house rules. " * 500  # about 2,500 tokens
    with pytest.raises(BudgetError) as raised:
        ContextProjector(COUNTER, budget=2_000).project(
            snapshot(digest(), 10), instructions=instructions
        )
    assert raised.value.part == "system instructions"
    assert "make the system instructions smaller" in str(raised.value)


def test_a_cache_aware_session_sends_the_summary_whole_again_once_there_is_room() -> None:
    # A turn whose newest output left the summary no room sends it trimmed; the next turns
    # (the output no longer the newest, so it may be masked) send it whole, as a fresh plan
    # does, even when the short new message would fit the trimmed prompt's slack.
    summary = digest(files=60)
    first = snapshot(summary, 2_400)
    whole = ContextProjector(COUNTER, budget=10**9).project(first).tokens
    for give in range(600, 700):  # a budget whose trimmed prompt leaves a few tokens of slack
        budget = whole - give
        trimmed = ContextProjector(COUNTER, budget=budget).project(first)
        if budget - trimmed.tokens >= 8:
            break
    else:
        raise AssertionError("no budget leaves slack")
    aware = ContextProjector(COUNTER, budget=budget, cache_aware=True)
    assert sent_summary(list(aware.project(first).items)) != summary  # trimmed for this turn
    items = list(first.items)
    for _turn in range(3):
        items.append(Message(role="user", content="ok"))
        state = MemorySnapshot.of(items, summary)
        sent = aware.project(state)
        plain = ContextProjector(COUNTER, budget=budget).project(state)
        assert sent.tokens <= budget
        assert sent_summary(list(sent.items)) == sent_summary(list(plain.items)) == summary


def test_an_output_the_budget_could_hold_is_cut_only_after_every_other_fact_gave_way() -> None:
    # A long new task crowds the newest output: every fact of the summary but the user's goal
    # and rules goes first, and the output keeps all the rest of the room (not cut to its
    # marker beside a summary of files and commands; the user's words not dropped for a few
    # more tokens of an output cut anyway).
    summary = digest()
    task = Message(role="user", content="Rules for this task: " + "keep the API stable. " * 300)
    call = FunctionCall(call_id="c9", name="read_file", arguments='{"path": "src/dates.py"}')
    state = MemorySnapshot.of([task, call, output(1_000)], summary)
    words = user_words_summary(summary, COUNTER)
    assert words is not None
    at_floor = MemorySnapshot.of([task, call, output(1_000)], words)
    floor = ContextProjector(COUNTER, budget=10**9).project(at_floor).tokens
    budget = floor - 200  # the goal and rules leave the output 200 tokens short
    sent = ContextProjector(COUNTER, budget=budget).project(state)
    items = list(sent.items)
    assert sent.tokens <= budget
    kept = SummaryDocument.parse(sent_summary(items))
    assert kept.entries("goal") == (GOAL,) and kept.entries("constraints") == tuple(RULES)
    assert set(kept.sections) == {"goal", "constraints"}
    assert is_cut(items[-1]) and sent.tokens >= budget - 60  # the output keeps the rest
