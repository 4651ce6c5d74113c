"""The price of tool schemas: the OpenAI cookbook's formula for function definitions (exact for
flat schemas; nested ones priced by their JSON) and why a set of schemas is approximated. It is
separate from ``tokens.py`` because the formula is its own set of rules (``ToolSchemaRules``),
beside the per-message rules the counters hold."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from compactkit.budget.profiles import ToolSchemaRules
from compactkit.items import Tool

NESTED_KEYS = ("properties", "items", "anyOf", "oneOf", "allOf", "$ref")


def schema_tokens(
    rules: ToolSchemaRules, tools: Sequence[Tool], count_text: Callable[[str], int]
) -> int:
    """The cookbook's tool-schema formula for ``tools`` (checked, not empty), counting text
    with ``count_text``."""
    total = 0
    for tool in tools:
        total += rules.func_init
        description = strip_period(tool.description or "")
        total += count_text(f"{tool.name}:{description}")
        properties = (tool.parameters or {}).get("properties") or {}
        if not isinstance(properties, dict):  # not a JSON schema: price its text
            total += count_text(json.dumps(properties, separators=(",", ":"), default=str))
            properties = {}
        if properties:
            total += rules.prop_init
            for key, spec in properties.items():
                spec = spec if isinstance(spec, dict) else {}
                total += rules.prop_key
                if "enum" in spec:
                    total += rules.enum_init
                    enum = spec["enum"]
                    for value in enum if isinstance(enum, list) else [enum]:
                        total += rules.enum_item + count_text(str(value))
                kind = spec.get("type", "")
                pdesc = strip_period(str(spec.get("description", "")))
                total += count_text(f"{key}:{kind}:{pdesc}")
                nested = {k: v for k, v in spec.items() if k in NESTED_KEYS}
                if nested:
                    total += count_text(json.dumps(nested, separators=(",", ":")))
    return total + rules.func_end


def schema_approximation(tools: Sequence[Tool]) -> list[str]:
    """Why the count of ``tools`` (verified rules) is approximate: empty when it is exact."""
    for tool in tools:
        properties = (tool.parameters or {}).get("properties") or {}
        if not isinstance(properties, dict):
            return ["malformed tool schemas are approximated"]
        for spec in properties.values():
            if isinstance(spec, dict) and any(k in NESTED_KEYS for k in spec):
                return ["nested tool schemas are approximated"]
    return []


def strip_period(text: str) -> str:
    return text[:-1] if text.endswith(".") else text
