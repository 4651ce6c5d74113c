"""The profiles compactkit ships, built without running pydantic's validators.

``profiles.toml`` is compactkit's own file: every table in it is valid (the test suite
validates each one and checks that ``shipped`` builds the very same profile: equal fields of
the same types, the same fields set). Validating the 51 tables in every process would build
the validators of ``ModelProfile`` and its parts (about 10 ms of a fresh process's first call);
``shipped`` does what that validation does to valid data instead: nested tables become their
models and integers in float fields become floats. A table it cannot vouch for (a key the
model does not have, a required field missing, inconsistent numbers) goes through the
validating constructor, which names the problem as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import NoneType, UnionType
from typing import Any, TypeVar, Union, cast, get_args, get_origin

from compactkit.budget.profile import BudgetPolicy, ModelProfile, _Frozen, inconsistency

__all__ = ["shipped", "shipped_default_policy"]

_Model = TypeVar("_Model", bound=_Frozen)


def shipped(cls: type[_Model], data: Mapping[str, Any]) -> _Model:
    """``cls(**data)`` for a valid table of compactkit's own ``profiles.toml``, unvalidated."""
    made = _made(cls, data)
    return made if made is not None else cls(**data)  # (the latter raises, naming the problem)


def _made(cls: type[_Model], data: Mapping[str, Any]) -> _Model | None:
    """What validating ``data`` makes, or ``None`` when it may not be valid."""
    fields = cls.model_fields
    nested, floats = _shape(cls)
    if not data.keys() <= fields.keys() or any(
        field.is_required() and name not in data for name, field in fields.items()
    ):
        return None
    values: dict[str, Any] = {}
    for name, value in data.items():
        model = nested.get(name)
        if model is not None and isinstance(value, dict):
            value = _made(model, value)
            if value is None:
                return None
        elif name in floats and type(value) is int:
            value = float(value)
        values[name] = value
    made = cast(_Model, cls.model_construct(**values))  # (mypy reads its Self as _Frozen)
    problem = inconsistency(made) if isinstance(made, ModelProfile) else None
    return made if problem is None else None


def shipped_default_policy() -> BudgetPolicy:
    """``BudgetPolicy()``: its defaults are valid, so nothing needs validating."""
    return BudgetPolicy.model_construct()


@cache
def _shape(cls: type[_Frozen]) -> tuple[dict[str, type[_Frozen]], frozenset[str]]:
    """``cls``'s fields that hold a nested model, and those whose only type is ``float``."""
    nested: dict[str, type[_Frozen]] = {}
    floats = set()
    for name, field in cls.model_fields.items():
        kinds = [
            kind
            for kind in (
                get_args(field.annotation)
                if get_origin(field.annotation) in (Union, UnionType)
                else (field.annotation,)
            )
            if kind is not NoneType
        ]
        if len(kinds) == 1 and isinstance(kinds[0], type) and issubclass(kinds[0], _Frozen):
            nested[name] = kinds[0]
        elif kinds == [float]:
            floats.add(name)
    return nested, frozenset(floats)
