"""Actions an assistant writes in its text instead of tool calls, and which user message answers
them: fenced ``bash`` blocks (mini-swe-agent), ``Action:`` / ``Action Input:`` (ReAct),
OpenHands' ``<function=…>`` calls, and SWE-agent's command (a bare fenced block or
``<command>`` tags) with the shell's status lines that answer it. What each action does to files
is read by ``_files`` and ``_shell_files`` as for a tool call.
"""

from __future__ import annotations

import json
import re

from compactkit.compressors import _facts_prose as facts_prose
from compactkit.compressors.digest._files import SHELL_TOOL, FileOp, looks_like_path

__all__ = [
    "answered_by",
    "bare_blocks",
    "command_thought",
    "function_call",
    "swe_agent_ops",
    "tagged_command",
    "text_actions",
    "without_text_actions",
]

_FENCED_ACTION = re.compile(r"```(?:bash|sh|shell|console|zsh)[ \t]*\n(.*?)\n?```", re.S)
_ACTION_LINE = re.compile(
    r"^Action:\s*(?P<tool>[\w.-]+)(?:\[(?P<bracket>.*)\])?[ \t]*\n?"
    r"(?:Action Input:\s*(?P<input>.*?))?(?=\n(?:Observation|Thought|Action):|\Z)",
    re.S | re.M | re.I,
)


# OpenHands without native function calling: ``<function=NAME>`` then one
# ``<parameter=KEY>VALUE</parameter>`` per argument, up to ``</function>``.
_FUNCTION_HEAD = re.compile(r"<function=([^>\n]+)>")
_PARAMETER_HEAD = re.compile(r"\s*<parameter=([^>\n]+)>")
_FUNCTION_END = "</function>"
_WRAPPER_OPEN, _WRAPPER_CLOSE = "<tool_call>", "</tool_call>"  # (Qwen3-Coder's template)


def function_call(text: str) -> tuple[int, tuple[str, dict[str, object]]] | None:
    """The call an assistant's message ends with in OpenHands' text format, and where it
    starts: ``<function=NAME>``, nothing but ``<parameter=KEY>VALUE</parameter>`` arguments,
    then ``</function>`` and the message's end (the model stops there), perhaps wrapped in
    ``<tool_call>`` … ``</tool_call>`` (Qwen3-Coder's template). Its generation stops at
    ``</function``, so the closing tag may be missing or cut short; then at least one argument
    must be there. ``None`` when the message does not end with such a call (an example of the
    format in prose, followed by more prose, is not a call).

    Cost model: at most two candidate starts (the first ``<function=`` and the last), each
    read once to the end: linear in the text."""
    first = text.find("<function=")
    if first < 0:
        return None
    body_end = len(text.rstrip())
    if text.endswith(_WRAPPER_CLOSE, 0, body_end):
        body_end = len(text[: body_end - len(_WRAPPER_CLOSE)].rstrip())
    closed = text.endswith(_FUNCTION_END, 0, body_end)
    if closed:
        body_end -= len(_FUNCTION_END)
    for start in dict.fromkeys((first, text.rfind("<function=", 0, body_end))):
        if start < 0:
            continue
        head = _FUNCTION_HEAD.match(text, start)
        if head is None:
            continue
        arguments: dict[str, object] = {}
        at = head.end()
        while (parameter := _PARAMETER_HEAD.match(text, at, body_end)) is not None:
            close = text.find("</parameter>", parameter.end(), body_end)
            if close < 0:
                break
            arguments[parameter.group(1).strip()] = text[parameter.end() : close].strip()
            at = close + len("</parameter>")
        rest = text[at:body_end].strip()
        if closed and rest:
            continue
        if not closed and (not arguments or not _FUNCTION_END.startswith(rest)):
            continue  # (a rest of "</" or "</func": the generation cut inside the closing tag)
        before = text[:start].rstrip()
        if before.endswith(_WRAPPER_OPEN):
            start = len(before) - len(_WRAPPER_OPEN)
        return start, (head.group(1).strip(), arguments)
    return None


def text_actions(text: str) -> list[tuple[str, dict[str, object]]]:
    """``(tool, arguments)`` of the actions an assistant wrote as text: fenced ``bash`` blocks
    (mini-swe-agent), ``Action: bash`` / ``Action Input: …`` (ReAct), ``Action: tool[input]``;
    or the one ``<function=tool>`` call with its ``<parameter=name>`` values the message ends
    with (OpenHands without native function calling: ``EXECUTION RESULT of [tool]:`` answers
    it; only that call runs, so a fenced block in the message, an argument's text included, is
    not read as a command)."""
    if "<function=" in text:
        call = function_call(text)
        if call is not None:
            return [call[1]]
    actions: list[tuple[str, dict[str, object]]] = []
    for block in _FENCED_ACTION.findall(text):
        if block.strip():
            actions.append(("bash", {"command": block.strip()}))
    for match in _ACTION_LINE.finditer(text):
        tool = match.group("tool")
        raw = (match.group("input") or match.group("bracket") or "").strip()
        if raw.startswith("```"):
            raw = re.sub(r"^```\w*\n?|\n?```$", "", raw).strip()
        if not raw:
            continue
        args: dict[str, object]
        try:
            parsed = json.loads(raw)
            args = parsed if isinstance(parsed, dict) else {"input": raw}
        except (ValueError, RecursionError):
            args = {"command": raw} if SHELL_TOOL.search(tool) else {"input": raw}
            if not SHELL_TOOL.search(tool) and looks_like_path(raw):
                args = {"path": raw}
        actions.append((tool, args))
    return actions


_FENCE_LINE = re.compile(r"^```(\S*)[ \t]*$", re.M)


def bare_blocks(text: str) -> list[tuple[str, dict[str, object]]]:
    """``[("bash", {"command": …})]`` for the command SWE-agent reads from an assistant's
    text, else ``[]``. Not an action by itself (an assistant also fences code it shows): only
    once a shell's status answers it (``facts_prose.is_observation``).

    SWE-agent's two text formats, as its own parsers read them: with ``<command>`` tags, what
    lies between the last ``<command>`` and the last ``</command>``; else the last outermost
    fenced block, when it has no language (fences at a line's start; one with a language
    opens a nested block, a bare one closes the innermost)."""
    tagged = tagged_command(text)
    if tagged is not None:
        return [("bash", {"command": tagged[2]})] if tagged[2] else []
    if "```" not in text:
        return []
    opened: list[tuple[int, str]] = []  # where each open block's text starts, its language
    last: tuple[int, int, str] | None = None
    for fence in _FENCE_LINE.finditer(text):
        language = fence.group(1)
        if not opened or language:
            opened.append((fence.end(), language))
            continue
        start, language = opened.pop()
        if not opened:
            last = (start, fence.start(), language)
    if last is None or last[2]:
        return []
    block = text[last[0] : last[1]].strip()
    return [("bash", {"command": block})] if block else []


def tagged_command(text: str) -> tuple[int, int, str] | None:
    """Where SWE-agent's XML format puts an assistant's command (``(start, end)`` of the tags
    and what they hold), as its parser reads it: between the last ``<command>`` and the last
    ``</command>``. Only when the message ends with ``</command>``, or both tags stand on lines
    of their own in a message with no fenced block or ``<function=`` call (then the thought goes
    on after the command); ``None`` for any other message (prose that names the tags inline and
    goes on is not a command, nor are tags a fenced heredoc writes into an XML file)."""
    if "<command>" not in text:
        return None
    stripped = len(text.rstrip())
    ends = text.endswith("</command>", 0, stripped)
    close = stripped - len("</command>") if ends else text.rfind("</command>")
    start = text.rfind("<command>", 0, close) if close > 0 else -1
    if start < 0:
        return None
    end = close + len("</command>")
    if not ends and not (
        (start == 0 or text[start - 1] == "\n")
        and text[close - 1] == "\n"
        and text.startswith("\n", end)
        and "```" not in text  # (tags on lines of their own inside a heredoc or a file's text)
        and "<function=" not in text
    ):
        return None
    return start, end, text[start + len("<command>") : close].strip()


def command_thought(text: str, tagged: tuple[int, int, str]) -> str:
    """``text`` without its ``tagged`` command (``tagged_command``): SWE-agent's thought."""
    start, end, _ = tagged
    return text[:start] + text[end:] if end < len(text.rstrip()) else text[:start]


def answered_by(actions: list[tuple[str, dict[str, object]]], text: str) -> bool:
    """Whether the user-role ``text`` is the output of ``actions``, the bare fenced command of
    the assistant message before it (``bare_blocks``: SWE-agent): it ends with a shell's
    status lines, and it is not the next task after ``submit`` (a submission ends the episode,
    unless it is answered in one line: "Wrong flag!", and the episode goes on)."""
    if not actions or not facts_prose.is_observation(text, after_action=True):
        return False
    command = str(actions[-1][1].get("command", ""))
    if command.split(None, 1)[:1] != ["submit"]:
        return True
    return "\n" not in facts_prose.observation_body(text).strip()


_LINE_RANGE = re.compile(r"\d+:\d+")


def swe_agent_ops(command: str, open_file: str | None) -> tuple[FileOp, ...]:
    """What SWE-agent's own commands do to files: ``open f [line]`` reads ``f``; ``edit a:b``
    (the new lines follow it) edits the file open when it ran (``open_file``, from the status
    lines before it)."""
    words = command.split(None, 2)
    if len(words) < 2:
        return ()
    if words[0] == "open" and looks_like_path(words[1].strip("\"'")):
        return (FileOp(words[1].strip("\"'"), False, "read"),)
    if words[0] == "edit" and open_file is not None and _LINE_RANGE.fullmatch(words[1]):
        return (FileOp(open_file, True, f"edited lines {words[1].replace(':', '-')}"),)
    return ()


def without_text_actions(text: str) -> str:
    """``text`` without its ``Action: …`` / ``Action Input: …`` blocks (each up to the next
    ``Observation:``, ``Thought:`` or ``Action:`` line), or without the ``<function=…>`` call it
    ends with (``function_call``)."""
    if "<function=" in text:
        call = function_call(text)
        if call is not None:
            return text[: call[0]]
    if "Action" not in text:
        return text
    text = _ACTION_LINE.sub(" ", text)
    return re.sub(r"^Action(?: Input)?:.*$", " ", text, flags=re.M)
