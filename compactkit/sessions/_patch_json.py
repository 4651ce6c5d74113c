"""The JSON of an append patch (``compactkit.sessions.journal``), written without the generic
encoder: an agent saves after every step, and almost every save is one such patch.

The plain version builds a dict — revision, turn, step, metadata, updated_at, version, maybe
dropped_archive, and ``append``: the new items as ``ITEMS_ADAPTER.dump_python(mode="json")`` —
and hands it to ``json.dumps(ensure_ascii=False, separators=(",", ":"))``: about 16 µs a save
in a tight loop and 50-60 µs inside the agent loop at 10k items, most of it building and walking
the items' dicts and the encoder's set-up. Here:

- the counters are written with ``str(int)``, exactly as ``json.dumps`` writes an int (anything
  else — a bool, a float, ``None`` — goes through the encoder);
- empty metadata is ``{}``; other metadata goes through the encoder, built once;
- ``updated_at`` comes from ``utc_now_iso``: ``datetime.now(timezone.utc).isoformat()`` with the
  date and time formatted once per second;
- the items are ``ITEMS_ADAPTER.dump_json``'s bytes: the same JSON the base holds (``SessionState``
  serialises its items with the same schema), without building dicts first; an item of one of
  the five item classes is written by its own class's serializer, which is what the union's
  serializer picks for it by its ``type`` (2 items: 6.8 -> 4.5 µs in a tight loop; the union
  first finds which member an item is), anything else (a subclass) by the union's, as before.

``append_patch`` is held to the plain version by ``tests/sessions/test_patch_json.py`` (the same
JSON value for any counters, metadata and items; byte for byte for the header).
"""

from __future__ import annotations

import json
import time
from typing import Any

from compactkit.items import (
    ITEM_CLASSES,
    ITEMS_ADAPTER,
    Item,
)

__all__ = ["ENCODER", "append_patch", "items_json", "iso_of_ns", "utc_now_iso"]

ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` without building an encoder
per call: how every patch is written."""

_SERIALIZERS = {kind: kind.__pydantic_serializer__ for kind in ITEM_CLASSES}
"""Each item class's own serializer: the one ``ITEMS_ADAPTER``'s union serializer uses for it."""

_second: list[tuple[int, str]] = [(-1, "")]
"""The last whole second formatted and its text, as one pair: threads saving at once each read
and replace the pair whole, so none reads one second's number with another's text."""


def iso_of_ns(ns: int) -> str:
    """``ns`` (nanoseconds since the epoch, UTC) as ``datetime.isoformat()`` writes it:
    ``YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`` (microseconds left out when they are 0)."""
    seconds, rest = divmod(ns, 1_000_000_000)
    cached, text = _second[0]
    if cached != seconds:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _second[0] = (seconds, text)
    micro = rest // 1000
    return f"{text}.{micro:06d}+00:00" if micro else f"{text}+00:00"


def utc_now_iso() -> str:
    """``datetime.now(timezone.utc).isoformat()``, at a fifth of its cost."""
    return iso_of_ns(time.time_ns())


def append_patch(
    revision: int,
    turn: int,
    step: int,
    metadata: dict[str, Any],
    updated_at: str,
    version: int | None,
    dropped: dict[str, Any] | None,
    items: list[Item],
) -> bytes:
    """The patch ``{"revision", "turn", "step", "metadata", "updated_at", "version",
    ["dropped_archive",] "append"}`` as UTF-8 JSON (see the module docstring); ``updated_at`` is
    an ISO time (``utc_now_iso``: nothing in it that JSON escapes).

    Raises:
        TypeError, ValueError: a value JSON cannot hold (metadata is checked before).
    """
    head = (
        f'{{"revision":{_number(revision)},"turn":{_number(turn)},"step":{_number(step)},'
        f'"metadata":{ENCODER.encode(metadata) if metadata else "{}"},'
        f'"updated_at":"{updated_at}","version":{_number(version)}'
    )
    if dropped is not None:
        head += f',"dropped_archive":{ENCODER.encode(dropped)}'
    return b"".join((head.encode(), b',"append":', items_json(items), b"}"))


def items_json(items: list[Item]) -> bytes:
    """``ITEMS_ADAPTER.dump_json(items)``, byte for byte: each item by its own class's
    serializer when it is one of the five item classes (anything else: the whole list by the
    union's)."""
    parts = []
    for item in items:
        serializer = _SERIALIZERS.get(type(item))
        if serializer is None:
            return ITEMS_ADAPTER.dump_json(items)
        parts.append(serializer.to_json(item))
    return b"[" + b",".join(parts) + b"]"


def _number(value: object) -> str:
    """``value`` as ``json.dumps`` writes it: an exact ``int`` directly, anything else (a bool,
    an int subclass, ``None``) through the encoder."""
    return str(value) if type(value) is int else ENCODER.encode(value)
