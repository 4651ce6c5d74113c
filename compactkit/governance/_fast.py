"""The projection's performance tricks, each behind a name, with its cost model and the plain
version it must equal (``tests/governance/test_fast_paths.py`` checks each pair with
hypothesis). Read the plain version to know what a trick computes.

* ``masked_outputs`` — which bulky outputs stay masked, their call ids and their savings, from
  slices of the running totals (``Sums``) instead of a Python step per masked output.
* ``swapped`` — a group's items with some replaced (masked, cut), looked up in a map keyed by
  ``id(original)`` instead of comparing each item with every replacement.
* ``with_cached_prefix`` — a ``Projection`` with its report's ``cached_prefix_tokens`` set,
  built directly instead of through ``dataclasses.replace``.
* ``extended`` — the previous prompt with appended items (cache-aware mode, every turn), built
  directly likewise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from compactkit.governance._prompt import Projection, ProjectionReport
from compactkit.governance._sums import Mask, Sums
from compactkit.items import Item

__all__ = [
    "masked_outputs",
    "masked_outputs_plainly",
    "swap_map",
    "swapped",
    "swapped_plainly",
    "extended",
    "extended_plainly",
    "with_cached_prefix",
    "with_cached_prefix_plainly",
]


def masked_outputs(
    sums: Sums,
    low: int,
    high: int,
    whole: Sequence[tuple[int, int]],
    ahead: Sequence[Mask],
    tail: Sequence[Mask],
) -> tuple[list[str], int, int]:
    """The outputs that stay masked: the window's masks ``[low, high)`` of ``sums`` outside the
    ranges sent ``whole`` (ascending, disjoint), those ``ahead`` of the window and those of the
    open ``tail``. Returns their call ids (ahead, window, tail; oldest first), their number and
    the tokens their placeholders save.

    Cost: O(len(whole) + len(ahead) + len(tail)) Python steps; the window's call ids are copied
    as list slices (in C), their count and savings are differences of running totals. The plain
    version takes a Python step per masked output of the window, which on a long history with
    many masked outputs is most of a turn's time.
    """
    mask_ids, running = sums.mask_ids, sums.saved
    ids = [mask.original.call_id for mask in ahead]
    count = len(ahead) + len(tail) + high - low
    saved = running[high] - running[low]
    at = low
    for a, b in whole:
        ids += mask_ids[at:a]
        count -= b - a
        saved -= running[b] - running[a]
        at = b
    ids += mask_ids[at:high]
    for mask in ahead:
        saved += mask.saving
    for mask in tail:
        saved += mask.saving
        ids.append(mask.original.call_id)
    return ids, count, saved


def masked_outputs_plainly(
    sums: Sums,
    low: int,
    high: int,
    whole: Sequence[tuple[int, int]],
    ahead: Sequence[Mask],
    tail: Sequence[Mask],
) -> tuple[list[str], int, int]:
    """``masked_outputs`` one mask at a time (the reference it must equal)."""
    sent_whole = {k for a, b in whole for k in range(a, b)}
    window = [sums.masks[k] for k in range(low, high) if k not in sent_whole]
    masked = [*ahead, *window, *tail]
    return [m.original.call_id for m in masked], len(masked), sum(m.saving for m in masked)


def swap_map(pairs: Iterable[tuple[Item, Item]]) -> dict[int, Item]:
    """``id(original) -> replacement`` for ``swapped``. The originals must stay alive while
    the map is used (they do: the snapshot holds them), so an id names one object."""
    return {id(original): replacement for original, replacement in pairs}


def swapped(items: Iterable[Item], swap: Mapping[int, Item]) -> list[Item]:
    """``items`` with each one ``swap`` replaces replaced.

    Cost: one dict lookup per item (items are pydantic models: hashing or comparing them by
    value would cost a walk of their fields; their identity is what is meant).
    """
    return [swap.get(id(item), item) for item in items]


def swapped_plainly(items: Iterable[Item], pairs: Sequence[tuple[Item, Item]]) -> list[Item]:
    """``swapped`` by comparing each item with every original (the reference)."""
    return [next((new for old, new in pairs if old is item), item) for item in items]


def with_cached_prefix(projection: Projection, tokens: int) -> Projection:
    """``projection`` with ``report.cached_prefix_tokens = tokens``.

    Cost: two constructor calls. ``dataclasses.replace`` (the plain version) inspects the
    fields of each dataclass on every call, which costs more than a cache-aware turn's whole
    fill on a short prompt.
    """
    report = projection.report
    return Projection(
        items=projection.items,
        tokens=projection.tokens,
        budget=projection.budget,
        report=ProjectionReport(**{**vars(report), "cached_prefix_tokens": tokens}),
    )


def with_cached_prefix_plainly(projection: Projection, tokens: int) -> Projection:
    """``with_cached_prefix`` with ``dataclasses.replace`` (the reference)."""
    report = dataclasses.replace(projection.report, cached_prefix_tokens=tokens)
    return dataclasses.replace(projection, report=report)


def extended(
    prompt: Projection,
    items: Sequence[Item],
    tokens: int,
    budget: int,
    added: int,
    notes: tuple[str, ...],
) -> Projection:
    """``prompt`` with ``items``, ``tokens`` and ``budget`` in place of its own, ``added`` more
    items kept and ``notes`` as its report's notes.

    Cost: two constructor calls, as ``with_cached_prefix`` (a cache-aware turn builds one).
    """
    report = prompt.report
    return Projection(
        items=items,
        tokens=tokens,
        budget=budget,
        report=ProjectionReport(**{**vars(report), "kept": report.kept + added, "notes": notes}),
    )


def extended_plainly(
    prompt: Projection,
    items: Sequence[Item],
    tokens: int,
    budget: int,
    added: int,
    notes: tuple[str, ...],
) -> Projection:
    """``extended`` with ``dataclasses.replace`` (the reference)."""
    report = dataclasses.replace(prompt.report, kept=prompt.report.kept + added, notes=notes)
    return dataclasses.replace(prompt, items=items, tokens=tokens, budget=budget, report=report)
