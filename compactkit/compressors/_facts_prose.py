"""What people and agents write, read as prose: sentences, paragraphs, phrases and observations.

Splitting text into sentences, paragraphs and list items (fenced code removed, hard wraps
joined), the phrase patterns that mark a constraint, a decision or a next step (``says``), the
code names a person's text gives, and the tool output fed back as a user message
(``is_observation``). They are separate from ``_facts`` because they read the shape of prose,
not the facts of a tool's output (errors, outcomes, measurements), and need nothing from it.
"""

from __future__ import annotations

import re

from compactkit.compressors._anchored import case_folded, matches_at

# -- sentences -------------------------------------------------------------------------------

# Where a sentence ends: ``(?<=[.!?])\s+(?=[A-Z"'`(])|\n+``, written with its first character
# (a space, in both forms) ahead of the look-behinds, as ``_facts_ids._SHA``: the regex engine
# then skips ahead to the next space, where a leading look-behind is tried at every position
# (tests/compressors/test_digest_reading_fast_paths.py: the same splits).
_SENTENCE_END = re.compile(r"\s(?:(?<=[.!?]\s)\s*(?=[A-Z\"'`(])|(?<=\n)\n*)")
CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|don't|do not|never|always|only|should|shouldn't|avoid|prefer|make sure"
    r"|ensure|keep|no longer|instead|please|need|needs|required?|requires|has to|have to|without|can't|cannot"
    r"|use|stick to|at most|at least|no more than|not allowed|forbidden|no|not)\b",
    re.IGNORECASE,
)
DECISION = re.compile(
    r"\b(?:decid\w*|chose|choose|going with|go with|decision|instead|because|abandon\w*"
    r"|switch\w* (?:to|back)|won't work|doesn't work|didn't work|does not work|root cause"
    r"|the (?:fix|problem|issue|cause|culprit) (?:is|was)|rather than|giving up on|dropping"
    r"|let's use|we'll use|I'll use|plan is|approach"
    # dead ends: what was tried and undone, ruled out or given up
    r"|reverted|reverting|revert (?:it|that|this|the)|rolled back|roll(?:ing)? back"
    r"|went back to|going back to|fell back|falling back|fall back to|gave up|give up"
    r"|ruled out|rule out|dead end|won't|will not|not going to|no longer|opted|settled on"
    r"|ended up|scrapped|undid|backed out|did not work|didn't help|did not help|tried \w+(?: \w+)*?,? but)\b",
    re.IGNORECASE,
)
NEXT_STEP = re.compile(r"\b(?:next|then I'll|I'll now|remaining|todo|still need|next step)\b", re.I)
TRIVIAL = re.compile(
    r"^(?:ok(?:ay)?|yes|yep|yeah|no|nope|thanks?(?: you)?|thx|continue|go on|go ahead|proceed"
    r"|sure|great|lgtm|done|next|cool|nice|perfect)(?:[ ,]+(?:please|thanks?|thank you))?[.! ]*$",
    re.IGNORECASE,
)


def _lowered(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` (which ignores case) as a case-sensitive pattern of its lowered text that
    opens with the character before a phrase, its phrases grouped by their first letter:
    ``\\b(?:must|make sure|never)\\b`` is ``[^\\w](?:m(?:ust|ake sure)|n(?:ever))\\b``.

    Searched in the lowered text after a line break (``_PAD``: the start of the text is a word
    boundary too), it finds a match one character before each phrase the pattern finds, and
    nowhere else (``says`` and ``saying`` ask nothing else). The regex engine skips ahead to the
    next character that is not a letter, digit or "_" (a space, mostly) and tries the phrases
    there only, instead of at every letter a phrase starts with (most of them): in an agent's
    prose the decision phrases are read in about two thirds of the time."""
    assert re.search(r"\\[A-Z]", pattern.pattern) is None  # lowering \S or \B changes them
    body = pattern.pattern.lower()
    assert body.startswith("\\b(?:") and body.endswith(")\\b")
    groups: dict[str, list[str]] = {}
    for phrase in _branches(body[len("\\b(?:") : -len(")\\b")]):
        assert phrase[:1].isalpha() and phrase[:1].isascii(), phrase  # a letter, said as such
        groups.setdefault(phrase[0], []).append(phrase[1:])
    grouped = "|".join(f"{first}(?:{'|'.join(rest)})" for first, rest in groups.items())
    return re.compile(f"[^\\w](?:{grouped})\\b")


_PAD = "\n"  # what ``_FOLDED`` patterns read before a text: a character that is not \w


def _branches(alternation: str) -> list[str]:
    """The top-level alternatives of a pattern's ``a|b(?:c|d)|e``."""
    out, depth, start = [], 0, 0
    for index, char in enumerate(alternation):
        if char == "(" and alternation[index - 1 : index] != "\\":
            depth += 1
        elif char == ")" and alternation[index - 1 : index] != "\\":
            depth -= 1
        elif char == "|" and depth == 0:
            out.append(alternation[start:index])
            start = index + 1
    return [*out, alternation[start:]]


# The phrase patterns ignore case, and their words are ASCII: in ASCII text (where ignoring
# case folds only ASCII letters, and lowering changes no word or space character) their lowered
# forms find a match in the lowered text (after ``_PAD``) exactly where they find one, one
# character before it, several times faster.
_FOLDED = {pattern: _lowered(pattern) for pattern in (CONSTRAINT, DECISION, NEXT_STEP)}


def says(pattern: re.Pattern[str], text: str) -> bool:
    """Whether ``pattern`` (``CONSTRAINT``, ``DECISION`` or ``NEXT_STEP``) is found in
    ``text``."""
    if text.isascii():
        return _FOLDED[pattern].search(_PAD + text.lower()) is not None
    return pattern.search(text) is not None


def saying(pattern: re.Pattern[str], sentences: list[str]) -> list[str]:
    """The ``sentences`` in which ``pattern`` (as ``says``) is found, in order."""
    flags = said(pattern, sentences)
    return [sentence for sentence, yes in zip(sentences, flags, strict=True) if yes]


def said(pattern: re.Pattern[str], sentences: list[str]) -> list[bool]:
    """Whether ``pattern`` (as ``says``) is found in each of ``sentences``, in order.

    Read from the sentences joined by line breaks, one search per sentence that says it (each
    from the start of the sentence after the one found before), instead of one per sentence: a
    phrase holds no line break, so each match lies within one sentence, and a line break reads
    to the phrase patterns' edges as a sentence's start or end does
    (tests/compressors/test_digest_reading_fast_paths.py: what ``says`` finds in each).
    """
    joined = "\n".join(sentences)
    if not joined.isascii():
        return [says(pattern, s) for s in sentences]
    # (after ``_PAD``, a match starts where its phrase starts in the joined text, one before it)
    lowered, search = _PAD + joined.lower(), _FOLDED[pattern].search
    flags = [False] * len(sentences)
    start = index = 0  # where sentences[index] starts in the joined text
    while (found := search(lowered, start)) is not None:
        while found.start() >= start + len(sentences[index]):  # in a later sentence
            start += len(sentences[index]) + 1
            index += 1
        flags[index] = True  # read on from the next sentence
        start += len(sentences[index]) + 1
        index += 1
    return flags


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCED = re.compile(r"```.*?```", re.DOTALL)


_INLINE_CODE = re.compile(r"`([^`\n]{2,80})`")
_DEFINED = re.compile(
    r"^\s*(?:async\s+)?(?:def|class|function|func|fn|interface|struct|enum|type)\s+"
    r"([A-Za-z_]\w{1,60})",
    re.M,
)
_DOTTED_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(\))")
_CODE_NAME = re.compile(r"^[A-Za-z_][\w.:-]*(?:\(\))?$")
_CODE_PATH = re.compile(r"(?<![\w/.])((?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8})\b")


def code_names(text: str, limit: int = 12) -> list[str]:
    """Code names a person's text gives: `` `spans` `` that hold one name, call or path
    (``Client.request()``, ``max_retries``, ``src/app.py``), functions and classes its fenced
    code defines, dotted calls and file paths in its prose; in order, without duplicates, at most
    ``limit``. A plain word in backticks (`` `pip` ``) is not a code name."""
    found: dict[str, None] = {}
    for span in _INLINE_CODE.findall(text) if "`" in text else ():
        span = span.strip()
        if _CODE_PATH.fullmatch(span) or (
            _CODE_NAME.match(span)
            and (
                any(c in span for c in "._()")
                or (span[:1].islower() and any(c.isupper() for c in span))
            )
        ):
            found.setdefault(span)
    for block in _FENCED.findall(text) if "```" in text else ():
        block_text = block if isinstance(block, str) else " ".join(block)
        for name in _DEFINED.findall(block_text):
            found.setdefault(name)
        for path in _code_paths(block_text):
            found.setdefault(path)
    prose = without_fences(text)
    for name in _dotted_calls(prose):
        found.setdefault(name)
    for path in _code_paths(prose):
        found.setdefault(path)
    return list(found)[:limit]


# A run of what a path's part holds (the pattern's ``[\w.-]``), read in the reversed text: from
# a "/" on, it is the run that ends at the "/" in the text.
_PART_REVERSED = re.compile(r"[\w.-]*")


def _code_paths(text: str) -> list[str]:
    """``_CODE_PATH.findall(text)``, tried only where a match can start.

    A match holds a "/" with a run of word characters, "." and "-" right before it, and starts
    in that run: at its start or after one of its "-" (the one character of the run its
    look-behind lets a match follow). The pattern is tried there only, at the slashes past the
    match before, as ``findall`` goes on (tests/compressors/test_digest_reading_fast_paths.py:
    the same paths), instead of at every position of a long text (its leading look-behind
    makes the regex engine try them all, and each try reads on through the word it stands in:
    a third of a SWE-agent session's reading, whose observations come as user messages).
    """
    at = text.find("/")
    if at < 0:
        return []
    reversed_text, length = text[::-1], len(text)
    found: list[str] = []
    end = 0  # where the last match ends
    while at >= 0:
        after = length - at  # where the run before the "/" starts in the reversed text
        run = _PART_REVERSED.match(reversed_text, after)
        assert run is not None  # (an empty run matches too)
        start = at - (run.end() - after)
        while start < at:  # the run's start, then after each of its "-"
            if start >= end and (match := _CODE_PATH.match(text, start)):
                found.append(match.group(1))
                end = match.end()
                break
            start = text.find("-", start, at) + 1
            if not start:
                break
        at = text.find("/", max(at + 1, end))
    return found


def _dotted_calls(text: str) -> list[str]:
    """``_DOTTED_CALL.findall(text)``, tried only where a match can start.

    A match is a run of word characters and dots right before a "()", that follows no word
    character or dot: so it starts where the run before a "()" starts. The pattern is tried
    there only (``_anchored``; tests/compressors/test_digest_reading_fast_paths.py: the same
    calls as ``findall``), instead of at every position of a user's long message (its leading
    look-behind makes the regex engine try them all).
    """
    starts = []
    at = text.find("()")
    while at >= 0:
        start = at
        while start and (text[start - 1].isalnum() or text[start - 1] in "_."):
            start -= 1  # (a word character of any script, as the pattern's ``\w``)
        starts.append(start)
        at = text.find("()", at + 2)
    return [match.group(1) for match in matches_at(_DOTTED_CALL, text, starts)]


def without_fences(text: str) -> str:
    """``text`` with each fenced code block replaced by a space."""
    return _FENCED.sub(" ", text) if "```" in text else text


def unwrap(text: str) -> str:
    """Hard-wrapped lines joined into paragraphs; list items and blank lines still break."""
    out: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if out and out[-1] and stripped and not _LIST_ITEM.match(line):
            out[-1] += " " + stripped
        else:
            out.append(stripped)
    return "\n".join(out).strip()


def _paragraph_lines(text: str) -> list[list[str]]:
    """The stripped lines of each paragraph ``unwrap`` joins (a blank line: ``[""]``), in order:
    a line goes on the paragraph before it unless that one is blank, or it is blank or a list
    item. For ``paragraphs``, which joins each once, where ``unwrap`` grows it line by line
    (faster for a few short lines, as most messages hold; tests/compressors/
    test_digest_reading_fast_paths.py: the same paragraphs): a tool's output fed back as a
    user message has paragraphs of hundreds of lines."""
    out: list[list[str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if out and out[-1][0] and stripped and not _LIST_ITEM.match(line):
            out[-1].append(stripped)
        else:
            out.append([stripped])
    return out


def list_item(paragraph: str) -> str | None:
    """The text of a Markdown list item (marker removed), or ``None`` for other paragraphs."""
    return _LIST_ITEM.sub("", paragraph).strip() if _LIST_ITEM.match(paragraph) else None


def paragraphs(text: str) -> list[str]:
    """``text``'s paragraphs with hard wraps joined (list items are paragraphs too)."""
    return [" ".join(lines) for lines in _paragraph_lines(text) if lines[0]]


def sentences(text: str) -> list[str]:
    """``text`` split into sentences and list items, fenced code removed, hard wraps joined."""
    return _split(unwrap(without_fences(text)))


def sentences_saying(pattern: re.Pattern[str], text: str) -> list[str]:
    """``saying(pattern, sentences(text))``: the sentences of ``text`` in which ``pattern`` (as
    ``says``) is found.

    A text in which the pattern is found nowhere (hard wraps joined, fenced code removed: what
    ``sentences`` splits) is not split: each sentence is a stretch of that text between
    whitespace, list markers or "#"/">" (none a word character), so where a phrase is found in
    a sentence it is found there too (tests/compressors/test_sentences_saying.py: the same
    sentences). Most of an agent's messages say no decision, and most messages no next step.
    """
    unwrapped = unwrap(without_fences(text))
    return saying(pattern, _split(unwrapped)) if says(pattern, unwrapped) else []


def _split(text: str) -> list[str]:
    """``sentences`` of an unwrapped ``text`` without fenced code."""
    out = []
    for piece in _SENTENCE_END.split(text):
        piece = _LIST_ITEM.sub("", piece).strip().lstrip("#> ").strip()
        if len(piece) >= 8:
            out.append(piece)
    return out


# -- tool output fed back as a user message (ReAct, mini-swe-agent, SWE-agent) -----------------------------

_OBSERVATION = re.compile(
    r"^\s*(?:observation\b|<returncode>|<output>|output:|tool (?:output|result)\b|<tool_response>"
    r"|<function_results>|execution result|exit code:|\[command (?:output|finished))",
    re.I,
)


# SWE-agent (0.x) ends each observation with its shell's status lines and prompt:
# "(Open file: …)\n(Current directory: …)\nbash-$" (some configs add "(Interactive session: …)").
_SHELL_STATUS = re.compile(r"(?:\A|\n)(?:\([A-Z][A-Za-z ]{0,40}: [^\n]*\)[ \t]*\n)+bash-\$\s*\Z")
_STATUS_TAIL = 2000  # characters of a text's end its status lines are looked for in


def is_observation(text: str, *, after_action: bool = False) -> bool:
    """Whether a user-role message is a tool's output fed back as text (ReAct
    ``Observation:``, mini-swe-agent ``<returncode>``/``<output>``), not something a person
    wrote. ``after_action``: the message answers an assistant's text action (a fenced
    command); then a text ending with a shell's status lines and prompt (SWE-agent's
    ``(Current directory: …)`` then ``bash-$``) is one too — its task message ends the same
    way, and stays the user's."""
    if _OBSERVATION.match(text):
        return True
    return after_action and _shell_status(text) is not None


_OPEN_FILE = re.compile(r"\(Open file: ([^\n]*)\)")
_DIRECTORY = re.compile(r"\(Current directory: ([^\n]*)\)")


def open_file(text: str) -> str | None:
    """The file SWE-agent's status lines at the end of ``text`` say is open, relative to the
    current directory they name when it lies below it (``None``: none, or no status lines)."""
    status = _shell_status(text)
    if status is None:
        return None
    found, directory = _OPEN_FILE.search(status.group()), _DIRECTORY.search(status.group())
    name = found.group(1).strip() if found is not None else ""
    if not name or name == "n/a":
        return None
    base = directory.group(1).strip().rstrip("/") + "/" if directory is not None else ""
    return name[len(base) :] if len(base) > 1 and name.startswith(base) else name


def _shell_status(text: str) -> re.Match[str] | None:
    """The status lines and prompt ``text`` ends with (SWE-agent), if any: ``_SHELL_STATUS``
    searched in its last ``_STATUS_TAIL`` characters.

    A match starts at a line feed before a "(" (or at the text's start, before one): the
    pattern is tried there only, from the first on (tests/compressors/test_pattern_rewrites.py:
    the match the search finds), not at each of the 2,000 positions. A session's every
    observation is asked several times (whether it is one, its body, the open file)."""
    if not text.rstrip().endswith("bash-$"):
        return None
    at = max(0, len(text) - _STATUS_TAIL)
    if at == 0 and text.startswith("(") and (match := _SHELL_STATUS.match(text)):
        return match
    while (at := text.find("\n(", at)) >= 0:
        if match := _SHELL_STATUS.match(text, at):
            return match
        at += 1
    return None


_WRAPPER = re.compile(
    r"^\s*(?:observation:|output:|tool (?:output|result):|exit code:\s*-?\d+"
    r"|execution result(?: of \[[^\]\n]*\])?:)\s*"
    r"|</?(?:returncode|output|tool_response|function_results|stdout|stderr)>",
    re.I | re.M,
)


_RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
# What every ``_WRAPPER`` match holds, lowered: a text whose lowered form holds none has no
# wrapper to take off, and is not scanned (the pattern ignores case and opens with ``^`` or
# "<": the regex engine tries it at every position of an observation of thousands of lines).
_WRAPPER_WORDS = (
    "observation:",
    "output:",
    "result:",
    "execution result of [",
    "exit code:",
    "returncode>",
    "output>",
    "tool_response>",
    "results>",
    "stdout>",
    "stderr>",
)


def observation_body(text: str) -> str:
    """An observation's text without its wrapper (``Observation:``, ``<output>`` tags, a
    shell's closing status lines and prompt); a ``<returncode>N</returncode>`` becomes ``[exit code: N]`` so the outcome stays readable."""
    status = _shell_status(text)
    if status is not None:
        text = text[: status.start()]
    if "<returncode>" in text:
        text = _RETURN_CODE.sub(r"[exit code: \1]", text)
    lowered = case_folded(text)  # (``None``: a letter beyond ASCII may match an ASCII one)
    if lowered is not None and not any(word in lowered for word in _WRAPPER_WORDS):
        return text.strip("\n")  # (tests/compressors/test_pattern_rewrites.py)
    return _WRAPPER.sub("", text).strip("\n")
