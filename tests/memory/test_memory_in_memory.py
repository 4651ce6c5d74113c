"""InMemoryMemory against the memory conformance suite."""

from __future__ import annotations

from typing import Any

import pytest
from memory_conformance import MemoryConformance

from compactkit.memory import InMemoryMemory


class TestInMemoryMemory(MemoryConformance):
    @pytest.fixture
    def memory_factory(self) -> Any:
        return InMemoryMemory
