"""The digest reads each text in fewer passes (issue 35): an assignment tried only where one can
start, a log line's CI prefix only stripped when it can hold one, an ASCII text's identifiers
found from one scan of its digit runs, a dotted call tried only before a "()". What each reader returns is exactly what the patterns
return when run everywhere."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from merge_oracle import merge_keyed_reference

from compactkit.compressors import _entries
from compactkit.compressors import _facts as facts
from compactkit.compressors import _facts_ids as facts_ids
from compactkit.compressors import _facts_prose as facts_prose
from compactkit.compressors import _facts_values as facts_values
from compactkit.compressors.digest import _call_arguments as call_arguments
from compactkit.compressors.digest import _files as files
from compactkit.items import FunctionCall

PROPERTY = settings(deadline=None, max_examples=500)


def _spans(matches: object) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
    return [(m.span(), m.groups()) for m in matches]  # type: ignore[attr-defined]


ASSIGNMENT_PARTS = [
    "timeout=30",
    "x_y = 1",
    "`pool_size: 4`",
    "(max_n=3)",
    "a,b=2",
    "key:  5",
    "k = =5",
    "k==5",
    "name :true",
    "url: 'x'",
    "x.y-z: null",
    "ratio_a:\t0.5",
    "x = 5 (current)",
]


@PROPERTY
@given(
    st.lists(
        st.one_of(
            st.sampled_from(ASSIGNMENT_PARTS),
            st.text(st.sampled_from("ab_x1.-=: `(,\t\"'tN\u00a0é"), max_size=12),
        ),
        max_size=6,
    ).map(" ".join)
)
def test_assignments_tried_where_they_can_start_are_the_matches_of_the_pattern(
    line: str,
) -> None:
    assert _spans(facts_values._assignments_in(line)) == _spans(
        facts_values._ASSIGNMENT.finditer(line)
    )


def _logged_error_reference(line: str) -> str | None:
    """``_logged_error`` as first written: the CI prefix always stripped and matched."""
    stripped = facts._PYTEST_E.sub("", facts._CI_PREFIX.sub("", line, count=1))
    if facts._is_error_line(stripped):
        return stripped
    marked = facts._ANNOTATION.sub("", stripped, count=1)
    if marked != stripped and marked.strip():
        return marked.strip()
    stripped = line
    for _ in range(4):
        shorter = facts._LOG_PREFIX.sub("", stripped, count=1)
        if shorter == stripped or not shorter:
            return None
        stripped = shorter
        if facts._is_error_line(stripped):
            return stripped
    return None


LOG_PARTS = [
    "2024-01-02T03:04:05Z ",
    "build\tstep\t",
    "job  step  ",
    "E   ",
    "##[error]",
    "svc | ",
    "[worker] ",
    "KeyError: 'x'",
    "error: boom",
    "Error: x",
    "12:00:01 ",
    "plain words",
]


@PROPERTY
@given(st.lists(st.sampled_from(LOG_PARTS), max_size=5).map("".join))
def test_a_log_line_read_without_a_ci_prefix_pass_gives_the_same_error(line: str) -> None:
    line = facts._PYTEST_E.sub("", line.strip())
    if facts._is_error_line(line):  # the caller only asks for lines that fail it
        return
    assert facts._logged_error(line) == _logged_error_reference(line)


def _shas_reference(text: str) -> list[str]:
    """The shas ``identifiers_in`` may add: ``_SHA`` matches holding a digit and a letter."""
    shas = [s for s in facts_ids._SHA.findall(text) if not s.isdigit() and not s.isalpha()]
    return list(dict.fromkeys(shas))


def _run_shas(text: str) -> list[str]:
    runs = facts_ids._digit_runs(text)
    return [] if runs is None else runs.shas


HEX_TEXT = st.text(st.sampled_from("0123456789abcdefxX_-./ gZ\u00e9\u0663\u2713"), max_size=60)


@PROPERTY
@given(HEX_TEXT)
def test_shas_read_from_the_digit_runs_are_the_matches_of_the_pattern(text: str) -> None:
    assert _run_shas(text) == _shas_reference(text)


@pytest.mark.parametrize(
    "text",
    [
        "9f2c1ab",
        "commit 9f2c1ab.",
        "0x9f2c1ab",
        "/9f2c1ab",
        "a9f2c1ab-",
        "deadbeef1 deadbeef1",
        "1234567",
        "abcdefa",
        "f" * 39 + "1",
        "f" * 40 + "1",
        "x-9f2c1ab 9f2c1ab_",
        "\u00e99f2c1ab \u2713 9f2c1ab\u0663",
        "\u27139f2c1ab\u2713",
    ],
)
def test_each_sha_edge_is_read_as_the_pattern_reads_it(text: str) -> None:
    assert _run_shas(text) == _shas_reference(text)


@PROPERTY
@given(
    st.lists(
        st.sampled_from(["-1", "A12345678", "Z1234567", "a12345678", "-a1", "X-", "1"])
        | st.text(st.sampled_from("0123456789abcdefAZ-_ "), max_size=10),
        max_size=8,
    ).map("".join)
)
def test_the_digit_hints_read_from_the_runs_are_the_patterns(text: str) -> None:
    runs = facts_ids._digit_runs(text)
    assert (runs is not None) == any(c.isdigit() for c in text)
    runs = runs or facts_ids._NO_DIGIT
    assert runs.dash_digit == (facts_ids._TICKET_HINT.search(text) is not None)
    assert runs.capital_digits == (facts_ids._CODE_ID_HINT.search(text) is not None)


@PROPERTY
@given(
    st.text(st.sampled_from("0123456789abcdefvV.-#_ AZPRissue\u00e9\u0663"), max_size=50),
    st.booleans(),
)
def test_identifiers_from_digit_runs_are_those_the_generic_reading_finds(
    text: str, prose: bool
) -> None:
    """The digit-run path and the generic one (every hinted pattern, shas by ``_SHA``) agree,
    in ASCII text and beyond."""
    generic = _generic_identifiers(text, prose=prose)
    assert facts_ids.identifiers_in(text, prose=prose) == generic


def _generic_identifiers(text: str, *, prose: bool) -> list[tuple[str, str]]:
    """``identifiers_in`` with the digit-run path switched off (``_digit_runs`` never used)."""
    found: dict[str, str] = {}
    urls = [u.rstrip(".,;:!?") for u in facts_ids._URL.findall(text)] if "://" in text else []
    for url in urls:
        found.setdefault(url, "url")
    inside_urls = " ".join(urls)
    if "-" in text and facts_ids._UUID_HINT.search(text):
        for uuid in facts_ids._UUID.findall(text):
            found.setdefault(uuid, "uuid")
    facts_ids._add_found_shas(_shas_reference(text), found, inside_urls)
    facts_ids._add_ids(text, found, dash="-" in text, underscore="_" in text)
    if prose:
        facts_ids._add_prose_ids(text, found, inside_urls)
    if "] " in text:  # (no git commit line in these texts: checked, not read)
        assert not re.search(facts_ids._GIT_COMMIT, text)
    return list(found.items())[:8]


_SENTENCE_END_AS_WRITTEN = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(])|\n+")


@PROPERTY
@given(st.text(st.sampled_from("ab.!? \n\t\u00a0A\"'`(x"), max_size=40))
def test_sentences_split_where_the_pattern_as_written_splits(text: str) -> None:
    assert facts_prose._SENTENCE_END.split(text) == _SENTENCE_END_AS_WRITTEN.split(text)


@PROPERTY
@given(
    st.lists(
        st.sampled_from(
            [
                "must",
                "xmust",
                "mustx",
                "don't",
                "do not",
                "because",
                "_because",
                "instead",
                "tried it, but",
                "next",
                "then i'll",
                "1must",
                "no",
                "not",
                "none",
                "a",
                "-",
                "\n",
            ]
        ),
        max_size=6,
    ).map("".join),
    st.sampled_from([facts_prose.CONSTRAINT, facts_prose.DECISION, facts_prose.NEXT_STEP]),
)
def test_grouped_phrases_find_a_match_where_the_phrases_as_written_do(
    text: str, pattern: re.Pattern[str]
) -> None:
    """Phrases glued to words and to each other: the boundary looked for behind a phrase's first
    letter is the boundary before it."""
    assert facts_prose.says(pattern, text) == (pattern.search(text) is not None)


_EDGES = st.text(st.sampled_from("-'(.`/_a1 \n"), max_size=2)


@PROPERTY
@given(
    _EDGES,
    st.sampled_from(["must", "no", "because", "instead", "next", "todo", "rather than", "use"]),
    _EDGES,
    st.sampled_from([facts_prose.CONSTRAINT, facts_prose.DECISION, facts_prose.NEXT_STEP]),
)
def test_a_phrase_between_any_characters_is_found_where_the_phrases_as_written_find_it(
    before: str, phrase: str, after: str, pattern: re.Pattern[str]
) -> None:
    """One phrase, after and before punctuation, a word character, a space or nothing: the
    character the grouped pattern reads before a phrase is a boundary where ``\\b`` is one."""
    text = before + phrase + after
    assert facts_prose.says(pattern, text) == (pattern.search(text) is not None)
    sentences = [text, text.upper()]
    expected = [s for s in sentences if pattern.search(s)]
    assert facts_prose.saying(pattern, sentences) == expected


@PROPERTY
@given(
    st.one_of(
        st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5))).map(
            json.dumps
        ),
        st.text(st.sampled_from('{}[]":, 1a\n'), max_size=12),
    )
)
def test_call_arguments_read_from_their_text_are_what_the_call_parses(text: str) -> None:
    call = FunctionCall(call_id="c", name="t", arguments=text)
    assert call_arguments.arguments_text(text) == call.parsed_arguments()


KEYED_DETAILS = [
    "read",
    "Read",
    "edited",
    "edited \u00d72",
    "write_file",
    "a \u00d75 \u00d71",
    "a \u00d75",
    "a",
    "3 earlier omitted",
    "x; y",
    "sha",
    "url [#4]",
    "",
]


@PROPERTY
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["`a`", "`b`", "`a` — c", "plain"]),
            st.lists(st.sampled_from(KEYED_DETAILS), max_size=3),
            st.sampled_from(["", " [#3]", " [#5\u20136]"]),
        ),
        max_size=30,
    )
)
def test_keyed_entries_counted_again_merge_as_merging_each_one(
    parts: list[tuple[str, list[str], str]],
) -> None:
    new = [
        (f"{head} — {'; '.join(details)}" if details else head) + refs
        for head, details, refs in parts
    ]
    fast: dict[str, str] = {}
    slow: dict[str, str] = {}
    _entries.merge_keyed_into(fast, new)
    merge_keyed_reference(slow, new)
    assert list(fast.items()) == list(slow.items())


@pytest.mark.parametrize(
    "new",
    [
        # a detail that reads back as another's count ("a, five times" read as "a"): the entry
        # written is read back merged, not counted again where it stands
        ["`a` — a", "`a` — a \u00d75 \u00d71", "`a` — a", "`a` — a"],
        ["`a` — b", "`a` — 2 earlier omitted", "`a` — c", "`a` — c"],
        ["`a` — " + "; ".join("bcdefgh"), "`a` — h", "`a` — h", "`a` — i", "`a` — i"],
        ["`a` — b [#2]", "`a` — b", "`a` — b"],
        # a last detail that ends like references ("url [#4]") reads back as a reference
        ["`a`", "`a` — url [#4]; ", "`a` — url [#4]; "],
    ],
)
def test_each_written_entry_counted_again_is_what_merging_it_writes(new: list[str]) -> None:
    fast: dict[str, str] = {}
    slow: dict[str, str] = {}
    _entries.merge_keyed_into(fast, new)
    merge_keyed_reference(slow, new)
    assert list(fast.items()) == list(slow.items())


MEASURE_PARTS = [
    "12 ms",
    "3.5s",
    "x1 ms",
    ".5 ms",
    "$ 4",
    "€3",
    "7 passed",
    "a7 passed",
    "src/a.py",
    "a.b(",
    'File "x"',
    "  at x",
    "1,234 tokens",
    "5 %",
    "٣ ms",
]


@PROPERTY
@given(
    st.lists(
        st.one_of(
            st.sampled_from(MEASURE_PARTS),
            st.text(st.sampled_from("1.,/ab$€ sFile(-_"), max_size=6),
        ),
        max_size=5,
    ).map("".join)
)
def test_lines_with_a_measurement_or_a_path_are_those_the_patterns_as_written_find(
    line: str,
) -> None:
    assert bool(facts._MEASURED.search(line)) == bool(facts._MEASURE.search(line))
    assert bool(facts._PATH_LIKE.search(line)) == bool(facts._PATHISH.search(line))


def _clip_as_written(text: str, limit: int) -> str:
    """``clip`` reading the whole text."""
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@PROPERTY
@given(
    st.lists(
        st.sampled_from(["ab", " ", " " * 30, "\n", "\t", "\u00a0", "é", "x" * 20]), max_size=40
    ).map("".join),
    st.integers(1, 30),
)
def test_a_long_text_clipped_from_its_start_is_clipped_as_the_whole_text(
    text: str, limit: int
) -> None:
    assert facts.clip(text, limit) == _clip_as_written(text, limit)


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("x" * 20 + " " * 150, 20),  # its start collapsed is one longer than the limit
        ("x" * 21 + " " * 150, 20),
        (" " * 200 + "x" * 30, 10),
        ("x" * 19 + "\n" * 150 + "y", 20),
    ],
)
def test_a_long_text_ending_in_space_is_clipped_as_the_whole_text(text: str, limit: int) -> None:
    assert facts.clip(text, limit) == _clip_as_written(text, limit)


@PROPERTY
@given(
    st.lists(st.sampled_from(["===", "==", "-", "**", " ", "3 passed", "x", "\t", "~~~~"]))
    .map("".join)
    .map(str.strip)
    .filter(bool),
)
def test_a_measurement_keeps_its_rules_only_when_it_holds_none(line: str) -> None:
    """Its rules are taken off (``_BANNER``) only when the line starts or ends with a rule's
    character: else there is none to take off."""
    assert facts.measurements_in(line + " 5 ms") == (
        [facts._BANNER.sub("", line + " 5 ms")]
        if len(line) + 5 <= 100 and not facts._PATH_LIKE.search(line + " 5 ms")
        else []
    )
    if line[0] not in "=*#~_-" and line[-1] not in "=*#~_-":
        assert facts._BANNER.sub("", line) == line


VERSION_PARTS = [
    "v1.2.3",
    "1.2.3-rc.1",
    "10.0.1+b",
    "a1.2.3",
    ".1.2.3",
    "v.1.2",
    "xv1.2.3",
    "1.2",
    "1e.2.3",
    "ab1.2.3",
    "0x1f.2.3",
    "1a2.3.4",
    "v1e.2.3",
    "\u0663.\u0664.\u0665",
    "v\u0663.1.2",
    "\u00e91.2.3",
]


@PROPERTY
@given(
    st.lists(
        st.sampled_from(VERSION_PARTS)
        | st.text(st.sampled_from("v1.2-+ _xaef\u0663\u00e9"), max_size=6),
        max_size=8,
    ).map("".join)
)
def test_versions_tried_at_their_digit_runs_are_the_matches_of_the_pattern(text: str) -> None:
    assert facts_ids._versions(text) == facts_ids._VERSION.findall(text)


SENTENCE_PARTS = [
    "no",
    "going",
    "with",
    "then",
    "I'll",
    "because",
    "xbecause",
    "we decided",
    "going with",
    "tried it, but",
    "next",
    "then I'll",
    "must",
    "do not",
    "Instead",
    "approach",
    "\n",
    " ",
    ".",
    "é",
    "\u212a",
    "a",
]


@settings(deadline=None, max_examples=1500)
@given(
    st.lists(
        st.lists(st.sampled_from(SENTENCE_PARTS), max_size=5).map(" ".join)
        | st.lists(st.sampled_from(SENTENCE_PARTS), max_size=5).map("".join),
        max_size=8,
    ),
    st.sampled_from([facts_prose.CONSTRAINT, facts_prose.DECISION, facts_prose.NEXT_STEP]),
)
def test_sentences_read_together_say_what_each_says(
    sentences: list[str], pattern: re.Pattern[str]
) -> None:
    """Sentences joined by line breaks and searched once: the same sentences as one search
    each, phrases at their edges, split by line breaks inside them, or non-ASCII."""
    each = [facts_prose.says(pattern, s) for s in sentences]
    assert facts_prose.said(pattern, sentences) == each
    assert facts_prose.saying(pattern, sentences) == [
        s for s, yes in zip(sentences, each, strict=True) if yes
    ]


@PROPERTY
@given(
    st.lists(
        st.sampled_from(["a.py", "'src/x.py'", "self.assert", "-v", "http://x.io/a.py", "t/"])
        | st.text(st.sampled_from("ab./-'\"= \n"), max_size=8),
        max_size=24,
    ).map(" ".join)
)
def test_paths_in_a_command_are_its_first_eight_path_arguments(command: str) -> None:
    plain = [
        m.group(1) for m in files._PATH_ARG.finditer(command) if files.looks_like_path(m.group(1))
    ]
    assert files.paths_in_command(command) == plain[:8]


DOTTED_CALL_PARTS = [
    "a.b()",
    "Client.request()",
    "x.y.z()",
    "\u00e9t\u00e9.b()",
    "\u0663a.b()",
    ".a.b()",
    "a..b()",
    "_a.b()()",
    "1a.b()",
    "a.b ()",
    "foo()",
    "a.b(x)",
    "a-b.c()",
    "/a.b()",
]


@PROPERTY
@given(
    st.lists(
        st.sampled_from(DOTTED_CALL_PARTS)
        | st.text(st.sampled_from("ab._()1 -\u00e9"), max_size=6),
        max_size=8,
    ).map("".join)
)
def test_dotted_calls_tried_where_their_run_starts_are_the_matches_of_the_pattern(
    text: str,
) -> None:
    assert facts_prose._dotted_calls(text) == facts_prose._DOTTED_CALL.findall(text)


CODE_PATH_PARTS = [
    "src/app.py",
    "./a/b.py",
    "../x-y/z.tar.gz",
    "a//b.c",
    "/etc/hosts.conf",
    "http://h.io/a.html",
    "-a/b.py",
    "x-/b.py",
    "a.b-c/d.e-f/g.h",
    "\u00e9t\u00e9/a.py",
    "\u0663/a.py",
    "a/b.py/",
    "a/b.py-c/d.py",
    "a/b.py.",
    "a/.b",
    "a/b.toolongext",
]


@PROPERTY
@given(
    st.lists(
        st.sampled_from(CODE_PATH_PARTS)
        | st.text(st.sampled_from("ab/.-_1 \u00e9\u0663:"), max_size=8),
        max_size=8,
    ).map("".join)
)
def test_code_paths_tried_where_a_run_before_a_slash_can_start_are_the_matches_of_the_pattern(
    text: str,
) -> None:
    assert facts_prose._code_paths(text) == facts_prose._CODE_PATH.findall(text)


PROSE_LINE_PARTS = [
    "A line.",
    "- item",
    "-",
    "- ",
    "* x",
    "12. twelve",
    "3) three",
    "\u0663. arabic three",
    "```",
    "```py\ncode\n```",
    "  indented",
    "\t",
    "Next. Then",
]


@PROPERTY
@given(
    st.lists(
        st.sampled_from(PROSE_LINE_PARTS) | st.text(st.sampled_from("aB. -*1\t\u00a0"), max_size=6),
        max_size=8,
    ).flatmap(
        lambda parts: st.lists(
            st.sampled_from(["\n", "\r\n", "\r", "\x0b", "\u2028", "\n\n", " "]),
            min_size=len(parts),
            max_size=len(parts),
        ).map(lambda breaks: "".join(p + b for p, b in zip(parts, breaks, strict=True)))
    )
)
def test_paragraphs_joined_once_are_those_of_the_text_unwrapped_line_by_line(text: str) -> None:
    unwrapped = facts_prose.unwrap(text)
    assert facts_prose.paragraphs(text) == [p for p in unwrapped.splitlines() if p.strip()]
