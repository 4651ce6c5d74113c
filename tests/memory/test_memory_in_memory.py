"""InMemoryMemory against the public memory conformance kit."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.memory import InMemoryMemory
from compactkit.testing.conformance import (
    OPERATIONS,
    MemoryConformance,
    MemoryKit,
    operations_keep_invariants,
)


def in_memory(session_id: str, **options: Any) -> InMemoryMemory:
    return InMemoryMemory(**options)


class TestInMemoryMemory(MemoryConformance):
    recall = True

    @pytest.fixture
    def memory_factory(self) -> Any:
        return in_memory


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.sampled_from(OPERATIONS), max_size=40))
def test_random_operations_keep_the_invariants(ops: list[str]) -> None:
    operations_keep_invariants(MemoryKit(in_memory), ops)
