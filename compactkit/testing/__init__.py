"""Fakes for testing code that uses compactkit, without a model or a network.

* ``ScriptedLLM`` answers from a script (replies or exceptions, first in first out) and records
  every request in ``.calls``; ``assert_complete()`` fails when scripted replies were never used.
* ``FunctionLLM`` lets a function decide each reply from the messages it is sent, so a test can
  inspect exactly what a compressor asked.
* ``block_network()`` makes any real network connection fail loudly while it is active (mocked
  HTTP, such as respx, keeps working because it never opens a socket). Use it in a fixture::

      @pytest.fixture(autouse=True)
      def _no_network():
          with block_network():
              yield

Both fakes implement the ``LLM`` protocol (``complete`` and ``acomplete``).

* ``FakeOpenAI`` is an OpenAI-compatible endpoint in process, for testing agents: it answers
  ``POST /v1/chat/completions`` and ``POST /v1/responses`` from a script (``text``,
  ``tool_call``, ``http_error``, ``overflow`` replies, or a function of the request) through an
  in-memory transport, and ``.client()`` / ``.async_client()`` return real ``openai`` clients
  wired to it. Every request body is kept in ``.requests``.

* ``FakeCompactEndpoint`` is OpenAI's ``POST /v1/responses/compact`` in process (retained user
  messages and one opaque ``compaction`` item, built from the SDK's types), for testing
  ``ProviderCompactor`` and evaluating provider compaction offline.

* ``compactkit.testing.conformance`` is the conformance kit: run the memory and session-store
  contracts against your own backend (see its docstring; it needs pytest only for its pytest
  base classes).
"""

from compactkit._lazy import lazy_exports
from compactkit.testing.fake_openai import (
    FakeOpenAI,
    FakeReply,
    HTTPFault,
    http_error,
    overflow,
    text,
    tool_call,
)
from compactkit.testing.fake_openai import (  # private, but tests import it from here
    _httpx as _httpx,
)
from compactkit.testing.llm import FunctionLLM, ScriptedLLM
from compactkit.testing.network import NetworkBlockedError, block_network

__all__ = [
    "FakeOpenAI",
    "FakeReply",
    "FunctionLLM",
    "HTTPFault",
    "NetworkBlockedError",
    "ScriptedLLM",
    "block_network",
    "http_error",
    "overflow",
    "text",
    "tool_call",
]


# ``FakeCompactEndpoint`` lives with the evals (their offline baseline uses it; documented
# there): reachable here too, loaded on first use so that this package stays light.
__getattr__, __dir__ = lazy_exports(
    globals(), {"FakeCompactEndpoint": "compactkit.evals.fake_compact"}
)
