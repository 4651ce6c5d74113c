"""The digest's extractors skip work their result does not depend on (a pattern whose
matches need a character the text lacks, a whitespace pass over text without any to collapse,
argument names a call does not use): what they return is exactly what reading everything
returns."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _facts as facts
from compactkit.compressors import _facts_ids as facts_ids
from compactkit.compressors import _facts_values as facts_values
from compactkit.compressors.digest import _files as files

PROPERTY = settings(deadline=None, max_examples=400)


def _clip_reference(text: str, limit: int) -> str:
    """``clip`` as first written: whitespace collapsed in every text."""
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@PROPERTY
@given(
    st.lists(
        st.sampled_from(["ab", "Cé", " ", "  ", "\t", "\n", "\u00a0", "\u2028", "\x85", "\x1c"]),
        max_size=10,
    ).map("".join),
    st.integers(1, 12),
)
def test_clipping_skips_the_whitespace_pass_only_where_it_changes_nothing(
    text: str, limit: int
) -> None:
    assert facts.clip(text, limit) == _clip_reference(text, limit)


def _identifiers_reference(text: str, *, prose: bool, limit: int = 8) -> list[tuple[str, str]]:
    """``identifiers_in`` as first written: every pattern run on every text."""
    found: dict[str, str] = {}
    for branch, sha, message in facts_ids._GIT_COMMIT.findall(text):
        found[sha] = f"commit on {branch}: {facts.code(message, 80)}"
    urls = [url.rstrip(".,;:!?") for url in facts_ids._URL.findall(text)]
    for url in urls:
        found.setdefault(url, "url")
    inside_urls = " ".join(urls)
    for uuid in facts_ids._UUID.findall(text):
        found.setdefault(uuid, "uuid")
    for sha in facts_ids._SHA.findall(text):
        uuids = [u for u, kind in found.items() if kind == "uuid"]
        if (
            re.search(r"\d", sha)
            and re.search(r"[a-f]", sha)
            and sha not in inside_urls
            and not any(sha in u for u in uuids)
        ):
            found.setdefault(sha, "sha")
    for prefix, number in facts_ids._TICKET.findall(text):
        if prefix not in facts_ids._NOT_TICKETS:
            found.setdefault(f"{prefix}-{number}", "ticket")
    for match in facts_ids._PREFIXED.finditer(text):
        found.setdefault(match.group(0), "id")
    for match in facts_ids._RANDOM_ID.finditer(text):
        ident = match.group(0)
        if not any(ident in known for known in found):
            found.setdefault(ident, "id")
    for ident in facts_ids._CODE_ID.findall(text):
        if not any(ident in known for known in found):
            found.setdefault(ident, "id")
    if prose:
        for hashed, named in facts_ids._ISSUE.findall(text):
            found.setdefault(f"#{hashed or named}", "issue")
        for version in facts_ids._VERSION.findall(text):
            if version not in inside_urls:
                found.setdefault(version, "version")
    return list(found.items())[:limit]


IDENTIFIER_PARTS = [
    "[main 1a2b3c4] fix the parser",
    "[feat/x (root-commit) abcdef0] init",
    "ok\n[main 1a2b3c4] fix",
    "x[main 1a2b3c4] not at a line start",
    "https://example.com/a/1a2b3c4d.",
    "http://x.io/v1.2.3",
    "123e4567-e89b-12d3-a456-426614174000",
    "deadbeef12",
    "deadbeef",  # hex letters alone: no sha
    "12345678",  # digits alone: no sha
    "abc1234 and abc1234",
    "PROJ-123",
    "UTF-8",
    "#1234",
    "issue 42",
    "PR #7",
    "req_8f3kd93",
    "snap_XFahxzMuJksC",
    "JJD503141950010498",
    "v1.2.3",
    "2.0.1-rc1",
    "src/m12.py",
    "turn 12: read the next modules",
    "Issue 42",
    "PR 12",
    "i\u017f\u017fue 3",
    "pull request 9",
    "\u0130ssue 4",
    "\u0131ssue 7",
    "1.2",
    "1.2.3",
]


@PROPERTY
@given(
    st.lists(
        st.one_of(
            st.sampled_from(IDENTIFIER_PARTS),
            st.text(st.sampled_from("ab1f0-_.:/[]# AZ\n"), max_size=16),
        ),
        max_size=6,
    ),
    st.booleans(),
    st.integers(1, 8),
)
def test_identifier_patterns_skipped_for_lack_of_their_characters_find_the_same(
    parts: list[str], prose: bool, limit: int
) -> None:
    text = " ".join(parts)
    assert facts_ids.identifiers_in(text, prose=prose, limit=limit) == _identifiers_reference(
        text, prose=prose, limit=limit
    )


def _first_str_reference(args: dict[str, object], keys: tuple[str, ...]) -> str | None:
    """The value of the first of ``keys`` that ``args`` holds as a string."""
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def _file_ops_reference(name: str, args: dict[str, object]) -> list[files.FileOp]:
    """``file_ops`` as first written: every argument looked up, every name matched."""
    paths = [str(args[k]) for k in files._PATH_KEYS if isinstance(args.get(k), str)]
    for key in files._LIST_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            paths += [str(v) for v in value if isinstance(v, str)]
    action = ""
    for key in ("command", "action", "operation", "mode"):
        value = args.get(key)
        if isinstance(value, str) and value in files._ACTIONS:
            action = str(value)
            break
    patch = _first_str_reference(args, ("patch", "diff", "input"))
    if isinstance(patch, str) and ("*** " in patch or "+++ " in patch):
        return list(files.patch_ops(patch))
    if files._LISTING_TOOL.search(name):
        return []  # a directory listing reads no file
    paths = [p for p in paths if p.strip() and p not in (".", "..") and not p.endswith("/")]
    if not paths:
        return []
    old = _first_str_reference(args, ("old_str", "old_string", "old", "search", "find"))
    new = _first_str_reference(args, ("new_str", "new_string", "new", "replace", "replacement"))
    content = _first_str_reference(args, ("content", "file_text", "text", "contents", "data"))
    modified = bool(
        re.search(r"write|edit|create|replace|insert|delete|remove|undo|rename|append", action)
    ) or (
        not action
        and (bool(files._WRITE_TOOL.search(name)) or old is not None or content is not None)
    )
    if not modified and not files._READ_TOOL.search(name) and not action:
        return []
    if not modified:
        what = "read"
        span = args.get("view_range") or args.get("range") or args.get("lines")
        start, end = (
            args.get("start_line") or args.get("offset"),
            args.get("end_line") or args.get("limit"),
        )
        if isinstance(span, list) and len(span) == 2:
            what = f"read lines {span[0]}-{span[1]}"
        elif "limit" in args and start is not None:
            what = f"read {end} lines from line {start}"
        elif start is not None or end is not None:
            what = f"read lines {start or 1}-{end or 'end'}"
        pattern = args.get("pattern") or args.get("query") or args.get("regex")
        if isinstance(pattern, str):
            what = f"searched for {facts.code(pattern, 60)}"
        return [files.FileOp(p, False, what) for p in paths]
    if "delete" in action or (not action and re.search(r"delete|remove", name, re.I)):
        what = "deleted"
    elif isinstance(old, str) and isinstance(new, str):
        what = f"edited {facts.code(old, 40)} → {facts.code(new, 40)}"
    elif ("insert" in action and isinstance(new, str)) or isinstance(args.get("insert_line"), int):
        what = f"inserted {facts.code(str(new or args.get('new_str') or ''), 60)} at line {args.get('insert_line')}"
    elif isinstance(content, str):
        lines = content.count("\n") + (0 if content.endswith("\n") else 1)
        what = f"{'created' if 'create' in (action or name.lower()) else 'wrote'} ({lines} lines)"
    else:
        what = action or name
    return [files.FileOp(p, True, what) for p in paths]


ARGUMENT_KEYS = [
    *files._PATH_KEYS,
    *files._LIST_KEYS,
    "command",
    "action",
    "operation",
    "mode",
    "patch",
    "diff",
    "input",
    "old_str",
    "new",
    "search",
    "new_str",
    "replacement",
    "content",
    "file_text",
    "data",
    "view_range",
    "range",
    "lines",
    "start_line",
    "offset",
    "end_line",
    "limit",
    "pattern",
    "query",
    "regex",
    "insert_line",
    "other",
]
ARGUMENT_VALUES = st.one_of(
    st.sampled_from(
        ["src/a.py", "view", "create", "delete", "str_replace", "read", "write", "docs/", ".", ""]
    ),
    st.sampled_from(["*** Update File: g.py\n+x", "+++ b/h.py\n-a", "x = 1", "todo"]),
    st.integers(0, 40),
    st.lists(st.sampled_from(["a.py", "b/", 3]), max_size=3),
    st.none(),
)
TOOL_NAMES = [
    "read_file",
    "write_file",
    "edit",
    "list_dir",
    "glob",
    "delete_file",
    "remove",
    "str_replace_based_edit_tool",
    "grep",
    "lookup",
    "Notebook",
]


@PROPERTY
@given(
    st.sampled_from(TOOL_NAMES),
    st.dictionaries(st.sampled_from(files._PATH_KEYS[:3]), ARGUMENT_VALUES, max_size=1),
    st.dictionaries(st.sampled_from(ARGUMENT_KEYS), ARGUMENT_VALUES, max_size=4),
)
def test_file_operations_read_from_fewer_lookups_are_the_same(
    name: str, path: dict[str, Any], more: dict[str, Any]
) -> None:
    args = path | more
    assert files.file_ops(name, args) == _file_ops_reference(name, args)
    assert files.file_ops(name, args) == _file_ops_reference(name, args)  # the names remembered


def _values_reference(text: str) -> list[tuple[str, str, str | None]]:
    """``values_in_prose`` as first written: every phrase looked for in every text."""
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    found: list[tuple[int, tuple[str, str, str | None]]] = []  # by position: the last is newest
    for match in facts_values._SET_PHRASE.finditer(text):
        name = match.group(1)
        if name.lower() not in facts_values._STOP_NAMES:
            value = (name, match.group("new").strip("`"), facts_values._strip(match.group("old")))
            found.append((match.start(), value))
    for match in facts_values._BE_PHRASE.finditer(text):
        name = match.group(1) or match.group(3) or match.group(5)
        new = match.group("new") or match.group("now") or match.group("make")
        if name and new and name.strip("`").lower() not in facts_values._STOP_NAMES:
            found.append((match.start(), (name.strip("`"), new.strip("`"), None)))
    offset = 0
    for line in text.splitlines(keepends=True):
        for match in facts_values._ASSIGNMENT.finditer(line):
            name, new = match.group(1), match.group(2)
            quoted = f"`{name}`" in line
            if (quoted or facts_values._plain_name(name)) and not name.startswith(
                ("http", "https")
            ):
                found.append((offset + match.start(), (name, new.strip("`"), None)))
        offset += len(line)
    return [value for _, value in sorted(found, key=lambda pair: pair[0])]


VALUE_PARTS = [
    "set retries to 5",
    "Set `x` from 3 to 4",
    "SET MAX_RETRIES TO 2",
    "\u017fet max_retries to 9",
    "timeout_s should be 30s",
    "pool_size is now 8",
    "pool_size IS NOW 8",
    "make workers_n 4",
    "MAX_WORKERS = 8",
    "`pool_size: 4`",
    "```\nx_y = 1\n```",
    "turn 12: read the next modules",
    "done 10",
    "debug_mode = true",
    "log_level: False",
    "cache_dir=None",
    "run_mode: null",
    "max_retries =-3",
    "user_name = 'x'",
    'label_x: "y"',
    "key_1=`v`",
    "ratio_a:\t0.5",
    # each word a phrase needs, so that a text without one of them is only skipped when no
    # phrase can match it
    "change x_y to 3",
    "bump n_workers to 4",
    "raise max_n to 9",
    "lower pool_n to 1",
    "increase the retries_n to 6",
    "decrease x_y from 4 to 2",
    "reduce n_jobs to 2",
    "update rate_x to 7",
    "cap max_n at 9",
    "limit rate_x to 5",
    "retries_n must be 3",
    "x_y needs to be 2",
    "x_y need to be 2",
    "x_y has to be 4",
    "x_y will be 7",
    "x_y should be set to 8",
    "Note: the plan",
    "a = 1\nplain line\nb_c: true",
]


@PROPERTY
@given(
    st.lists(
        st.one_of(
            st.sampled_from(VALUE_PARTS),
            st.text(st.sampled_from("setoabmkw_x=: 12\n`"), max_size=16),
        ),
        max_size=5,
    ),
    st.sampled_from([" ", "\n", ". "]),
)
def test_value_phrases_skipped_for_lack_of_their_words_find_the_same(
    parts: list[str], sep: str
) -> None:
    text = sep.join(parts)
    assert facts_values.values_in_prose(text) == _values_reference(text)


@pytest.mark.parametrize("text", VALUE_PARTS)
def test_each_value_phrase_alone_is_found_as_when_every_phrase_is_looked_for(text: str) -> None:
    assert facts_values.values_in_prose(text) == _values_reference(text)


@pytest.mark.parametrize("text", IDENTIFIER_PARTS)
@pytest.mark.parametrize("prose", [True, False])
def test_each_identifier_alone_is_found_as_when_every_pattern_runs(text: str, prose: bool) -> None:
    assert facts_ids.identifiers_in(text, prose=prose) == _identifiers_reference(text, prose=prose)
