"""Message lists in the three wire formats <-> items, one message at a time.

A message compactkit cannot read (a shape the provider allows that compactkit does not model:
a Responses ``web_search_call`` or ``compaction`` item, a legacy ``function`` message, a custom
tool call) is never dropped: it becomes a pinned placeholder item (so no projection omits it and
no compaction folds it) that counts as its JSON text, and goes out again exactly as it came in.
Outputs answering a call that was passed through are passed through with it.

Reading (messages -> items, the call ids) is ``_wire_read.WireReader``, which
``WireConverter`` extends with writing (items -> messages, resumed from the previous call);
the formats and the placeholder are ``_wire_format.py``.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from compactkit.formats import items_to_anthropic, items_to_chat, items_to_responses, to_plain
from compactkit.integrations._wire_format import (
    PASSTHROUGH_RAW,
    MessageFormat,
    Original,
    Passthrough,
    detect_format,
    passthrough_key,
)
from compactkit.integrations._wire_read import INNER_SUFFIX, WireReader
from compactkit.integrations._wire_resume import OUT_END, Resume, starts_with, unlike
from compactkit.items import Item, Message
from compactkit.items.view import sliceable

__all__ = [
    "MessageFormat",
    "Original",
    "Passthrough",
    "WireConverter",
    "detect_format",
    "passthrough_key",
]

_CONVERTED_LIMIT = 4096


class WireConverter(WireReader):
    """Converts the messages of one conversation, remembering what it passed through.

    Args:
        format: The conversation's format (may be set later, while only plain text messages,
            which read the same in every format, were converted).
    """

    def __init__(self, format: MessageFormat) -> None:
        super().__init__(format)
        # Runs converted before (masked outputs, the summary), by the ids of their items: the
        # same run recurs every call until the next compaction replaces it.
        self._converted: dict[tuple[int, ...], tuple[tuple[Item, ...], Any, list[Any]]] = {}
        self._resumes: dict[str, Resume] = {}  # by slot: the last call to resume from

    @property
    def format(self) -> MessageFormat:
        """The format messages are written in (see the class)."""
        return self._format

    @format.setter
    def format(self, format: MessageFormat) -> None:
        if format != self._format:
            # What was written in the format so far is written anew: a resumed prompt would
            # keep messages of the other format (Anthropic's were never merged), and a run
            # converted before would come back in it.
            self._resumes.clear()
            self._converted.clear()
        self._format = format

    # -- writing ---------------------------------------------------------------------------

    def from_items(
        self,
        items: Sequence[Item],
        originals: Mapping[int, Original] | None = None,
        *,
        skip: int = 0,
        slot: str = "send",
    ) -> tuple[Any, list[Any]]:
        """``(system, messages)``: the items (after the first ``skip``) in this format.

        Where a run of items is exactly what one message became (``originals``, by the seq of
        its first item; the very item objects, so nothing was masked or replaced), that message
        goes out as it came in, unconverted; so do placeholders. ``system`` is Anthropic's
        top-level system prompt (``None`` for the other formats).

        A prompt that starts with the previous call's (same ``originals`` mapping, only grown)
        reuses its messages up to the last message sent as given: O(new items) in Python.
        ``slot`` names which previous call to resume from (the prompt, the history).
        """
        originals = originals if originals is not None else {}
        source = sliceable(items)  # read below len(items) only
        n = len(items)
        resume = self._resumes.pop(slot, None)  # taken: a failed call leaves none behind
        if (
            resume is not None
            and resume.originals is originals
            and resume.skip == skip
            and resume.index <= n
            and starts_with(items, resume.items, resume.index)
        ):
            start, system, out = resume.index, resume.system, resume.out
            del out[resume.sent :]  # the previous call's list was copied before it was returned
            merged_before: list[Any] = resume.merged
            runs = resume.runs
            del runs[bisect_right(runs, resume.sent, key=OUT_END) :]
        else:
            start, system, out, merged_before, runs = skip, None, [], [], []
        resumed_at = len(out)
        mark = (start, len(out), system)
        run: list[Item] = []

        def flush() -> None:
            nonlocal system
            if not run:
                return
            key = tuple(map(id, run))
            cached = self._converted.get(key)
            if cached is not None and cached[0] == tuple(run):
                run_system, messages = cached[1], cached[2]
            else:
                run_system, messages = self._convert(run)
                if len(self._converted) >= _CONVERTED_LIMIT:
                    self._converted.clear()
                self._converted[key] = (tuple(run), run_system, messages)
            if run_system is not None:
                system = _join_system(system, run_system)
            runs.append((i - len(run), i, len(out), len(out) + len(messages)))
            out.extend(messages)
            run.clear()

        i = start
        get = originals.get
        while i < n:
            item = source[i]
            original = get(item.seq)  # type: ignore[arg-type]
            if original is not None:
                end = i + len(original) - 1
                # Identity, not equality: a masked or replaced item is a different object and
                # is converted instead (tuple comparison short-circuits on identity, in C).
                if item is original[1] and (
                    end == i + 1 or (end <= n and tuple(source[i + 1 : end]) == original[2:])
                ):
                    flush()
                    out.append(original[0])
                    i = end
                    mark = (i, len(out), system)  # nothing after can change what came before
                    continue
            key = passthrough_key(item)
            if key is None:
                run.append(item)
            else:
                flush()
                out.append(self._passed(item, key))
                mark = (i + 1, len(out), system)
            i += 1
        flush()
        index, sent, mark_system = mark
        merged: list[Any] = []
        result = out
        if self.format == "anthropic":
            # Turns merge left to right: keep the merge of the messages up to the mark (what
            # follows may still merge into its last turn) and fold the rest onto a copy.
            merged = list(merged_before)
            _fold_turns(merged, out[resumed_at:sent])
            result = list(merged)
            _fold_turns(result, out[sent:])
        else:
            result = list(out)  # ``out`` is kept for the next call
        self._resumes[slot] = Resume(
            items, skip, index, out, sent, mark_system, originals, merged, runs
        )
        return system, result

    def converted_like(
        self, items: Sequence[Item], originals: Mapping[int, Original], *, like: str, slot: str
    ) -> list[Any] | None:
        """``from_items(items, originals, slot=slot)[1]``, taken from the last call of slot
        ``like`` when it converted the same items under the same ``originals`` (the very
        objects, but for equal items without a seq, which convert alike: a summary message
        rendered again); ``None`` otherwise (convert them). Not for Anthropic (its turns merge
        by role, and its summary goes as a user turn). ``slot`` resumes from it as from its own.

        A compaction's prompt is often its whole new history, which the compactor converts
        twice (what to send, the history to return): O(window) once instead of twice.
        """
        resume = self._resumes.get(like)
        if self.format == "anthropic" or resume is None or resume.originals is not originals:
            return None
        differ = unlike(items, resume.items)
        if resume.skip or differ is None:
            return None
        out = list(resume.out)
        if differ:  # runs holding an equal copy are converted again, as a call of their own
            # would: their messages are new objects, not the ones ``like`` sent (a caller may
            # edit the one list in place and not the other)
            for first, stop, at, end in resume.runs:
                if differ[bisect_left(differ, first) : bisect_left(differ, stop)]:
                    out[at:end] = self._convert(list(items[first:stop]))[1]
        self._resumes[slot] = Resume(
            items,
            0,
            resume.index,
            list(out),
            resume.sent,
            resume.system,
            originals,
            [],
            list(resume.runs),
        )
        return out

    # -- helpers ---------------------------------------------------------------------------

    def _convert(self, run: list[Item]) -> tuple[Any, list[Any]]:
        if self.format == "anthropic":
            prompt = items_to_anthropic(run)
            system, messages = prompt.system, prompt.messages
        elif self.format == "chat":
            system, messages = None, items_to_chat(run)
        else:
            system, messages = None, items_to_responses(run)
        if self._renamed:  # the inner ids (in fields, and in a mask's text) go back as given
            text = json.dumps(messages, ensure_ascii=False)
            messages = json.loads(INNER_SUFFIX.sub("", text))
        return system, messages

    def _passed(self, item: Item, key: str) -> Any:
        if key in self._raw:
            return self._raw[key]  # the very object that came in
        assert isinstance(item, Message) and item.extra is not None
        return item.extra[PASSTHROUGH_RAW]  # read back from storage


def _fold_turns(out: list[Any], messages: Iterable[Any]) -> None:
    """Append ``messages`` to ``out``, merging turns: Anthropic turns alternate, so a message
    sent as given next to a converted one of the same role (the summary before the first user
    message) is merged into one (a new dict; the messages are never changed)."""
    for message in messages:
        plain = to_plain(message)
        previous = to_plain(out[-1]) if out else None
        if (
            isinstance(plain, Mapping)
            and isinstance(previous, Mapping)
            and plain.get("role") == previous.get("role")
        ):
            out[-1] = {
                "role": plain.get("role"),
                "content": [*_blocks(previous.get("content")), *_blocks(plain.get("content"))],
            }
        else:
            out.append(message)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _join_system(first: Any, second: Any) -> Any:
    if first is None:
        return second
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    blocks = [
        *([{"type": "text", "text": first}] if isinstance(first, str) else first),
        *([{"type": "text", "text": second}] if isinstance(second, str) else second),
    ]
    return blocks
