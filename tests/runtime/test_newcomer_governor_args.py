"""``Governor.step`` names a wrong ``instructions=`` or ``tools=`` (and says how to convert
provider tool dicts) before counting anything; the memory is untouched."""

from __future__ import annotations

import pytest

from compactkit import ConfigError, Governor, InMemoryMemory


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"instructions": 123}, "instructions must be"),
        ({"instructions": [{"role": "system", "content": "hi"}]}, "instructions must be messages"),
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools_from_chat"),
        ({"tools": "read_file"}, "tools must be a list of Tools"),
    ],
)
def test_bad_arguments_are_named(arguments: dict[str, object], match: str) -> None:
    governor = Governor.for_model("gpt-4o")
    memory = InMemoryMemory()
    memory.add_user_input("hello")
    before = memory.snapshot()
    with pytest.raises(ConfigError, match=match):
        governor.step(memory, **arguments)  # type: ignore[arg-type]
    assert memory.snapshot() == before
