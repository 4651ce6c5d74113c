"""How an entry is written shorter when a summary is trimmed (``_trim``), form by form.

* ``shorten``: the context shortened (a file's details to their verbs, a command's outcome
  clipped, a measurement without its run count, prose clipped to its first limit); the fact
  itself (a path, an error line, a command, an identifier) stays verbatim;
* ``bare``: the fact alone, with the state it states (an error's "resolved", a file's
  "created"/"deleted"): prose clipped to its second limit;
* ``barer`` (heavy pressure only): a measurement's newest runs, the state without what the next
  steps say. (A value keeps its "(current)" mark: a summary read back must equal the one
  rendered, and reading marks an unmarked value current.)

The user's goal, rules, later requests and values are never cut mid-sentence (``_CLIP``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from compactkit.compressors._entries import add_details, key_of, runs, split_details
from compactkit.compressors._facts_prose import sentences
from compactkit.compressors._refs import split_refs, strip_refs, with_refs

SUPERSEDED = "values:superseded"
"""The pool of superseded values (the values section's entries marked ``(superseded)``)."""
EXTRA = "extra"
"""The pool of entries under headings compactkit does not know."""
LATER = "goal:later"
"""The pool of later user requests (``Later: …``, among the constraints in the order they were
said; under the goal in summaries written before): the user's words, but no rule."""

MEASURED_RUNS = 3
"""Earlier runs a measurement keeps under heavy pressure (the newest are what the work tunes)."""
_EARLIER = " — earlier: "
_ATTRIBUTION = "As of the last folded turn, the assistant said: "

# Prose sections are clipped (they have no verbatim fact to keep); None: never shortened.
_CLIP: dict[str, tuple[int, int] | None] = {
    "decisions": (160, 80),
    "state": (240, 160),
    "next_steps": (160, 120),
    EXTRA: (160, 80),
    "goal": None,
    LATER: None,  # the user's words: kept whole or dropped whole, never cut mid-sentence
    "constraints": None,
    "values": None,
    SUPERSEDED: None,
}
KEYED = frozenset({"files_read", "files_modified", "identifiers", "errors"})


def clip(text: str, limit: int) -> str:
    """``text`` on one line within ``limit`` characters; an open `` ` `` span is closed."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rstrip() + "…"
    return cut + "`" if cut.count("`") % 2 else cut


def shorten(pool: str, entry: str) -> str:
    """``entry`` with its context shortened (the fact itself and its references untouched)."""
    text, refs = split_refs(entry)
    return with_refs(_shorten(pool, text), refs) if refs else _shorten(pool, entry)


def _shorten(pool: str, entry: str) -> str:
    if pool in KEYED:
        head, details = split_details(entry)
        if not details:
            return clip(entry, 200) if key_of(entry) is None else entry
        short = [_verb(d) for d in details if not d.startswith("from ")]  # its source goes
        merged, _ = add_details([], short)
        return f"{head} — {'; '.join(merged)}" if merged else head
    if pool == "commands":
        text, n = runs(entry)
        head, sep, outcome = text.partition(" → ")
        text = f"{head}{sep}{clip(outcome, 48)}" if sep else clip(text, 120)
        return f"{text} (\N{MULTIPLICATION SIGN}{n})" if n > 1 else text
    if pool == "measurements":  # the run count goes; what each run measured stays
        return runs(entry)[0]
    limits = _CLIP.get(pool)
    return clip(entry, limits[0]) if limits else entry


def bare(pool: str, entry: str) -> str:
    """``entry`` reduced to its fact alone (an error keeps whether it was resolved, a file
    whether it was created or deleted: the state an entry states must stay true) and its
    references (what ``expand`` returns in full)."""
    text, refs = split_refs(entry)
    return with_refs(_bare(pool, text), refs) if refs else _bare(pool, entry)


def _bare(pool: str, entry: str) -> str:
    if pool in KEYED:
        key = key_of(entry)
        if key is None:
            return clip(entry, 80)
        status = _status(pool, entry)
        return f"`{key}` — {status}" if status else f"`{key}`"
    if pool == "commands":
        text, n = runs(entry)
        head = text.partition(" → ")[0]
        command = key_of(head)
        head = clip(head, 80) if command is None else f"`{clip(command, 80).replace('`', '')}`"
        return f"{head} (\N{MULTIPLICATION SIGN}{n})" if n > 1 else head
    limits = _CLIP.get(pool)
    return clip(entry, limits[1]) if limits else entry


def _status(pool: str, entry: str) -> str:
    """What a bare entry keeps of its details: an error's resolution, a file's last
    creation or deletion."""
    _head, details = split_details(entry)
    if pool == "errors":
        return "resolved" if any(d.startswith("resolved") for d in details) else ""
    if pool == "files_modified":
        for detail in reversed(details):
            for word in ("deleted", "created"):
                if detail.startswith(word) or f" {word}" in detail[:24]:
                    return word
    return ""


def barer(pool: str, entry: str, *, next_steps: Collection[str], state: Sequence[str]) -> str:
    """``entry`` (in its bare form, references gone) barer still, for heavy pressure: a
    measurement keeps its newest run and the ``MEASURED_RUNS`` runs before it ("| …" says that
    earlier runs were taken); the current state loses the sentences ``next_steps``
    (the entries kept) say, and its attribution shrinks to "The assistant said:" (``state``:
    the section's untrimmed entries, as the bare one is clipped). Other entries are returned
    as they are."""
    if pool == "measurements":
        newest, sep, earlier = entry.partition(_EARLIER)
        before = earlier.split(" | ")
        if not sep or len(before) <= MEASURED_RUNS:
            return entry
        return f"{newest}{sep}{' | '.join(before[:MEASURED_RUNS])} | …"
    if pool == "state":
        return _barer_state(entry, next_steps, state)
    return entry


def _barer_state(entry: str, next_steps: Collection[str], state: Sequence[str]) -> str:
    text = entry
    for original in state:  # the whole words: the bare entry is clipped
        plain = " ".join(strip_refs(original).split())
        if plain.startswith(entry.removesuffix("…")):
            text = plain
            break
    words = text.removeprefix(_ATTRIBUTION)
    if words == text:  # not the digest's attribution (an LLM's state): as it is
        return entry
    steps = [" ".join(step.split()) for step in next_steps]
    said = sentences(words)
    kept = [s for s in said if not any(s in step for step in steps)]
    if kept and len(kept) < len(said):  # (else its words as they are: code spans and all)
        words = " ".join(kept)
    limits = _CLIP["state"]
    assert limits is not None
    return clip(f"The assistant said: {words}", limits[1])


def _verb(detail: str) -> str:
    """A detail's first word (``edited `a` → `b``` → ``edited``), its count kept."""
    if detail.endswith(" earlier omitted"):
        return detail
    text, _, times = detail.partition(" \N{MULTIPLICATION SIGN}")
    word = text.split(" ", 1)[0].rstrip(":,;") if len(text) > 16 else text
    return f"{word} \N{MULTIPLICATION SIGN}{times}" if times.isdigit() else word


def bullet(entry: str) -> str:
    """An entry as it renders: ``- first line`` and indented continuation lines."""
    first, *rest = entry.split("\n")
    return "\n".join([f"- {first}", *(f"  {line}" for line in rest)])
