"""The sectioned summary document and the digest's exact-fact extraction."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors import (
    SECTIONS,
    SUMMARY_TITLE,
    DigestCompressor,
    LadderCompressor,
    SummaryDocument,
    _entries,
    digest_items,
)
from compactkit.compressors import _facts as facts
from compactkit.compressors import _facts_ids as facts_ids
from compactkit.compressors import _facts_values as facts_values
from compactkit.compressors.digest import _files as files
from compactkit.compressors.digest import _shell_files as shell_files
from compactkit.formats.transcript import parse_transcript
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, item_text
from compactkit.items.snapshot import MemorySnapshot

COUNTER = TiktokenCounter("o200k_base")
PROPERTY = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])


def call(name: str, call_id: str, **args: Any) -> FunctionCall:
    return FunctionCall(call_id=call_id, name=name, arguments=json.dumps(args))


def out(call_id: str, text: str) -> FunctionCallOutput:
    return FunctionCallOutput(call_id=call_id, output=text)


# -- the document ------------------------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
    min_size=1,
    max_size=40,
).filter(lambda t: t.strip() and not t.strip().startswith(("#", "-", "*", "+", "_Note")))
_ENTRY = st.lists(_TEXT, min_size=1, max_size=3).map(
    lambda lines: "\n".join(line.strip() for line in lines)
)


@st.composite
def documents(draw: st.DrawFn) -> SummaryDocument:
    keys = draw(st.sets(st.sampled_from([s.key for s in SECTIONS if s.key != "values"])))
    doc = SummaryDocument.of(**{k: draw(st.lists(_ENTRY, max_size=4)) for k in keys})
    values = draw(st.lists(st.tuples(st.sampled_from(["a", "b_c"]), st.integers(0, 9)), max_size=4))
    doc = doc.merge(SummaryDocument.of(values=[f"`{n}` = {v}" for n, v in values]))
    return SummaryDocument(sections=doc.sections, trimmed=draw(st.integers(0, 3)))


@PROPERTY
@given(documents())
def test_render_parses_back_to_the_same_document(doc: SummaryDocument) -> None:
    assert SummaryDocument.parse(doc.render()) == doc
    assert SummaryDocument.parse(doc.render()).render() == doc.render()


@PROPERTY
@given(documents(), documents())
def test_merge_is_cumulative_and_idempotent(old: SummaryDocument, new: SummaryDocument) -> None:
    merged = old.merge(new)
    again = merged.merge(new)  # merging the same facts again adds no entry (repeats are counted)
    # (a fact touched again moves to the end of its section: the order is by last touch)
    assert _facts_of(again) == _facts_of(merged) and again.extra == merged.extra
    for spec in SECTIONS:
        if spec.key in (
            "state",
            "next_steps",
            "values",
            "files_read",
            "files_modified",
            "identifiers",
            "errors",
            "commands",
            "measurements",
        ):
            continue
        flat = [" ".join(e.split()).casefold() for e in merged.entries(spec.key)]
        for entry in (*old.entries(spec.key), *new.entries(spec.key)):
            assert " ".join(entry.split()).casefold() in flat
        assert len(flat) == len(set(flat))


def _facts_of(doc: SummaryDocument) -> dict[str, list[str]]:
    """Each section's facts: its entries' keys, without details or repeat counts."""
    return {
        key: sorted(_entries.entry_key(_entries.runs(e)[0]) for e in entries)
        for key, entries in doc.sections.items()
    }


def test_render_uses_the_documented_headings_in_order() -> None:
    doc = SummaryDocument.of(**{spec.key: [f"entry for {spec.key}"] for spec in SECTIONS})
    text = doc.render()
    assert text.startswith(SUMMARY_TITLE + "\n")
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert headings == [spec.heading for spec in SECTIONS]


def test_parse_is_lenient_with_llm_spellings_and_keeps_the_unknown() -> None:
    text = """Some earlier summary written by another tool.

### 1. Goal
* Ship it
### Constraints
1. Never push to main
   (agreed on Monday)
## Files changed
- `a.py` — edited
## Open questions
- Is the cache needed?
"""
    doc = SummaryDocument.parse(text)
    assert doc.entries("goal") == ("Ship it",)
    assert doc.entries("constraints") == ("Never push to main\n(agreed on Monday)",)
    assert doc.entries("files_modified") == ("`a.py` — edited",)
    assert doc.extra == {
        "Notes": ("Some earlier summary written by another tool.",),
        "Open questions": ("Is the cache needed?",),
    }
    assert SummaryDocument.parse(doc.render()) == doc


def test_merge_rules_per_section() -> None:
    old = SummaryDocument.of(
        constraints=["Never push to main."],
        files_modified=["`a.py` — created (3 lines)", "`b.py` — deleted"],
        values=["`max_attempts` = 3"],
        state=["Tests were red."],
        next_steps=["Fix the tests."],
    )
    new = SummaryDocument.of(
        constraints=["never  push to MAIN.", "Use httpx."],
        files_modified=["`a.py` — edited `x` → `y`"],
        values=["`max_attempts` = 5", "`timeout` = 30"],
        state=["Tests are green."],
    )
    merged = old.merge(new)
    assert merged.entries("constraints") == ("Never push to main.", "Use httpx.")
    assert merged.entries("files_modified") == (
        "`b.py` — deleted",
        "`a.py` — created (3 lines); edited `x` → `y`",
    )
    assert merged.entries("values") == (
        "`max_attempts` = 3 (superseded)",
        "`max_attempts` = 5 (current)",
        "`timeout` = 30 (current)",
    )
    assert merged.entries("state") == ("Tests are green.",)
    assert merged.entries("next_steps") == ("Fix the tests.",)  # not replaced by nothing


def test_values_keep_three_superseded_per_name_and_count_the_rest() -> None:
    doc = SummaryDocument()
    for value in range(6):
        doc = doc.merge(SummaryDocument.of(values=[f"`n` = {value}"]))
    assert doc.entries("values") == (
        "`n` = 2 (superseded)",
        "`n` = 3 (superseded)",
        "`n` = 4 (superseded)",
        "`n` = 5 (current)",
    )
    assert doc.trimmed == 2


def test_trim_to_drops_oldest_entries_first_and_notes_it() -> None:
    doc = SummaryDocument.of(
        goal=["Ship the retry feature."],
        constraints=["Never push to main."],
        commands=[f"`make step{i}` → exit 0" for i in range(100)],
    )
    trimmed = doc.trim_to(150, COUNTER)
    text = trimmed.render()
    assert COUNTER.count_text(text) <= 150
    assert trimmed.trimmed > 0
    assert f"_Note: {trimmed.trimmed} older entries were trimmed" in text
    commands = trimmed.entries("commands")
    # the newest survive, as their fact alone: context goes before any fact does
    assert commands and commands[-1] == "`make step99`"
    assert f"not listed: {doc_dropped(trimmed)} commands" in text  # what went is counted
    assert trimmed.entries("constraints") == ("Never push to main.",)  # trimmed last
    assert SummaryDocument.parse(text).trimmed == trimmed.trimmed
    assert doc.trim_to(100_000, COUNTER) is doc


def doc_dropped(doc: SummaryDocument) -> int:
    return doc.omitted["commands"]


def test_trim_to_an_impossible_cap_empties_the_document() -> None:
    doc = SummaryDocument.of(goal=["x " * 200], constraints=["y " * 200])
    trimmed = doc.trim_to(5, COUNTER)
    assert trimmed.is_empty and trimmed.trimmed == 2


# -- extraction --------------------------------------------------------------------------------


def test_errors_in_finds_tracebacks_pytest_compilers_and_shells() -> None:
    text = """\
Traceback (most recent call last):
  File "app.py", line 1, in <module>
KeyError: 'user_id'
FAILED tests/test_api.py::test_get - AssertionError: 404 != 200
error[E0308]: mismatched types
src/app.py:12: error: Incompatible return value type (got "int", expected "str")  [return-value]
Error: Cannot find module 'left-pad'
fatal: not a git repository (or any of the parent directories): .git
bash: pyest: command not found
"""
    assert facts.errors_in(text, limit=10) == [
        "KeyError: 'user_id'",
        "FAILED tests/test_api.py::test_get - AssertionError: 404 != 200",
        "error[E0308]: mismatched types",
        'src/app.py:12: error: Incompatible return value type (got "int", expected "str") [return-value]',
        "Error: Cannot find module 'left-pad'",
        "fatal: not a git repository (or any of the parent directories): .git",
        "bash: pyest: command not found",
    ]
    assert facts.last_error(text) == "bash: pyest: command not found"


@pytest.mark.parametrize(
    ("text", "outcome", "ok"),
    [
        ("==== 3 passed in 0.12s ====\n[exit code: 0]", "exit 0; `3 passed`", True),
        (
            "FAILED t.py::x - assert 1 == 2\n==== 1 failed, 2 passed in 0.1s ====\n[exit code: 1]",
            "exit 1; `1 failed, 2 passed`; `FAILED t.py::x - assert 1 == 2`",
            False,
        ),
        ("Process completed with exit code 2.", "exit 2", False),
        (
            "ModuleNotFoundError: No module named 'x'",
            "`ModuleNotFoundError: No module named 'x'`",
            False,
        ),
        ("Switched to branch 'main'", "output: `Switched to branch 'main'`", None),
        ("", "no output", None),
    ],
)
def test_outcome_of(text: str, outcome: str, ok: bool | None) -> None:
    assert facts.outcome_of(text) == (outcome, ok)


def test_identifiers_in() -> None:
    text = (
        "[feat/retry 4e8c2a1] Add retries (#64)\n"
        "see https://github.com/acme/app/pull/87, run 123e4567-e89b-12d3-a456-426614174000\n"
        "ticket PROJ-1234, issue #64, UTF-8, req_9f8a7b6c, deadbeef12, v1.5.0, 0x7f3c2a9e4d10"
    )
    found = dict(facts_ids.identifiers_in(text, prose=True, limit=20))
    assert found == {
        "4e8c2a1": "commit on feat/retry: `Add retries (#64)`",
        "https://github.com/acme/app/pull/87": "url",
        "123e4567-e89b-12d3-a456-426614174000": "uuid",
        "deadbeef12": "sha",
        "PROJ-1234": "ticket",
        "req_9f8a7b6c": "id",
        "#64": "issue",
        "v1.5.0": "version",
    }


def test_values_in_prose() -> None:
    text = (
        "Please bump max_attempts to 5 and change `timeout` from 10 to 30 seconds.\n"
        "MAX_WORKERS = 8\n"
        "`pool_size`: 4\n"
        "test_x: 3 requests instead of 4\n"
        "```\nignored = 1\n```"
    )
    assert facts_values.values_in_prose(text) == [
        ("max_attempts", "5", None),
        ("timeout", "30 seconds", "10"),
        ("MAX_WORKERS", "8", None),
        ("pool_size", "4", None),
    ]


def test_config_values() -> None:
    toml = '[retry]\nmax_attempts = 5\nurl = "https://x"\n# comment = 1\n'
    assert facts_values.config_values(toml, "config/app.toml") == [
        ("max_attempts", "5"),
        ("url", '"https://x"'),
    ]
    python = "TIMEOUT = 30\nclass A:\n    x: int = 3\nRETRIES: int = 4\nf = make(1)\n"
    assert facts_values.config_values(python, "app/settings.py") == [
        ("TIMEOUT", "30"),
        ("RETRIES", "4"),
    ]


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("read_file", {"path": "a.py"}, [("a.py", False, "read")]),
        (
            "read_file",
            {"path": "a.py", "start_line": 5, "end_line": 9},
            [("a.py", False, "read lines 5-9")],
        ),
        (
            "Read",
            {"file_path": "a.py", "offset": 10, "limit": 20},
            [("a.py", False, "read 20 lines from line 10")],
        ),
        (
            "grep",
            {"pattern": "TODO", "path": "src/a.py"},
            [("src/a.py", False, "searched for `TODO`")],
        ),
        ("write_file", {"path": "b.py", "content": "x\ny\n"}, [("b.py", True, "wrote (2 lines)")]),
        (
            "edit_file",
            {"path": "c.py", "old_str": "a = 1", "new_str": "a = 2"},
            [("c.py", True, "edited `a = 1` → `a = 2`")],
        ),
        (
            "str_replace_based_edit_tool",
            {"command": "view", "path": "d.py"},
            [("d.py", False, "read")],
        ),
        (
            "str_replace_based_edit_tool",
            {"command": "create", "path": "e.py", "file_text": "z"},
            [("e.py", True, "created (1 lines)")],
        ),
        ("delete_file", {"path": "f.py"}, [("f.py", True, "deleted")]),
        ("list_dir", {"path": "src/"}, []),
        (
            "apply_patch",
            {
                "input": "*** Begin Patch\n*** Update File: g.py\n@@\n-a\n+b\n+c\n*** Add File: h.py\n+x\n*** End Patch"
            },
            [("g.py", True, "patched (+2/-1 lines)"), ("h.py", True, "created (+1/-0 lines)")],
        ),
    ],
)
def test_file_ops_of_tool_calls(
    name: str, args: dict[str, Any], expected: list[tuple[str, bool, str]]
) -> None:
    assert [(op.path, op.modified, op.what) for op in files.file_ops(name, args)] == expected


def test_shell_commands_and_their_files() -> None:
    assert files.command_of("run_shell", {"command": "ls -la"}) == "ls -la"
    assert files.command_of("bash", {"cmd": ["git", "status"]}) == "git status"
    assert files.command_of("str_replace_based_edit_tool", {"command": "view", "path": "a"}) is None
    ops = shell_files.shell_file_ops(
        "cat src/a.py && sed -i 's/a/b/' src/b.py; rm old.txt | tee log.txt > out.json; "
        "mv x.py y.py; grep -n foo src/c.py; git checkout -- src/d.py"
    )
    assert [(op.path, op.modified) for op in ops] == [
        ("src/a.py", False),
        ("src/b.py", True),
        ("old.txt", True),
        ("out.json", True),
        ("log.txt", True),
        ("y.py", True),
        ("x.py", True),
        ("src/c.py", False),
        ("src/d.py", True),
    ]


def test_digest_items_covers_every_fact_class() -> None:
    items: list[Item] = [
        Message(
            role="user",
            content="Add retries to the client.\n\nRequirements:\n- Never change the public API.\n"
            "- Use httpx only.\n\nIt would be nice to be quick. Make sure tests pass.",
        ),
        Message(
            role="assistant", content="I decided to drop tenacity because it is a new dependency."
        ),
        call("read_file", "c1", path="src/client.py"),
        out("c1", "import httpx\n"),
        call(
            "edit_file",
            "c2",
            path="config/app.toml",
            old_str="max_attempts = 3",
            new_str="max_attempts = 5",
        ),
        out("c2", "ok"),
        call("run_shell", "c3", command="pytest -q"),
        out(
            "c3",
            "FAILED tests/t.py::test_a - KeyError: 'x'\n==== 1 failed in 0.1s ====\n[exit code: 1]",
        ),
        call("run_shell", "c4", command="pytest -q"),
        out("c4", "==== 4 passed in 0.1s ====\n[exit code: 0]"),
        call("run_shell", "c5", command="git commit -qam 'Retries (#64)'"),
        out("c5", "[main 9fceb02] Retries (#64)\n[exit code: 0]"),
        call("lookup_ticket", "c6", id="PROJ-7"),
        out("c6", "status: open"),
        Message(role="user", content="set `timeout` to 30"),
        Message(role="assistant", content="Done. Next I'll update the docs."),
    ]
    doc = digest_items(items)
    # A later request that states no rule is marked as one, among the rules in the order said.
    assert doc.entries("goal") == ("Add retries to the client.",)
    assert doc.entries("constraints") == (
        "Never change the public API.",
        "Use httpx only.",
        "Make sure tests pass.",
        "Later: set `timeout` to 30",
    )
    assert doc.entries("decisions") == (
        "I decided to drop tenacity because it is a new dependency.",
    )
    assert doc.entries("files_read") == ("`src/client.py` — read",)
    assert doc.entries("files_modified") == (
        "`config/app.toml` — edited `max_attempts = 3` → `max_attempts = 5`",
    )
    # One entry per command (its newest outcome, how often it ran); tool output quoted.
    assert doc.entries("commands") == (
        # the newest outcome, and the different one of the earlier run
        "`pytest -q` → exit 0; `4 passed` — earlier: exit 1; `1 failed`; "
        "`FAILED tests/t.py::test_a - KeyError: 'x'` (\N{MULTIPLICATION SIGN}2)",
        "`git commit -qam 'Retries (#64)'` → exit 0",
        '`lookup_ticket({"id": "PROJ-7"})` → output: `status: open`',
    )
    assert doc.entries("errors") == (
        "`FAILED tests/t.py::test_a - KeyError: 'x'` — from `pytest -q`; resolved: `pytest -q` succeeded later",
    )
    identifiers = doc.entries("identifiers")
    assert "`9fceb02` — commit on main: `Retries (#64)`" in identifiers
    assert "`PROJ-7` — ticket; id" in identifiers  # found in the text and as an id argument
    assert doc.entries("values") == (
        "`max_attempts` = 3 (superseded)",
        "`max_attempts` = 5 (current)",
        "`timeout` = 30 (current)",
    )
    assert doc.entries("state") == (
        "As of the last folded turn, the assistant said: Done. Next I'll update the docs.",
    )
    assert doc.entries("next_steps") == ("Next I'll update the docs.",)


def test_digest_reads_originals_of_masked_outputs() -> None:
    from compactkit.compressors import mask_output

    original = out("c1", "see https://ci.example.com/runs/9\n[exit code: 0]")
    items: list[Item] = [
        call("run_shell", "c1", command="make ci"),
        mask_output(original, tokens=99),
    ]
    assert not digest_items(items).entries("identifiers")
    with_originals = digest_items(items, originals={"c1": original})
    assert with_originals.entries("identifiers") == ("`https://ci.example.com/runs/9` — url",)


# -- repeated compaction -------------------------------------------------------------------------

_KINDS = ["constraint", "read", "modify", "command", "error", "identifier", "value", "decision"]


def _fact_group(kind: str, n: int) -> tuple[list[Item], str]:
    """Items stating one fact, and the text the summary must then contain."""
    cid = f"call_{kind}_{n}"
    if kind == "constraint":
        return [
            Message(role="user", content=f"Never use library{n} here.")
        ], f"Never use library{n} here."
    if kind == "read":
        return [
            call("read_file", cid, path=f"src/mod{n}.py"),
            out(cid, "x = 1\n"),
        ], f"`src/mod{n}.py` — read"
    if kind == "modify":
        return [
            call("write_file", cid, path=f"lib/w{n}.py", content="a\n"),
            out(cid, "ok"),
        ], f"`lib/w{n}.py` — wrote (1 lines)"
    if kind == "command":
        return [
            call("run_shell", cid, command=f"make target{n}"),
            out(cid, "[exit code: 0]"),
        ], f"`make target{n}` → exit 0"
    if kind == "error":
        text = f"Traceback (most recent call last):\n  File 'x'\nKeyError: 'key{n}'\n[exit code: 1]"
        return [
            call("run_shell", cid, command=f"python job{n}.py"),
            out(cid, text),
        ], f"KeyError: 'key{n}'"
    if kind == "identifier":
        return [
            call("run_shell", cid, command="gh pr view"),
            out(cid, f"https://example.com/pr/{n}"),
        ], f"https://example.com/pr/{n}"
    if kind == "value":
        return [
            Message(role="user", content=f"set `limit_{n}` to {n + 1}")
        ], f"`limit_{n}` = {n + 1} (current)"
    return [
        Message(role="assistant", content=f"I decided to use strategy {n} because it is faster.")
    ], f"strategy {n}"


def _filler(n: int) -> list[Item]:
    text = "\n".join(f"filler line {i}: lorem ipsum dolor sit amet" for i in range(200))
    return [
        call("read_file", f"call_filler_{n}", path="docs/big.md"),
        out(f"call_filler_{n}", text),
    ]


@PROPERTY
@given(
    st.lists(
        st.tuples(st.sampled_from(_KINDS), st.integers(0, 999)),
        min_size=1,
        max_size=24,
        unique=True,
    ),
    st.lists(st.integers(1, 6), min_size=1, max_size=8),
)
def test_every_fact_class_survives_repeated_compactions(
    events: list[tuple[str, int]], batch_sizes: list[int]
) -> None:
    compressor = DigestCompressor(keep_last_groups=0, summary_cap_tokens=100_000, counter=COUNTER)
    snapshot = MemorySnapshot.of([Message(role="system", content="You are an agent.")])
    expected: list[str] = []
    pending = list(events)
    sizes = iter(batch_sizes * 24)
    while pending:
        size = next(sizes)
        batch, pending = pending[:size], pending[size:]
        for kind, n in batch:
            items, fact = _fact_group(kind, n)
            snapshot = MemorySnapshot.of([*snapshot.items, *items], snapshot.summary)
            expected.append(fact)
        # Bulk, so that folding always pays (a digest that would grow the prompt is refused).
        snapshot = MemorySnapshot.of([*snapshot.items, *_filler(len(expected))], snapshot.summary)
        result = compressor.compress(snapshot)
        snapshot = result.snapshot
    # A last trivial user message lets the previous one be folded too.
    snapshot = MemorySnapshot.of([*snapshot.items, *_filler(-1)], snapshot.summary)
    snapshot = compressor.compress(
        MemorySnapshot.of([*snapshot.items, Message(role="user", content="ok")], snapshot.summary)
    ).snapshot
    summary = snapshot.summary
    for fact in expected:
        assert fact in summary, (fact, summary)
    assert "older entr" not in summary  # nothing trimmed under a generous cap


def test_a_small_cap_trims_the_oldest_and_says_so() -> None:
    compressor = DigestCompressor(keep_last_groups=0, summary_cap_tokens=200, counter=COUNTER)
    snapshot = MemorySnapshot.of([Message(role="user", content="Build it. Never push to main.")])
    for n in range(40):
        items, _ = _fact_group("command", n)
        snapshot = compressor.compress(
            MemorySnapshot.of(
                [*snapshot.items, *items, Message(role="user", content="go on")], snapshot.summary
            )
        ).snapshot
    doc = SummaryDocument.parse(snapshot.summary)
    assert COUNTER.count_text(snapshot.summary) <= 200
    assert doc.trimmed > 0 and "older entries were trimmed" in snapshot.summary
    assert doc.entries("goal") == ("Build it. Never push to main.",)
    commands = doc.entries("commands")
    assert commands[-1].startswith("`make target39`")  # the newest survive
    assert not any(c.startswith("`make target0`") for c in commands)


# -- the bundled session -------------------------------------------------------------------------


def _bundled() -> MemorySnapshot:
    text = (
        resources.files("compactkit")
        .joinpath("data/examples/coding_session.json")
        .read_text("utf-8")
    )
    return MemorySnapshot.from_items(parse_transcript(text).items)


def test_bundled_session_is_long_enough_to_need_compaction() -> None:
    snapshot = _bundled()
    assert len(snapshot.items) > 200
    assert 30_000 <= COUNTER.count(snapshot.items).tokens <= 60_000


def test_ladder_on_the_bundled_session_keeps_the_facts_that_matter() -> None:
    snapshot = _bundled()
    result = LadderCompressor(10_000, counter=COUNTER).compress(snapshot)
    assert result.outcome == "compacted", result.error
    assert result.stats.tokens_after is not None and result.stats.tokens_after <= 10_000
    # Each fact is in the summary, or still verbatim in the kept items.
    summary = result.snapshot.summary
    kept = "\n".join(item_text(i) for i in result.snapshot.items)
    for fact in [
        "Never commit to main: work on a branch called feat/retry-backoff.",  # constraint, verbatim
        "No new runtime dependencies (no tenacity, no backoff).",
        "don't retry POST requests",  # the later user correction
        "Don't add tomli anywhere.",
        "abandoning the `httpx.HTTPTransport(retries=...)` approach",  # decision
        "`weatherly/retry.py` — wrote (40 lines)",  # artifact trail
        "`max_attempts` = 5 (current)",  # value: current vs superseded
        "`max_attempts` = 3 (superseded)",
        "`4e8c2a1` — commit",  # identifiers (context may be shortened to fit)
        "https://github.com/weatherly-dev/weatherly/pull/87",
        "TypeError: RetrySettings.__init__() got an unexpected keyword argument 'retry_statuses'",
    ]:
        assert fact in summary or fact in kept, fact


def test_a_request_already_within_the_target_is_left_unchanged() -> None:
    # As the LLM summary decides: a target the request already fits asks for no fold, even
    # when the summary cap it reserves would leave less room than the conversation takes.
    snapshot = MemorySnapshot.from_items(
        [Message(role="user", content="Fix the retry bug. Never commit to main.")]
        + [i for n in range(12) for i in (call("run", f"c{n}", cmd="ls"), out(f"c{n}", "a\n" * 60))]
        + [Message(role="user", content="Go on.")]
    )
    before = COUNTER.count(snapshot.items).tokens
    for target in (before, before + 1, before + 200):
        result = DigestCompressor(target_tokens=target, counter=COUNTER).compress(snapshot)
        assert result.outcome == "unchanged" and result.snapshot is snapshot, target
    # Over the target it folds; and an explicit keep rule still folds whatever the target.
    assert (
        DigestCompressor(target_tokens=before - 1, counter=COUNTER).compress(snapshot).outcome
        == "compacted"
    )
    explicit = DigestCompressor(keep_last_groups=2, target_tokens=before * 2, counter=COUNTER)
    assert explicit.compress(snapshot).outcome == "compacted"
