"""``one_store_init``: a frozen dataclass built by one store of its field dict.

A frozen dataclass's generated ``__init__`` stores each field through ``object.__setattr__``
(its own ``__setattr__`` refuses): a call of that slot wrapper per field. The governor builds a
few per model call (``PolicyState``, ``Projection``, ``ProjectionReport``), and on the usual
call, which compacts nothing, those builds were about 2 % of the Python it runs (the encoder
aside). ``one_store_init`` gives the class an ``__init__`` with the same parameters (the fields,
in order, with their defaults) that stores the whole field dict at once. The instance is the
same: its fields in the same order, equal, same ``repr`` and hash, still frozen. Held to the
generated ``__init__`` by tests/governance/test_frozen_init.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["one_store_init"]

_T = TypeVar("_T")


def one_store_init(cls: type[_T]) -> type[_T]:
    """Give the frozen dataclass ``cls`` an ``__init__`` storing its field dict in one step.

    Only for the plain case: every field in ``__init__``, positional, with no default factory,
    and no ``__post_init__`` (anything else keeps the generated ``__init__``: an error here).
    """
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    plain = all(
        field.init and not field.kw_only and field.default_factory is dataclasses.MISSING
        for field in fields
    )
    if not plain or hasattr(cls, "__post_init__"):
        raise TypeError(f"one_store_init: {cls.__name__} is not a plain frozen dataclass")
    generated: Any = cls.__init__
    defaults = {
        f"_default_{field.name}": field.default
        for field in fields
        if field.default is not dataclasses.MISSING
    }
    parameters = ", ".join(
        field.name
        if field.default is dataclasses.MISSING
        else f"{field.name}=_default_{field.name}"
        for field in fields
    )
    values = ", ".join(f"{field.name!r}: {field.name}" for field in fields)
    namespace: dict[str, Any] = {"_store": object.__setattr__, **defaults}
    source = f"def __init__(self, {parameters}):\n    _store(self, '__dict__', {{{values}}})\n"
    exec(source, namespace)  # (as dataclasses builds the generated one)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(generated.__annotations__)
    init.__doc__ = generated.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
