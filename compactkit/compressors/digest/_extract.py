"""``digest_items``: the exact facts in conversation items, section by section (no LLM).

Who wrote a text decides what it may become. Only text a person wrote in a user message can be
the goal or a constraint; tool output — including a tool's output fed back as a user message
by a text-action agent (``Observation: …``, ``<returncode>…``) — and the assistant's own words
never can. Excerpts of tool output, files and commands are quoted as `` `code` `` spans (the
summary labels them as data), with backticks and line breaks removed so that no excerpt can
close its span or start a heading of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from compactkit.compressors import _facts as facts
from compactkit.compressors import _facts_ids as facts_ids
from compactkit.compressors import _facts_prose as facts_prose
from compactkit.compressors._refs import Spans, provenance_on, spans_of, with_refs
from compactkit.compressors.digest import _files as files
from compactkit.compressors.digest import _text_actions as text_acts
from compactkit.compressors.digest._call_plan import CallPlan, plan_of, planned
from compactkit.compressors.digest._runs import command_line, covers, family, scope_of
from compactkit.compressors.digest._values import (
    assistant_prose,
    call_values,
    prose_values,
    values_in,
)
from compactkit.compressors.masking import is_masked
from compactkit.compressors.sections import SectionKey, SummaryDocument
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

__all__ = ["digest_items", "values_in"]

_Add = Callable[[SectionKey, str], None]
_GOAL_CHARS = 600
_REQUEST_CHARS = 300


def digest_items(
    items: Sequence[Item],
    *,
    originals: Mapping[str, FunctionCallOutput] | None = None,
    with_goal: bool = True,
) -> SummaryDocument:
    """The exact facts in ``items`` as a summary document (see ``compactkit.compressors.digest``).

    Args:
        items: The items to digest, oldest first.
        originals: Unmasked tool outputs by call id, read instead of a masking placeholder.
        with_goal: Take the first substantive user message as the goal.
    """
    digest = _Digest(items, originals or {}, with_goal)
    digest.run()
    return SummaryDocument.of(**digest.entries)


class _Digest:
    def __init__(
        self, items: Sequence[Item], originals: Mapping[str, FunctionCallOutput], with_goal: bool
    ) -> None:
        self.items = items
        self.with_goal = with_goal
        self.entries: dict[SectionKey, list[str]] = {}
        self.outputs = {
            i.call_id: originals.get(i.call_id, i)
            for i in items
            if isinstance(i, FunctionCallOutput)
        }
        self.errors: list[_Error] = []
        self.step = 0  # calls digested so far: orders errors, successes and file changes
        self.succeeded: dict[tuple[str, ...], list[tuple[int, str]]] = {}  # family -> runs
        self.changed: dict[str, int] = {}  # path -> the last step that modified it
        self.file_calls: set[str] = set()  # calls that read or wrote files through a file tool
        self.last_assistant = ""
        self.pending_actions: list[tuple[str, dict[str, object]]] = []
        self.fenced: list[tuple[str, dict[str, object]]] = []  # ``text_acts.bare_blocks``
        self.open_file: str | None = None  # the file SWE-agent's last status lines named
        # the SWE-agent output answering ``fenced`` (``answered_by``)
        self.status: str | None = None
        self.refs: Spans = ()  # the references ``add`` gives an entry: the item being read

    def add(self, key: SectionKey, text: str) -> None:
        self.entries.setdefault(key, []).append(with_refs(text, self.refs) if self.refs else text)

    def run(self) -> None:
        items = self.items
        error_refs: list[Spans] = []  # the item each of self.errors was found in
        last_assistant, state_refs = self.last_assistant, self.refs
        provenance = provenance_on()  # else every item's references are none
        for index, item in enumerate(items):
            if provenance:  # what this item adds comes from it (a call's: with its output)
                output = self.outputs.get(item.call_id) if isinstance(item, FunctionCall) else None
                self.refs = spans_of((item.seq, None if output is None else output.seq))
            self.step_item(index, item)
            if len(self.errors) > len(error_refs):
                error_refs += [self.refs] * (len(self.errors) - len(error_refs))
            if self.last_assistant is not last_assistant:
                last_assistant, state_refs = self.last_assistant, self.refs
        self.flush_actions(None)
        error_refs += [self.refs] * (len(self.errors) - len(error_refs))
        self.finish(error_refs, state_refs)

    def step_item(self, index: int, item: Item) -> None:
        """Digest one item (its entries carry ``self.refs``)."""
        items = self.items
        if isinstance(item, Message):
            following = items[index + 1] if index + 1 < len(items) else None
            self.message(item, following)
        elif isinstance(item, FunctionCall):
            output = self.outputs.get(item.call_id)
            plan = planned(item.name, item.arguments)
            if self.call(plan, None if output is None else output.text):
                self.file_calls.add(item.call_id)
        elif (
            isinstance(item, FunctionCallOutput)
            and item.call_id not in self.file_calls  # ids in file contents are mostly noise
            and not is_masked(self.outputs[item.call_id])
        ):
            self.identifiers(self.outputs[item.call_id].text, prose=False)

    def finish(self, error_refs: list[Spans], state_refs: Spans) -> None:
        """The entries known only once every item is read: errors (with how each was
        resolved), the current state and the next steps."""
        last_seen = {error.text: error.step for error in self.errors}
        by_step: dict[int, list[str]] = {}
        for error in self.errors:
            by_step.setdefault(error.step, []).append(error.text)
        for error, refs in zip(self.errors, error_refs, strict=True):
            self.refs = refs
            if error.source and any(
                error.text != other and error.text in other for other in by_step[error.step]
            ):
                continue  # ``AssertionError: x`` beside its ``FAILED t.py::t - AssertionError: x``
            entry = facts.code(error.text, 240)
            if error.source:
                entry += f" — from {facts.code(command_line(error.source), 80)}"
            how = self.resolution(error, last_seen[error.text])
            if how:
                entry += ("; " if error.source else " — ") + how
            self.add("errors", entry)
        self.refs = state_refs
        if self.last_assistant:
            self.add(
                "state",
                "As of the last folded turn, the assistant said: "
                + facts.clip(self.last_assistant, 400),
            )
            steps = facts_prose.sentences_saying(facts_prose.NEXT_STEP, self.last_assistant)
            for step in steps[:3]:
                self.add("next_steps", facts.clip(step, 200))

    def resolution(self, error: _Error, last_seen: int) -> str:
        """How ``error`` was resolved after it was last seen, or ``""`` while it is open: a
        later successful run of the same command (or of the same tool over a scope that holds
        the failed one's), else a later change to a file its traceback or command names."""
        if error.source is not None:
            name, scope = family(error.source), scope_of(error.source)
            for step, command in self.succeeded.get(name, ()):
                later_scope = scope_of(command)
                if step > last_seen and covers(later_scope, scope):
                    return f"resolved: {facts.code(command_line(command), 80)} succeeded later"
        for path in error.files:
            changed = self.changed.get(path, -1) > last_seen
            if not changed and path.startswith("/"):  # a traceback's absolute path
                changed = any(
                    step > last_seen and path.endswith("/" + edited.removeprefix("./"))
                    for edited, step in self.changed.items()
                )
            if changed:
                return f"resolved: {facts.code(path, 80)} changed after it"
        return ""

    # -- messages -------------------------------------------------------------------------------

    def message(self, item: Message, following: Item | None) -> None:
        text = item.text.strip()
        if not text:
            return
        if item.role == "user" and self.observation(text):
            body = facts_prose.observation_body(text)
            if self.pending_actions:  # a text-action agent's observation: tool output
                self.flush_actions(body)
            else:
                self.fenced = []
                self.errors += [_Error(e, None, self.step, ()) for e in facts.errors_in(body)]
            self.identifiers(body, prose=False)
            return
        self.flush_actions(None)
        if item.role == "user":
            self.user(text)
            self.errors += [_Error(e, None, self.step, ()) for e in facts.errors_in(text)]
        elif item.role in ("system", "developer"):
            self.add("constraints", f"({item.role}) {facts.clip(text, 500)}")
        else:
            actions, prose = assistant_prose(text)
            self.pending_actions = actions
            self.fenced = [] if actions else text_acts.bare_blocks(text)
            if (
                not actions
                and prose.strip()  # (without SWE-agent's <command>: its thought, if any)
                and (not isinstance(following, FunctionCall) or not self.last_assistant)
            ):
                self.last_assistant = prose
            for sentence in facts_prose.sentences_saying(facts_prose.DECISION, prose):
                self.add("decisions", facts.clip(sentence, 280))
            text = prose
        for entry in prose_values(text):
            self.add("values", entry)
        self.identifiers(text, prose=True)

    def observation(self, text: str) -> bool:
        """Whether the user-role ``text`` is a tool's output fed back. A shell's status lines
        after an assistant's bare fenced block (SWE-agent) make that block the action it
        answers."""
        if facts_prose.is_observation(text, after_action=bool(self.pending_actions)):
            return True
        if text_acts.answered_by(self.fenced, text):
            self.pending_actions, self.status = self.fenced, text
            return True
        return False

    def user(self, text: str) -> None:
        """The goal (first substantive message), the constraints (sentences that state a rule,
        items of a list), and what else a later message says, among the constraints as ``Later: …``
        (a request, a correction: the user's words, sentence by sentence)."""
        if facts_prose.TRIVIAL.match(text):
            return
        # where this message's entries start: its code names already quoted there are not repeated
        start: dict[SectionKey, int] = {
            "goal": len(self.entries.get("goal", [])),
            "constraints": len(self.entries.get("constraints", [])),
        }
        paragraphs = facts_prose.paragraphs(facts_prose.without_fences(text))
        if not paragraphs:
            return
        pieces: list[tuple[str, bool]] = []  # its list items and sentences: (text, listed)
        for paragraph in paragraphs:
            item = facts_prose.list_item(paragraph)
            if item is not None:  # a list in a user message is a list of requirements: keep each
                pieces.append((item, True))
            else:
                pieces += [(s, False) for s in facts_prose.sentences(paragraph) or [paragraph]]
        # whether each sentence states a rule, read together (``said``)
        rules = iter(facts_prose.said(facts_prose.CONSTRAINT, [t for t, li in pieces if not li]))
        said: list[str] = []  # the sentences that state no rule
        for piece, listed in pieces:
            if listed or (next(rules) and not facts.errors_in(piece)):
                self.add("constraints", facts.clip(piece, 400))
            else:
                said.append(piece)
        if self.with_goal:
            self.add("goal", facts.clip(paragraphs[0], _GOAL_CHARS))
            self.with_goal = False
        elif said:
            # Among the constraints, in the order said: a later correction ("make it 45
            # instead") comes after the rule it changes, so the newest word reads last.
            self.add("constraints", "Later: " + facts.clip(" ".join(said), _REQUEST_CHARS))
        self.code_names(text, start)

    def code_names(self, text: str, start: Mapping[SectionKey, int]) -> None:
        """The code names the user's ``text`` gives (``facts_prose.code_names``: its code sample's
        functions and classes, names and paths in backticks or prose) that the entries it just
        added (from ``start`` on, per section) do not already quote, as identifiers."""
        names = facts_prose.code_names(text)
        if not names:
            return
        kept = " ".join(
            e for key, first in start.items() for e in self.entries.get(key, [])[first:]
        )
        for name in names:
            if name not in kept:
                self.add("identifiers", f"`{name}` — named by the user")

    # -- calls ----------------------------------------------------------------------------------

    def flush_actions(self, observation: str | None) -> None:
        """Digest the text actions of the last assistant message, with ``observation`` (the
        user-role tool output that answered them) as their output."""
        actions, self.pending_actions, self.fenced = self.pending_actions, [], []
        status, self.status = self.status, None
        for name, args in actions:
            plan = plan_of(name, args)
            if status is not None:  # SWE-agent's commands: ``open``, ``edit`` of the open file
                extra = text_acts.swe_agent_ops(plan.command or "", self.open_file)
                plan = plan._replace(ops=plan.ops + extra) if extra else plan
            self.call(plan, observation)
        if status is not None:
            self.open_file = facts_prose.open_file(status)

    def call(self, plan: CallPlan, out_text: str | None) -> bool:
        """Digest one call (``plan``: what its name and arguments say) and its output; whether
        it is a file tool's call (not a shell's)."""
        command, ops = plan.command, plan.ops
        text = out_text or ""
        found = facts.error_lines(text) if text else []  # read once: errors, outcome, failure
        ok = self.command_run(plan, text, found)
        self.file_entries(ops, text, found)
        for entry in call_values(plan):
            self.add("values", entry)
        self.step += 1
        for op in ops:
            if op.modified:
                self.changed[op.path] = self.step
        source = plan.source
        if ok:
            self.succeeded.setdefault(family(source), []).append((self.step, source))
        if found:
            named = (*files.paths_named(text), *files.paths_in_command(command or ""))
            self.errors += [
                _Error(e, source, self.step, (*files.paths_named(e), *named))
                for e in facts.limited(found)
            ]
        for entry in plan.ids:
            self.add("identifiers", entry)
        return command is None and bool(ops)

    def command_run(self, plan: CallPlan, text: str, found: list[str]) -> bool | None:
        """Whether a call succeeded; a shell command, or a call that touches no file, listed
        with its outcome under commands (a file tool's call has its files for an outcome)."""
        if plan.head is None:
            return None
        outcome, ok = _outcome(text, found)
        self.add("commands", f"{plan.head} → {outcome}")
        if plan.measures:
            self.measurements(plan.subject, text, found)
        return ok

    def measurements(self, subject: str, text: str, found: list[str]) -> None:
        """What a run's output reports it measured (``facts.measurements_in``), under the
        command or call that measured it: its newest run's are current, earlier runs' are
        kept as earlier (see ``SummaryDocument.merge``)."""
        lines = facts.measurements_in(text, found)
        if lines:
            measured = "; ".join(facts.code(line, 100) for line in lines)
            self.add("measurements", f"{facts.code(subject, 100)} → {measured}")

    def file_entries(
        self,
        ops: tuple[files.FileOp, ...],
        text: str,
        found: list[str],
    ) -> None:
        """An entry per file a call touched (a failed write marked with its error line)."""
        # what a failed write is marked with (a read is not); no error line, no failure to mark
        failed = facts.last_error(text, found) if found and any(o.modified for o in ops) else None
        for op in ops:
            what = op.what + (
                f" (failed: {facts.code(failed, 120)})" if failed and op.modified else ""
            )
            self.add(
                "files_modified" if op.modified else "files_read",
                f"{facts.code(op.path, 160)} — {what}",
            )

    def identifiers(self, text: str, *, prose: bool, limit: int = 8) -> None:
        for ident, kind in facts_ids.identifiers_in(text, prose=prose, limit=limit):
            self.add("identifiers", f"`{ident}` — {kind}")


class _Error(NamedTuple):
    """An error line, where it came from and the files it names (its traceback's, its
    command's)."""

    text: str
    source: str | None
    step: int
    files: tuple[str, ...]


def _outcome(text: str, found: list[str]) -> tuple[str, bool | None]:
    """``facts.outcome_of`` of a call's output text (``found``: its error lines), "no output"
    for none."""
    return facts.outcome_of(text, found) if text else ("no output", None)
