"""``one_store_init`` (the classes the governor builds on every call store their field dict in
one step) builds the very instance the generated frozen-dataclass ``__init__`` builds: same
fields in the same order, equal, same ``repr`` and hash, frozen, same signature and errors."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.governance._frozen import one_store_init
from compactkit.governance._prompt import Projection, ProjectionReport
from compactkit.governance.triggers import PolicyState

CLASSES = [PolicyState, Projection, ProjectionReport]
VALUE = st.one_of(
    st.none(), st.integers(-5, 10**6), st.booleans(), st.text(max_size=5), st.tuples(st.text())
)


def _reference(cls: type) -> type:
    """``cls`` as ``@dataclass(frozen=True)`` builds it: the same fields, the generated init."""
    fields = [
        (field.name, field.type, dataclasses.field(default=field.default))
        for field in dataclasses.fields(cls)
    ]
    return dataclasses.make_dataclass(cls.__name__, fields, frozen=True)


REFERENCES = {cls: _reference(cls) for cls in CLASSES}


@settings(deadline=None, max_examples=300)
@given(
    cls=st.sampled_from(CLASSES),
    values=st.lists(VALUE, min_size=9, max_size=9),
    given_count=st.integers(0, 9),
    keywords=st.booleans(),
)
def test_one_store_builds_what_the_generated_init_builds(
    cls: type, values: list[Any], given_count: int, keywords: bool
) -> None:
    names = [field.name for field in dataclasses.fields(cls)]
    required = sum(field.default is dataclasses.MISSING for field in dataclasses.fields(cls))
    count = max(required, min(given_count, len(names)))
    arguments = values[:count]
    reference = REFERENCES[cls]
    if keywords:
        ours = cls(**dict(zip(names, arguments, strict=False)))
        theirs = reference(**dict(zip(names, arguments, strict=False)))
    else:
        ours, theirs = cls(*arguments), reference(*arguments)
    assert list(vars(ours).items()) == list(vars(theirs).items())  # the fields, in order
    assert repr(ours) == repr(theirs)
    assert ours == cls(**vars(theirs)) and hash(ours) == hash(cls(**vars(theirs)))
    assert dataclasses.replace(ours) == ours
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours.tokens = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", CLASSES)
def test_the_same_signature_and_errors(cls: type) -> None:
    reference = REFERENCES[cls]
    assert str(inspect.signature(cls)) == str(inspect.signature(reference))
    for call in (lambda c: c(), lambda c: c(*range(12)), lambda c: c(1, 2, 3, 4, unknown=1)):
        with pytest.raises(TypeError):
            call(reference)
        with pytest.raises(TypeError):
            call(cls)


def test_a_dataclass_it_does_not_handle_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Listed:
        items: list[int] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="not a plain frozen dataclass"):
        one_store_init(Listed)
