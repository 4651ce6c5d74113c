"""A run asks whether the agent's store leases and the session's memory is fenced once per
object (``compactkit.runtime._run.Conforms``): the answer is ``isinstance``'s, for any object."""

from __future__ import annotations

import gc
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.runtime._run import Conforms
from compactkit.sessions.lease import FencedMemory, LeasingStore

METHODS = ("acquire", "release", "fence", "load")


def _method(self: object, *args: Any, **kwargs: Any) -> None:
    return None


def _make(
    kind: str, on_class: frozenset[str], nulled: frozenset[str], on_instance: frozenset[str]
) -> object:
    """An object whose class defines ``on_class`` (``nulled`` of them as ``None``), with
    ``on_instance`` set on the instance; or a proxy forwarding to such an object; or one
    without weak references; or a plain value."""
    body: dict[str, Any] = {name: (None if name in nulled else _method) for name in on_class}
    if kind == "slots":
        body["__slots__"] = ()
    target_class = type("Target", (), body)
    target = target_class()
    if kind != "slots":
        for name in on_instance:
            setattr(target, name, lambda *a, **k: None)
    if kind == "proxy":  # one proxy class, conforming or not by what it wraps
        return Proxy(target)
    if kind == "value":
        return sorted(on_class)  # a list: no weak references
    return target


class Proxy:
    def __init__(self, target: object) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


NAMES = st.frozensets(st.sampled_from(METHODS))
OBJECTS = st.builds(
    _make, st.sampled_from(["plain", "proxy", "slots", "value"]), NAMES, NAMES, NAMES
)


@settings(deadline=None)
@given(objects=st.lists(OBJECTS, min_size=1, max_size=12), order=st.randoms())
def test_the_answer_kept_per_object_is_isinstance(objects: list[object], order: Any) -> None:
    checks = [(Conforms(LeasingStore), LeasingStore), (Conforms(FencedMemory), FencedMemory)]
    asked = objects + order.sample(objects, len(objects))  # each object asked again, later
    for obj in asked:
        for conforms, protocol in checks:
            assert conforms(obj) is isinstance(obj, protocol)


def test_an_answer_goes_with_its_object() -> None:
    conforms = Conforms(LeasingStore)
    store = Proxy(_make("plain", frozenset({"acquire", "release"}), frozenset(), frozenset()))
    assert conforms(store)
    assert len(conforms._seen) == 1
    del store
    gc.collect()
    assert not conforms._seen  # a later object at the same address is asked afresh
    other = Proxy(_make("plain", frozenset(), frozenset(), frozenset()))
    assert not conforms(other)
