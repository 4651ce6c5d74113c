"""``DigestCompressor``: fold old history into a sectioned digest of exact facts, without an LLM.

What it folds is read item by item (``digest_items``) and every fact is copied verbatim into the
summary's sections (``compactkit.compressors.sections``):

* goal — the first user message, when the summary has no goal yet;
* constraints and instructions — every short user message whole, and from long ones each
  sentence that states a rule ("must", "don't", "never", "always", "only", "use …", …); system
  or developer messages that appear mid-conversation;
* decisions — assistant sentences that decide, abandon or explain ("instead", "because", …);
* files read / files modified — from tool-call arguments (``path``/``file``/``filename`` …,
  editor commands, ``apply_patch`` patches) and shell commands (``cat``, ``sed -i``, ``rm``,
  redirections …), with what was done and whether it failed;
* commands run — shell commands with their outcome (exit code, pytest summary, error line);
  every other tool call as ``name(arguments)`` with its outcome, so no call leaves no trace;
* errors — traceback final lines, ``Error:``/``error[E…]:``/``FAILED …`` lines, marked resolved
  when the same command later succeeded in the folded span;
* identifiers — URLs, commit shas (with the commit message when git printed one), UUIDs,
  ticket and issue numbers, prefixed ids, versions;
* values — ``name = value`` settings from prose ("set X to 5") and config-file edits; the newest
  is current, older ones are marked superseded;
* current state / next steps — the last folded assistant message, and its "next" sentences.

The new facts are merged into the existing summary (parsed back, so repeated compactions
accumulate instead of starting over) and the result is trimmed to ``summary_cap_tokens``, oldest
entries first, with the trimming noted in the text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors import _facts as facts
from compactkit.compressors import _files as files
from compactkit.compressors._plan import (
    Keep,
    Layout,
    default_counter,
    newest_groups_keeper,
    request_tokens,
    result,
    summary_cap,
)
from compactkit.compressors.masking import is_masked
from compactkit.compressors.sections import SectionKey, SummaryDocument
from compactkit.errors import ConfigError
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool
from compactkit.items.snapshot import CompactResult, MemorySnapshot, summary_message

__all__ = ["DigestCompressor", "digest_items"]

_SHORT_USER_MESSAGE = 400
_Add = Callable[[SectionKey, str], None]
_CONTENT_KEYS = {"content", "file_text", "text", "old_str", "new_str", "old_string", "new_string"}


def digest_items(
    items: Sequence[Item],
    *,
    originals: Mapping[str, FunctionCallOutput] | None = None,
    with_goal: bool = True,
) -> SummaryDocument:
    """The exact facts in ``items`` as a summary document (see the module docstring).

    Args:
        items: The items to digest, oldest first.
        originals: Unmasked tool outputs by call id, read instead of a masking placeholder.
        with_goal: Take the first substantive user message as the goal.
    """
    originals = originals or {}
    entries: dict[SectionKey, list[str]] = {}

    def add(key: SectionKey, text: str) -> None:
        entries.setdefault(key, []).append(text)

    outputs = {
        i.call_id: originals.get(i.call_id, i) for i in items if isinstance(i, FunctionCallOutput)
    }
    errors: list[tuple[str, str | None]] = []  # (error, command that produced it)
    succeeded: set[str] = set()
    file_reads: set[str] = set()  # calls that read or wrote files through a file tool
    last_assistant = ""  # the latest assistant message that is not a preamble to calls
    for index, item in enumerate(items):
        if isinstance(item, Message):
            text = item.text.strip()
            if not text:
                continue
            if item.role == "user":
                with_goal = _user_message(text, with_goal, add)
                errors += [(e, None) for e in facts.errors_in(text)]
            elif item.role in ("system", "developer"):
                add("constraints", f"({item.role}) {facts.clip(text, 500)}")
            else:
                following = items[index + 1] if index + 1 < len(items) else None
                if not isinstance(following, FunctionCall) or not last_assistant:
                    last_assistant = text
                for sentence in facts.sentences(text):
                    if facts.DECISION.search(sentence):
                        add("decisions", facts.clip(sentence, 280))
            for name, new, old in facts.values_in_prose(text):
                if old is not None:
                    add("values", f"`{name}` = {old} (superseded)")
                add("values", f"`{name}` = {new} (current)")
            for ident, kind in facts.identifiers_in(text, prose=True):
                add("identifiers", _identifier(ident, kind))
        elif isinstance(item, FunctionCall):
            output = outputs.get(item.call_id)
            out_text = "" if output is None else output.text
            command, ok = _call(item, out_text, add)
            if command is None and files.file_ops(item.name, item.parsed_arguments()):
                file_reads.add(item.call_id)
            if ok and command:
                succeeded.add(command)
            errors += [(e, command or item.name) for e in facts.errors_in(out_text)]
            # Identifiers in commands and plain arguments; not in file contents being written.
            args = item.parsed_arguments()
            plain = " ".join(
                str(v) for k, v in args.items() if k not in _CONTENT_KEYS and isinstance(v, str)
            )
            for ident, kind in facts.identifiers_in(plain, prose=True, limit=4):
                add("identifiers", _identifier(ident, kind))
        elif (
            isinstance(item, FunctionCallOutput)
            and not is_masked(outputs[item.call_id])
            and item.call_id not in file_reads  # identifiers in file contents are mostly noise
        ):
            for ident, kind in facts.identifiers_in(outputs[item.call_id].text, prose=False):
                add("identifiers", _identifier(ident, kind))
    for error, source in errors:
        entry = facts.code(error, 240)
        if source:
            entry += f" — from {facts.code(source, 80)}"
            if source in succeeded:
                entry += "; resolved: a later run succeeded"
        add("errors", entry)
    if last_assistant:
        add(
            "state",
            f"As of the last folded turn, the assistant said: {facts.clip(last_assistant, 400)}",
        )
        steps = [s for s in facts.sentences(last_assistant) if facts.NEXT_STEP.search(s)]
        for step in steps[:3]:
            add("next_steps", facts.clip(step, 200))
    return SummaryDocument.of(**entries)


def _user_message(text: str, with_goal: bool, add: _Add) -> bool:
    """Digest one user message; returns whether the goal is still to be taken."""
    if facts.TRIVIAL.match(text):
        return with_goal
    paragraphs = facts.paragraphs(text)
    rest = paragraphs
    if with_goal:  # the first paragraph states the task; the rest may hold its constraints
        add("goal", facts.clip(paragraphs[0], 600))
        rest = paragraphs[1:]
    elif len(text) <= _SHORT_USER_MESSAGE:
        add("constraints", facts.unwrap(text))
        return False
    for paragraph in rest:
        item = facts.list_item(paragraph)
        if item is not None:  # a list in a user message is a list of requirements: keep each
            add("constraints", facts.clip(item, 400))
            continue
        for sentence in facts.sentences(paragraph):
            if facts.CONSTRAINT.search(sentence):
                add("constraints", facts.clip(sentence, 400))
    return False


def _call(item: FunctionCall, out_text: str, add: _Add) -> tuple[str | None, bool | None]:
    args = item.parsed_arguments()
    command = files.command_of(item.name, args)
    outcome, ok = facts.outcome_of(out_text) if out_text else ("no output", None)
    failed = facts.last_error(out_text) if out_text else None
    if command is not None:
        add("commands", f"{facts.code(command, 200)} → {outcome}")
        ops = files.shell_file_ops(command)
    else:
        ops = files.file_ops(item.name, args)
        if not ops:
            add("commands", f"{facts.code(f'{item.name}({item.arguments})', 160)} → {outcome}")
    for op in ops:
        what = op.what + (f" (failed: {failed})" if failed and op.modified else "")
        add(
            "files_modified" if op.modified else "files_read",
            f"{facts.code(op.path, 160)} — {what}",
        )
        if op.modified and facts.CONFIG_FILE.search(op.path):
            _config_values(op.path, args, add)
    return command, ok


def _config_values(path: str, args: dict[str, object], add: _Add) -> None:
    old = next(
        (args[k] for k in ("old_str", "old_string", "old") if isinstance(args.get(k), str)), ""
    )
    new = next(
        (
            args[k]
            for k in ("new_str", "new_string", "new", "content", "file_text")
            if isinstance(args.get(k), str)
        ),
        "",
    )
    before = dict(facts.config_values(str(old), path))
    for key, value in facts.config_values(str(new), path):
        if key in before and before[key] != value:
            add("values", f"`{key}` = {before[key]} (superseded)")
        add("values", f"`{key}` = {value} (current)")


def _identifier(ident: str, kind: str) -> str:
    return f"`{ident}` — {kind}"


@dataclass(frozen=True)
class DigestCompressor:
    """Fold all but the newest history into a digest of exact facts (no LLM).

    How much stays verbatim: ``keep_last_groups`` newest groups, or the newest groups within
    ``keep_tokens``; with neither, derived from ``target_tokens`` (what is left of the target
    after the instructions, protected groups, tool schemas and the summary cap); with no target
    either, the last 10 groups. Pinned items, the latest user input and pending calls always
    stay.

    Args:
        keep_last_groups: Keep this many newest unprotected groups verbatim.
        keep_tokens: Keep the newest groups whose tokens fit this many.
        target_tokens: The whole-request size the result should fit.
        summary_cap_tokens: The summary's ceiling; default a quarter of the target, between 300
            and 4,000 tokens (2,000 without a target).
        counter: Counts tokens the way the model's API bills them (default: o200k_base).
        tools: The tool schemas sent with the request (they count toward the target).

    Raises:
        ConfigError: a negative or zero size.
    """

    keep_last_groups: int | None = None
    keep_tokens: int | None = None
    target_tokens: int | None = None
    summary_cap_tokens: int | None = None
    counter: TokenCounter = field(default_factory=default_counter)
    tools: Sequence[Tool] = ()

    name = "digest"

    def __post_init__(self) -> None:
        for label in ("keep_last_groups", "keep_tokens", "target_tokens", "summary_cap_tokens"):
            value = getattr(self, label)
            if value is not None and (value < (0 if label == "keep_last_groups" else 1)):
                raise ConfigError(f"{label} must be positive, got {value!r}")

    @property
    def cap(self) -> int:
        """The summary's token ceiling in effect."""
        return summary_cap(self.summary_cap_tokens, self.target_tokens)

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Fold the oldest unprotected groups into the digest; never raises for run time."""
        return self.compress_with_originals(snapshot, {})

    def compress_with_originals(
        self, snapshot: MemorySnapshot, originals: Mapping[str, FunctionCallOutput]
    ) -> CompactResult:
        """``compress``, reading ``originals[call_id]`` instead of a masked output's placeholder
        (a ``LadderCompressor`` passes the outputs its masking step replaced)."""
        counter = self.counter
        layout = Layout.of(snapshot.items)
        before = request_tokens(snapshot, counter, self.tools)
        explicit_keep = self.keep_last_groups is not None or self.keep_tokens is not None
        if self.target_tokens is not None and before <= self.target_tokens and not explicit_keep:
            # Already within the target (as the LLM summary decides): nothing to fold.
            return result(self.name, snapshot, None, counter, self.tools, tokens_before=before)
        first_kept = layout.cut(self._keeper(layout))
        kept, folded = layout.split(first_kept)
        if not folded:
            return result(self.name, snapshot, None, counter, self.tools, tokens_before=before)
        existing = (
            SummaryDocument.parse(snapshot.summary) if snapshot.summary else SummaryDocument()
        )
        new = digest_items(folded, originals=originals, with_goal=not existing.entries("goal"))
        merged = existing.merge(new)
        cap = self.cap
        if self.target_tokens is not None:  # a smaller cap when the kept items leave less room
            rest = sum(counter.count_item(i) for i in kept) + counter.count_overhead(self.tools)
            room = self.target_tokens - rest - counter.count_item(summary_message(""))
            cap = max(1, min(cap, room))
        trimmed = merged.trim_to(cap, counter)
        after = snapshot.model_copy(update={"items": tuple(kept), "summary": trimmed.render()})
        details: dict[str, object] = {
            "folded_groups": sum(1 for i in range(first_kept) if layout.protected[i] is None),
            "digest_entries": len(new),
            "summary_entries": len(trimmed),
            "trimmed_entries": trimmed.trimmed - merged.trimmed,
            "summary_cap_tokens": cap,
        }
        after_tokens = request_tokens(after, counter, self.tools)
        if self.target_tokens is not None:
            details["target_tokens"] = self.target_tokens
            details["target_met"] = after_tokens <= self.target_tokens
        if after_tokens >= before:  # folding this little only grew the prompt
            details["reason"] = "the digest would not be smaller than what it replaces"
            return result(
                self.name,
                snapshot,
                None,
                counter,
                self.tools,
                tokens_before=before,
                details=details,
            )
        return result(
            self.name, snapshot, after, counter, self.tools, tokens_before=before, details=details
        )

    def _keeper(self, layout: Layout) -> Keep:
        return newest_groups_keeper(
            layout,
            self.counter,
            keep_last_groups=self.keep_last_groups,
            keep_tokens=self.keep_tokens,
            target_tokens=self.target_tokens,
            summary_cap=self.cap,
            tools=self.tools,
        )
