"""A call's arguments: parsed on a fast path, and which of them name a record.

``arguments_of`` reads a call's JSON arguments with the decoder's scanner when they are one
object with nothing around it (what models send); ``names_record`` tells whether an argument's
name names a record (``reservation_id``, ``order_number``) and no secret. They are separate from
``_extract`` because reading a call's arguments is a concern of its own, below the digest that
uses them.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from compactkit.items import FunctionCall

# Arguments that name a record: reservation_id, order_number, payment_id, sha, ref, slug …
_ID_KEY = re.compile(r"(?:^|_)(?:id|ids|number|num|no|code|ref|sha|uuid|slug|handle)$", re.I)
_SECRET_KEY = re.compile(r"key|token|secret|password|passwd|auth", re.I)


@functools.lru_cache(maxsize=1024)
def names_record(key: str) -> bool:
    """Whether an argument named ``key`` names a record (and no secret), remembered: calls
    repeat the same few argument names."""
    return bool(_ID_KEY.search(key)) and not _SECRET_KEY.search(key)


# The scanner ``json.loads`` runs after its checks and before its trailing-whitespace pass
# (the default decoder's own; typeshed does not declare the attribute).
_SCAN_JSON: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def arguments_of(call: FunctionCall) -> dict[str, object]:
    """``call.parsed_arguments()``, read as ``arguments_text`` reads them."""
    return arguments_text(call.arguments)


def arguments_text(text: str) -> dict[str, object]:
    """A call's JSON arguments as a dict, as ``FunctionCall.parsed_arguments`` reads them (an
    empty dict when they are not a JSON object), scanned directly when they are one JSON object
    with nothing around it (what models send): ``json.loads`` would find no byte-order mark or
    whitespace to skip and nothing after the object, and its wrapper costs more than the scan
    of a short object."""
    if text[:1] == "{":
        try:
            value, end = _SCAN_JSON(text, 0)
        except (StopIteration, ValueError, RecursionError):
            value, end = None, -1
        if end == len(text):
            parsed: dict[str, object] = value  # a dict: the text opened one
            return parsed
    try:
        loaded = json.loads(text)
    except (ValueError, RecursionError):  # nested too deeply to read: not usable either
        return {}
    return loaded if isinstance(loaded, dict) else {}
