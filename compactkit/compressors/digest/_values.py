"""The values a run of items sets, read alone: ``values_in`` and the value entries ``_extract``
writes.

A value entry (`` `name` = 5 (current)``) comes from a message's prose (``values_in_prose``) or
from a call that writes a config file (its arguments, or the text its shell command writes). A
compaction reads the verbatim tail for them only (``values_in``: a value the tail sets anew
supersedes the summary's), so they are read here without the rest of the digest (errors,
identifiers, commands, outcomes: a tail's large outputs hold no value entry and are not read).
``_extract`` writes its value entries with the same functions, in the same order, so both read
the same values (tests/compressors/test_digest_values_only.py holds ``values_in`` equal to the
values of a whole ``digest_items``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from compactkit.compressors import _facts as facts
from compactkit.compressors import _facts_prose as facts_prose
from compactkit.compressors import _facts_values as facts_values
from compactkit.compressors._refs import Spans, provenance_on, spans_of, with_refs
from compactkit.compressors.digest import _shell_files as shell_files
from compactkit.compressors.digest import _text_actions as text_acts
from compactkit.compressors.digest._call_plan import CallPlan, plan_of, planned
from compactkit.compressors.sections import SummaryDocument
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

__all__ = ["assistant_prose", "call_values", "prose_values", "values_in"]

_SIMPLE_VALUE = re.compile(
    r"^-?[\w.+-]+(?: ?(?:%|ms|s|sec|seconds|minutes|min|h|hours|KB|MB|GB))?$"
)
_VALUE_NAME = re.compile(r"^`([^`]+)` = ")
_SHELL_BLOCK = re.compile(r"```(?:bash|sh|shell|console|zsh)[ \t]*\n.*?```", re.S)


def values_in(items: Sequence[Item], known: SummaryDocument) -> SummaryDocument:
    """The values ``items`` set anew (``name = value``, in prose and config edits) for names
    ``known`` already holds, so that a summary can mark a value superseded when the verbatim
    tail sets a newer one: the values of ``digest_items(items, with_goal=False)``, read without
    the rest of its facts."""
    names = {m.group(1) for e in known.entries("values") if (m := _VALUE_NAME.match(e))}
    if not names:
        return SummaryDocument()
    found = SummaryDocument.of(values=_ValueReader(items).run()).entries("values")
    mine = [e for e in found if (m := _VALUE_NAME.match(e)) and m.group(1) in names]
    return SummaryDocument.of(values=mine)


class _ValueReader:
    """``_extract._Digest``'s walk over items, writing only its value entries (with the same
    references, in the same order)."""

    def __init__(self, items: Sequence[Item]) -> None:
        self.items = items
        self.outputs = {i.call_id: i for i in items if isinstance(i, FunctionCallOutput)}
        self.values: list[str] = []
        self.pending: list[tuple[str, dict[str, object]]] = []  # an assistant's text actions
        self.fenced: list[tuple[str, dict[str, object]]] = []  # ``text_acts.bare_blocks``
        self.refs: Spans = ()

    def add(self, entries: list[str]) -> None:
        refs = self.refs
        self.values += [with_refs(e, refs) for e in entries] if refs else entries

    def run(self) -> list[str]:
        provenance = provenance_on()
        for item in self.items:
            if provenance:
                output = self.outputs.get(item.call_id) if isinstance(item, FunctionCall) else None
                self.refs = spans_of((item.seq, None if output is None else output.seq))
            if isinstance(item, Message):
                self.message(item)
            elif isinstance(item, FunctionCall):
                self.add(call_values(planned(item.name, item.arguments)))
        self.flush()
        return self.values

    def flush(self) -> None:
        actions, self.pending, self.fenced = self.pending, [], []
        for name, args in actions:
            self.add(call_values(plan_of(name, args)))

    def message(self, item: Message) -> None:
        text = item.text.strip()
        if not text:
            return
        if item.role == "user" and facts_prose.is_observation(
            text, after_action=bool(self.pending)
        ):
            self.flush()  # the observation answers the pending actions
            return
        if item.role == "user" and text_acts.answered_by(self.fenced, text):
            self.pending = self.fenced  # a shell's status answers a bare fenced block (SWE-agent)
            self.flush()
            return
        self.flush()
        if item.role not in ("user", "system", "developer"):
            self.pending, prose = assistant_prose(text)
            self.fenced = [] if self.pending else text_acts.bare_blocks(text)
            text = prose
        self.add(prose_values(text))


def assistant_prose(text: str) -> tuple[list[tuple[str, dict[str, object]]], str]:
    """An assistant message's text actions (``text_acts.text_actions``) and its prose without them:
    a fenced shell block, or an ``Action:`` with its whole (multi-line) ``Action Input:`` — a
    heredoc or patch in it is file content, not a setting the assistant states. A message that
    ends with SWE-agent's ``<command>`` (``text_acts.tagged_command``) has no text action (its
    command is one once a shell's status answers it: ``text_acts.bare_blocks``), and its prose is
    the text before the tag."""
    tagged = text_acts.tagged_command(text)
    if tagged is not None:  # SWE-agent's <command>: an action once its output answers it
        return [], text_acts.command_thought(text, tagged)
    actions = text_acts.text_actions(text)
    if not actions:
        return actions, text
    return actions, text_acts.without_text_actions(_SHELL_BLOCK.sub(" ", text))


def prose_values(text: str) -> list[str]:
    """The value entries of the values ``text`` states (``values_in_prose``): a changed value's
    old one superseded, then its new one current."""
    return list(_prose_values(text))


@functools.lru_cache(maxsize=512)
def _prose_values(text: str) -> tuple[str, ...]:
    """``prose_values``, remembered: a compaction reads its verbatim tail's messages for their
    values (``values_in``), and the next compaction folds them and reads them again. Bounded:
    512 texts (a tail's messages)."""
    entries = []
    for name, new, old in facts_values.values_in_prose(text):
        if old is not None:
            entries.append(f"`{name}` = {_value(old)} (superseded)")
        entries.append(f"`{name}` = {_value(new)} (current)")
    return tuple(entries)


def call_values(plan: CallPlan) -> list[str]:
    """The value entries of the settings a call writes into config files: a file tool's
    arguments (the text it replaced, the text it wrote), or a shell command's edits."""
    entries: list[str] = []
    for op in plan.ops:
        if op.modified and facts_values.CONFIG_FILE.search(op.path):
            if plan.command is None:
                entries += _config_change(op.path, *_replaced(plan.args))
            else:  # the same settings, written through the shell
                for old, new in shell_files.shell_edits(plan.command):
                    entries += _config_change(op.path, old, new)
    return entries


def _replaced(args: dict[str, object]) -> tuple[str, str]:
    """The text a file tool's ``args`` replace, and the text they write."""
    old = next(
        (args[k] for k in ("old_str", "old_string", "old") if isinstance(args.get(k), str)),
        "",
    )
    new = next(
        (
            args[k]
            for k in ("new_str", "new_string", "new", "content", "file_text")
            if isinstance(args.get(k), str)
        ),
        "",
    )
    return str(old), str(new)


def _config_change(path: str, old: str, new: str) -> list[str]:
    """The value entries of the settings ``new`` gives in a config file (``old``: the text it
    replaced)."""
    entries = []
    before = dict(facts_values.config_values(old, path))
    for key, value in facts_values.config_values(new, path):
        if key in before and before[key] != value:
            entries.append(f"`{key}` = {_value(before[key])} (superseded)")
        entries.append(f"`{key}` = {_value(value)} (current)")
    return entries


def _value(value: str) -> str:
    """A value as the summary shows it: plain when it is a simple token, else quoted."""
    value = value.strip()
    return value if _SIMPLE_VALUE.match(value) else facts.code(value, 60)
