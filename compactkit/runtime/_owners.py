"""Which memory a prompt was projected for — remembered without keeping the prompt alive.

``Governor.observe_usage(prompt_tokens, projection)`` must find the per-memory counters of the
memory ``projection`` was made for. The plain version (``PlainOwners``) keeps the newest
``capacity`` ``(projection, owner)`` pairs in a list and finds one by identity.

Cost model of ``ProjectionOwners`` (the one the governor uses):

* **Lookup and insert are O(1)**: keyed by ``id(projection)`` in an ordered dict, where the plain
  list is O(capacity) per lookup.
* **No prompt is kept alive.** A strong reference would keep the last ``capacity`` prompts (and
  every item they hold) alive, so each step's prompt would outlive the young generations and the
  garbage collector's full collections, which walk every live object, would come sooner and take
  longer. A weak reference lets a prompt go as soon as the caller drops it.
* **Two maps, not one of pairs**: a tuple per step would be one more long-lived object for the
  collector to track.
* An ``id`` is reused once its projection is freed: the weak reference tells a live entry from a
  stale one, and a re-used id moves to the newest end, so eviction never drops the entry of a
  prompt still being answered.

``tests/runtime/test_owners.py`` checks both versions answer alike for any sequence of steps.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["PlainOwners", "ProjectionOwners"]

Owner = TypeVar("Owner")
CAPACITY = 256  # prompts whose usage may still be reported (one per session in flight)


class ProjectionOwners(Generic[Owner]):
    """The owner of each of the newest ``capacity`` projections, by identity, held weakly."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._refs: OrderedDict[int, weakref.ref[object]] = OrderedDict()
        self._owners: dict[int, Owner] = {}

    def remember(self, projection: object, owner: Owner) -> None:
        """Record that ``projection`` was made for ``owner`` (callers serialise the calls)."""
        key = id(projection)
        self._refs.pop(key, None)
        self._refs[key] = weakref.ref(projection)
        self._owners[key] = owner
        while len(self._refs) > self._capacity:
            del self._owners[self._refs.popitem(last=False)[0]]

    def owner_of(self, projection: object) -> Owner | None:
        """The owner recorded for this very ``projection`` object, or ``None``."""
        key = id(projection)
        ref = self._refs.get(key)
        return self._owners[key] if ref is not None and ref() is projection else None


class PlainOwners(Generic[Owner]):
    """The plain version: the newest ``capacity`` pairs in a list, found by identity."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._pairs: list[tuple[object, Owner]] = []

    def remember(self, projection: object, owner: Owner) -> None:
        """Record that ``projection`` was made for ``owner``."""
        self._pairs = [pair for pair in self._pairs if pair[0] is not projection]
        self._pairs.append((projection, owner))
        del self._pairs[: -self._capacity]

    def owner_of(self, projection: object) -> Owner | None:
        """The owner recorded for this very ``projection`` object, or ``None``."""
        return next((owner for p, owner in self._pairs if p is projection), None)
