"""What ``CompactkitSession`` does to Responses input items on their way in and out of a
compactkit memory, and how ``get_items(limit=N)`` cuts them.

* Exact round-trip: every item is stored with the Responses item it came from
  (``extra[WIRE_KEY]``), and an item compactkit did not change (not masked, not the summary)
  comes back as exactly that item: a role-only ``{"role": "user", "content": "hi"}`` without
  the ``"type": "message"`` the Responses writer would add, an ``output_text`` part with its
  ``logprobs``. Code that compares what it stored with what it reads
  (``OpenAIResponsesCompactionSession`` does) sees what it sent.
* JSON only: an item that is not JSON is refused with ``TypeError`` at ``add_items``, as the
  SDK's sessions refuse it; stored anyway it could not be read back by another process.
* ``limit``: ``latest_items`` cuts the list the way the SDK's sessions do (exactly the latest
  N; the ``Runner`` drops an output whose call was cut) or, opted in, moves the cut back so
  no output is kept without its call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from compactkit.items import Item

__all__ = ["WIRE_KEY", "WireRestorer", "keep_wire", "latest_items", "require_json"]

WIRE_KEY = "__responses_wire__"
"""``extra`` key: the Responses item an item was read from, exactly as it came in."""

_Strip = {"seq", "pinned", "extra", "call_id"}  # what storage may set, and renamed call ids


def require_json(items: Sequence[Any]) -> None:
    """Raise ``TypeError`` naming the first item that is not JSON (the SDK's own check)."""
    for index, item in enumerate(items):
        try:
            json.dumps(item)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"items[{index}] is not JSON ({exc}); a session stores Responses input items, "
                "which are JSON objects: convert it (e.g. item.model_dump(mode='json')) first"
            ) from None


def keep_wire(raw: Any, converted: list[Item]) -> list[Item]:
    """``converted`` (what ``raw`` became) with ``raw`` kept on its item, when it became one
    item that is not a placeholder (those keep their raw form themselves)."""
    if not isinstance(raw, dict) or len(converted) != 1:
        return converted
    item = converted[0]
    extra = getattr(item, "extra", None)  # Reasoning has none: it is carried as it came
    if not hasattr(item, "extra") or (extra and any(k.startswith("__compactkit") for k in extra)):
        return converted
    return [item.model_copy(update={"extra": {**(extra or {}), WIRE_KEY: raw}})]


class WireRestorer:
    """Puts back the exact Responses items that came in, for items compactkit did not change.

    ``restore(items, wire)`` takes the items and their Responses form (one each) and returns
    the wire list with every unchanged item's original in place of its conversion. "Unchanged"
    is checked by reading the original again and comparing what compactkit models (a masked
    output differs); each check is cached per item object, so a read costs O(new items).
    """

    def __init__(self) -> None:
        self._checked: dict[int, tuple[Item, bool]] = {}

    def restore(
        self, items: Sequence[Item], wire: list[Any], read: Callable[[Any], Any]
    ) -> list[Any]:
        if len(items) != len(wire):  # one wire item per item is the Responses writer's rule
            return wire
        if len(self._checked) > 4 * len(items) + 1_000:
            self._checked.clear()
        out = wire
        for index, item in enumerate(items):
            extra = getattr(item, "extra", None)
            raw = extra.get(WIRE_KEY) if extra else None
            if raw is None or not self._unchanged(item, raw, read):
                continue
            if out is wire:
                out = list(wire)
            out[index] = raw
        return out

    def _unchanged(self, item: Item, raw: Any, read: Callable[[Any], Any]) -> bool:
        cached = self._checked.get(id(item))
        if cached is not None and cached[0] is item:
            return cached[1]
        fresh = read(raw)
        same = fresh is not None and fresh.model_dump(exclude=_Strip) == item.model_dump(
            exclude=_Strip
        )
        self._checked[id(item)] = (item, same)
        return same


def latest_items(
    items: Sequence[Any],
    limit: int | None,
    *,
    keep_groups: bool,
    is_summary: Callable[[Any], bool],
) -> list[Any]:
    """The latest ``limit`` items of ``items`` (the summary message, when it leads, among them).

    ``keep_groups=False`` (the SDK's contract): at most ``limit`` items, the summary counted;
    an output whose call was cut is dropped by the ``Runner``. ``keep_groups=True``: the summary
    and the latest ``limit`` items, the cut moved back so that no output is kept without its
    call (nor reasoning without what follows it), so more than ``limit`` may come back.
    """
    if limit is None or limit >= len(items):
        return list(items)
    lead = [item for item in items[:1] if is_summary(item)]
    body = list(items[len(lead) :])
    if not keep_groups:
        if limit == 0:
            return []
        lead = lead[:limit]
        kept = limit - len(lead)
        return [*lead, *(body[len(body) - kept :] if kept else [])]
    cut = max(0, len(body) - limit)
    calls = {_call_id(item): index for index, item in enumerate(body) if _is_call(item)}
    moved = True
    while moved and cut > 0:
        moved = False
        for item in body[cut:]:
            if _is_output(item) and calls.get(_call_id(item), cut) < cut:
                cut = calls[_call_id(item)]
                moved = True
        while cut > 0 and _kind(body[cut - 1]) == "reasoning":
            cut -= 1
    return [*lead, *body[cut:]]


def _kind(item: Any) -> str | None:
    kind = item.get("type") if isinstance(item, dict) else None
    return kind if isinstance(kind, str) else None


def _call_id(item: Any) -> str | None:
    value = item.get("call_id") if isinstance(item, dict) else None
    return value if isinstance(value, str) else None


def _is_call(item: Any) -> bool:
    kind = _kind(item)
    return kind is not None and kind.endswith("_call") and _call_id(item) is not None


def _is_output(item: Any) -> bool:
    kind = _kind(item)
    return kind is not None and kind.endswith("_call_output")
