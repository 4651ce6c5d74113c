"""What every test shares: no test leaves an event loop behind for a later one to trip on.

pydantic-ai's ``run_sync`` sets an event loop for the thread and keeps it; a later
``asyncio.run`` in the same thread replaces it without closing it, and the garbage collector
then reports the orphaned loop (``ResourceWarning: unclosed event loop``) inside whichever test
happens to run next — an error under ``filterwarnings = error``. Closing the thread's idle loop
after each test keeps every test independent of the ones before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _close_the_threads_idle_event_loop() -> Iterator[None]:
    yield
    policy = asyncio.get_event_loop_policy()
    local = getattr(policy, "_local", None)  # the default policy's per-thread slot
    loop = getattr(local, "_loop", None)
    if isinstance(loop, asyncio.AbstractEventLoop) and not loop.is_running():
        if not loop.is_closed():
            loop.close()
        asyncio.set_event_loop(None)
