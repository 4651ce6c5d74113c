"""The checks ``doctor`` runs on a stored session, one function each.

Each check reads a ``StoredSession`` and returns one ``Check``: a verdict, the evidence (item
references ``#12``/``#12-18``, compaction ids) and the fix. They are pure functions of what is
stored, so they give the same verdict on every backend.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from compactkit.checkup._sources import StoredSession, seqs_of
from compactkit.compressors import digest_items
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, item_text
from compactkit.items.snapshot import SUMMARY_NAME, is_summary_message, looks_sealed

if TYPE_CHECKING:
    from compactkit.sql.records import CompactionRecord

__all__ = ["Check", "SESSION_CHECKS", "isolation_checks", "refs"]

# Call ids compactkit's runtime fills in for calls that came without one: the same in every
# session, so sharing them proves nothing.
_FILLED_CALL_ID = re.compile(r"tool_step_\d+_\d+")
_WORD = re.compile(r"[a-z0-9]+")
_RANDOM_ID = 12
_SHRINK_FLOOR = 400  # chars: below this a summary halving is noise, not lost state


@dataclass(frozen=True)
class Check:
    """The verdict of one check on one session.

    Attributes:
        name: The check (``tool_pairs``, ``summary``, ``folding``, ``facts``, ``isolation``,
            ``drift``).
        ok: Whether the session passes it.
        message: What was found, in one or two sentences.
        evidence: Item references (``#12``, ``#12-18``) or compaction ids (``compaction 3``).
        fix: What to change, when something was found.
    """

    name: str
    ok: bool
    message: str
    evidence: tuple[str, ...] = ()
    fix: str = ""

    def to_json(self) -> dict[str, object]:
        """The JSON form ``compactkit doctor --json`` prints."""
        return {
            "name": self.name,
            "ok": self.ok,
            "message": self.message,
            "evidence": list(self.evidence),
            "fix": self.fix,
        }


def refs(seqs: Iterable[int]) -> tuple[str, ...]:
    """Sequence numbers as compact references: ``(3, 4, 5, 9)`` → ``("#3-5", "#9")``."""
    out: list[str] = []
    ordered = sorted(set(seqs))
    start = prev = None
    for seq in [*ordered, None]:
        if seq is not None and prev is not None and seq == prev + 1:
            prev = seq
            continue
        if start is not None:
            out.append(f"#{start}" if start == prev else f"#{start}-{prev}")
        start = prev = seq
    return tuple(out)


def _span(first: int, last: int) -> str:
    return f"#{first}" if first == last else f"#{first}-{last}"


def _seq(item: Item) -> int:
    return item.seq if item.seq is not None else -1


def check_tool_pairs(session: StoredSession) -> Check:
    """Calls without outputs, outputs without calls, outputs stored without a call id."""
    items = session.active
    calls = {i.call_id: i for i in items if isinstance(i, FunctionCall)}
    answered = {i.call_id for i in items if isinstance(i, FunctionCallOutput)}
    no_id = [_seq(i) for i in items if isinstance(i, FunctionCallOutput) and not i.call_id]
    orphans = [
        _seq(i)
        for i in items
        if isinstance(i, FunctionCallOutput) and i.call_id and i.call_id not in calls
    ]
    # Calls still waiting at the very end are pending (the run stopped before its tools
    # answered); an unanswered call with anything after it means the output was never written.
    trailing = _trailing_calls(items)
    unanswered = [
        _seq(c) for cid, c in calls.items() if cid not in answered and cid not in trailing
    ]
    duplicated = _reused_call_ids(items)
    problems = []
    if unanswered:
        problems.append(f"{len(unanswered)} tool call(s) have no output")
    if orphans:
        problems.append(f"{len(orphans)} tool output(s) answer no call")
    if no_id:
        problems.append(f"{len(no_id)} tool output(s) were stored without a call id")
    if duplicated:
        problems.append(f"{len(duplicated)} call id(s) are used twice")
    if not problems:
        pending = f" ({len(trailing)} call(s) pending at the end)" if trailing else ""
        return Check("tool_pairs", True, f"every tool call has its output{pending}")
    return Check(
        "tool_pairs",
        False,
        "; ".join(problems) + ": the provider rejects such a prompt, or the model never sees "
        "what its tools returned",
        refs([*unanswered, *orphans, *no_id, *duplicated]),
        "write each tool result with memory.add_tool_output(call_id, output) using the call_id "
        "of the call it answers, right after the tool runs (the runtime's three writes)",
    )


def _trailing_calls(items: Sequence[Item]) -> set[str]:
    """The call ids of the calls at the very end (pending: their outputs come next)."""
    trailing: set[str] = set()
    for item in reversed(items):
        if not isinstance(item, FunctionCall):
            break
        trailing.add(item.call_id)
    return trailing


def _reused_call_ids(items: Sequence[Item]) -> list[int]:
    """The refs of the calls whose call id an earlier call used."""
    seen: set[str] = set()
    duplicated: list[int] = []
    for item in items:
        if isinstance(item, FunctionCall):
            if item.call_id in seen:
                duplicated.append(_seq(item))
            seen.add(item.call_id)
    return duplicated


def _folded(session: StoredSession) -> list[Item]:
    active = seqs_of(session.active)
    return sorted((i for i in session.history if i.seq not in active), key=_seq)


def check_summary(session: StoredSession, summary_role: str | None = None) -> Check:
    """The summary: present where history was folded, first and alone, not duplicated."""
    folded = _folded(session)
    problems: list[str] = []
    evidence: list[str] = []
    fixes: list[str] = []
    if folded and not session.summary.strip():
        problems.append(f"{len(folded)} item(s) left the active history but no summary holds them")
        evidence.extend(refs(_seq(i) for i in folded))
        fixes.append(
            "compact with a compressor that folds into a summary (digest, summary, ladder) "
            "instead of one that forgets (window)"
        )
    copies = [_seq(i) for i in (*session.active, *session.history) if _imitates_summary(i)]
    if copies:
        problems.append(
            f"{len(copies)} stored item(s) carry a rendered summary: the prompt that was sent "
            "was written back into memory, so the model reads the summary twice"
        )
        evidence.extend(refs(copies))
        fixes.append(
            "write only new user inputs, output items and tool outputs to memory, never the "
            "projected prompt (memory.items / step.items)"
        )
    if session.rendered is not None and session.summary.strip():
        first = session.rendered[0] if session.rendered else None
        if first is None or not is_summary_message(first):
            problems.append("memory.items does not hand out the summary first as its own message")
            fixes.append("render the summary with summary_message() ahead of the items")
        elif summary_role is not None and isinstance(first, Message) and first.role != summary_role:
            problems.append(f"the summary speaks as {first.role!r}, configured {summary_role!r}")
            fixes.append(f"give the memory summary_role={summary_role!r}")
    if problems:
        return Check("summary", False, "; ".join(problems), tuple(evidence), "; ".join(fixes))
    if not session.summary.strip():
        return Check("summary", True, "nothing was folded, so there is no summary (as expected)")
    return Check("summary", True, "the summary holds what was folded, once, first")


def _imitates_summary(item: Item) -> bool:
    if not isinstance(item, (Message, FunctionCallOutput)):
        return False
    text = item_text(item)
    return looks_sealed(text.lstrip()) or f"</{SUMMARY_NAME}>" in text


def check_folding(session: StoredSession) -> Check:
    """Items that were dropped: neither active nor archived (a hole in the sequence).

    Every built-in compressor hands what it folds to ``apply``, which archives it; a hole means
    something deleted rows or rewrote the list outside ``apply`` (or a write never landed).
    """
    known = seqs_of(session.active) | seqs_of(session.history)
    if not known:
        return Check("folding", True, "the session holds no stored items yet")
    first, last = min(known), max(known)
    holes = sorted(set(range(first, last + 1)) - known)
    problems: list[str] = []
    evidence: list[str] = list(refs(holes))
    if holes:
        problems.append(
            f"{len(holes)} item(s) were dropped: neither in the active history nor archived"
        )
    if problems:
        return Check(
            "folding",
            False,
            "; ".join(problems),
            tuple(evidence),
            "let compaction go through memory.apply(result) (it archives what it folds) instead "
            "of deleting items or rewriting the list; purge only on purpose",
        )
    return Check("folding", True, f"every item {_span(first, last)} is active or archived")


def check_facts(session: StoredSession) -> Check:
    """Must-keep facts of the folded span (user rules, files modified) present in the summary."""
    folded = _folded(session)
    if not folded:
        return Check("facts", True, "nothing was folded")
    found = digest_items(folded)
    summary_words = _words(session.summary)
    missing: list[str] = []
    for section in ("constraints", "files_modified"):
        for entry in found.entries(section):
            if not _covered(entry, summary_words, session.summary):
                missing.append(entry)
    if not missing:
        return Check("facts", True, "the user's rules and the files changed are in the summary")
    shown = "; ".join(f"{e[:80]}" for e in missing[:5])
    return Check(
        "facts",
        False,
        f"{len(missing)} must-keep fact(s) of the folded span are not in the summary: {shown}",
        refs(_seq(i) for i in folded),
        "use the digest or the ladder (they keep rules and files verbatim), or a summary "
        "compressor with verification; recover the details with recall/expand on the archive",
    )


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _covered(entry: str, summary_words: set[str], summary: str) -> bool:
    """Whether the summary keeps ``entry``: its code spans verbatim, and most of its words."""
    spans = re.findall(r"`([^`]+)`", entry)
    if spans and all(span in summary for span in spans):
        return True
    words = [w for w in _WORD.findall(entry.lower()) if len(w) > 2]
    if not words:
        return True
    return sum(w in summary_words for w in words) >= 0.8 * len(words)


def check_drift(session: StoredSession, budget: int | None = None) -> Check:
    """Compactions that gained nothing, compaction storms, a summary that shrank abruptly or is
    larger than its source, and (given the model's budget) compactions that left the context
    over it."""
    standing = [c for c in session.compactions if c.undone_at is None]
    findings = [
        *_shrunk_summaries(standing),
        *_over_budget(standing, budget),
        *_futile(standing),
        *_failing(standing),
        *_tiny(standing),
        *_summary_larger(session),
    ]
    problems = [problem for problem, _ in findings]
    evidence = [ref for _, refs_of in findings for ref in refs_of]
    if problems:
        return Check(
            "drift",
            False,
            "; ".join(problems),
            tuple(evidence),
            "set a compaction target well below the trigger (hysteresis), cap the summary's "
            "tokens, and let failures fall back to the digest",
        )
    return Check("drift", True, f"{len(standing)} compaction(s), each made the context smaller")


# What check_drift finds: (the problem, the compactions that show it).
_Finding = tuple[str, list[str]]


def _shrunk_summaries(standing: Sequence[CompactionRecord]) -> list[_Finding]:
    """A summary that loses most of itself at once lost state with it."""
    found: list[_Finding] = []
    previous = ""
    for c in standing:
        after = c.summary_after
        if after is None:
            continue
        if len(previous) >= _SHRINK_FLOOR and len(after) < len(previous) // 2:
            problem = (
                f"compaction {c.id} shrank the summary from {len(previous):,} to "
                f"{len(after):,} chars (what it held may be lost)"
            )
            found.append((problem, [f"compaction {c.id}"]))
        previous = after
    return found


def _over_budget(standing: Sequence[CompactionRecord], budget: int | None) -> list[_Finding]:
    if budget is None:
        return []
    over = [c for c in standing if c.tokens_after is not None and c.tokens_after > budget]
    if not over:
        return []
    problem = (
        f"{len(over)} compaction(s) left the context over the model's budget ({budget:,} tokens)"
    )
    return [(problem, [f"compaction {c.id}" for c in over[:5]])]


def _futile(standing: Sequence[CompactionRecord]) -> list[_Finding]:
    futile = [
        c
        for c in standing
        if c.outcome == "compacted"
        and c.tokens_before is not None
        and c.tokens_after is not None
        and c.tokens_after >= c.tokens_before
    ]
    if not futile:
        return []
    problem = f"{len(futile)} compaction(s) did not make the context smaller"
    return [(problem, [f"compaction {c.id}" for c in futile])]


def _failing(standing: Sequence[CompactionRecord]) -> list[_Finding]:
    found: list[_Finding] = []
    failed_run = 0
    for c in standing:
        failed_run = failed_run + 1 if c.outcome == "failed" else 0
        if failed_run == 3:
            problem = "three compactions in a row failed (is the summarizer reachable?)"
            found.append((problem, [f"compaction {c.id}"]))
    return found


def _tiny(standing: Sequence[CompactionRecord]) -> list[_Finding]:
    tiny = [c for c in standing if c.outcome == "compacted" and 0 < c.archived <= 1]
    if len(tiny) < 3:
        return []
    problem = f"{len(tiny)} compactions folded a single item each: the policy fires every turn"
    return [(problem, [f"compaction {c.id}" for c in tiny[:5]])]


def _summary_larger(session: StoredSession) -> list[_Finding]:
    folded = _folded(session)
    source = sum(len(item_text(i)) for i in folded)
    if folded and len(session.summary) > max(source, 200):
        problem = (
            f"the summary ({len(session.summary):,} chars) is larger than everything it folded "
            f"({source:,} chars)"
        )
        return [(problem, [])]
    return []


def check_reuse(session: StoredSession) -> Check:
    """A session id reused for a new conversation (its earlier history was cleared)."""
    known = seqs_of(session.active) | seqs_of(session.history)
    if not known or min(known) <= 1 or session.compactions:
        return Check("isolation", True, "the session's history starts at #1")
    return Check(
        "isolation",
        False,
        f"the stored history starts at #{min(known)}: {_span(1, min(known) - 1)} were cleared and the "
        "id now holds another conversation (a persistent session id reused for a new task)",
        (_span(1, min(known) - 1),),
        "give each conversation its own session id (Agent.new_session()); resume an id only to "
        "continue the same task",
    )


def isolation_checks(sessions: Sequence[StoredSession]) -> dict[str, Check]:
    """Sessions whose stored items share provider ids or call ids with another session's: one
    memory object served both (a shared memory factory), keyed by session id."""
    owners: dict[str, set[str]] = {}
    for session in sessions:
        for item in (*session.active, *session.history):
            for key in _identity(item):
                owners.setdefault(key, set()).add(session.session_id)
    shared: dict[str, dict[str, set[str]]] = {}
    for key, ids in owners.items():
        if len(ids) > 1:
            for sid in ids:
                shared.setdefault(sid, {}).setdefault(key, set()).update(ids - {sid})
    out: dict[str, Check] = {}
    for sid, keys in shared.items():
        others = sorted(set().union(*keys.values()))
        out[sid] = Check(
            "isolation",
            False,
            f"{len(keys)} stored item id(s) also appear in session(s) {', '.join(others[:5])}: "
            "one memory object served several sessions",
            tuple(sorted(keys)[:10]),
            "make memory_factory return a new memory for each session id (never a shared or "
            "cached object); Agent.new_session() refuses a factory that hands one out twice",
        )
    return out


def _identity(item: Item) -> tuple[str, ...]:
    # Only ids long enough to be random (a provider's ``call_…``/``toolu_…``/``msg_…``): short
    # ones such as ``call_0`` from a local server repeat across sessions by chance.
    keys = []
    if item.id and len(item.id) >= _RANDOM_ID:
        keys.append(f"id {item.id}")
    if (
        isinstance(item, FunctionCall)
        and len(item.call_id) >= _RANDOM_ID
        and not _FILLED_CALL_ID.fullmatch(item.call_id)
    ):
        keys.append(f"call_id {item.call_id}")
    return tuple(keys)


SESSION_CHECKS = (check_tool_pairs, check_summary, check_folding, check_facts, check_drift)
"""The per-session checks, in the order ``doctor`` reports them (isolation comes last)."""
