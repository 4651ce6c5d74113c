"""compactkit.testing: the fakes users test with, and the network switch."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx
import openai
import pytest
import respx

from compactkit.compressors.summary.llm import LLM, OpenAIChatLLM
from compactkit.testing import FunctionLLM, NetworkBlockedError, ScriptedLLM, block_network

MESSAGES = [{"role": "user", "content": "hello"}]


def test_scripted_llm_plays_replies_and_errors_in_order() -> None:
    boom = RuntimeError("down")
    llm = ScriptedLLM(["one", boom])
    assert isinstance(llm, LLM)
    assert llm.complete(MESSAGES) == "one"
    with pytest.raises(RuntimeError, match="down"):
        llm.complete([{"role": "user", "content": "again"}])
    assert llm.calls == [MESSAGES, [{"role": "user", "content": "again"}]]
    llm.assert_complete()


def test_scripted_llm_records_copies() -> None:
    messages = [{"role": "user", "content": "x"}]
    llm = ScriptedLLM(["ok"])
    llm.complete(messages)
    messages[0]["content"] = "changed"
    assert llm.calls[0][0]["content"] == "x"


def test_scripted_llm_complains_when_out_of_replies_or_left_over() -> None:
    llm = ScriptedLLM(["a", "b"])
    llm.complete(MESSAGES)
    with pytest.raises(AssertionError, match="1 unused"):
        llm.assert_complete()
    llm.complete(MESSAGES)
    with pytest.raises(AssertionError, match="ran out of replies at call 3"):
        llm.complete(MESSAGES)
    llm.add("c")
    assert llm.remaining == 1


def test_scripted_llm_async() -> None:
    llm = ScriptedLLM(["async"])
    assert asyncio.run(llm.acomplete(MESSAGES)) == "async"
    assert len(llm.calls) == 1


def test_function_llm_decides_from_the_messages() -> None:
    llm = FunctionLLM(lambda messages: messages[-1]["content"].upper())
    assert isinstance(llm, LLM)
    assert llm.complete(MESSAGES) == "HELLO"
    assert asyncio.run(llm.acomplete([{"role": "user", "content": "abc"}])) == "ABC"
    assert [call[-1]["content"] for call in llm.calls] == ["hello", "abc"]


def test_function_llm_async_function() -> None:
    async def reply(messages: list[dict[str, str]]) -> str:
        await asyncio.sleep(0)
        return str(len(messages))

    llm = FunctionLLM(reply)
    assert asyncio.run(llm.acomplete(MESSAGES)) == "1"
    with pytest.raises(TypeError, match="acomplete"):
        llm.complete(MESSAGES)


def test_function_llm_can_fail() -> None:
    def fail(messages: list[dict[str, str]]) -> str:
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        FunctionLLM(fail).complete(MESSAGES)


# -- block_network -------------------------------------------------------------------------------


def test_block_network_stops_real_calls_sync_and_async() -> None:
    llm = OpenAIChatLLM("gpt-test", api_key="k")  # the default client: no mock in the way
    with block_network():
        with pytest.raises(NetworkBlockedError, match=r"api\.openai\.com"):
            llm.complete(MESSAGES)
        with pytest.raises(NetworkBlockedError):
            asyncio.run(llm.acomplete(MESSAGES))
        with pytest.raises(NetworkBlockedError):
            socket.create_connection(("192.0.2.1", 80), timeout=1)


def test_block_network_is_undone_afterwards() -> None:
    real = socket.socket.connect
    with block_network():
        assert socket.socket.connect is not real
    assert socket.socket.connect is real


def test_block_network_keeps_respx_mocks_working() -> None:
    client = openai.OpenAI(api_key="k", max_retries=0, http_client=httpx.Client())
    body = {"choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "hi"}}]}
    with block_network(), respx.mock:
        respx.post("https://api.openai.com/v1/chat/completions").respond(200, json=body)
        assert OpenAIChatLLM("gpt-test", client=client).complete(MESSAGES) == "hi"


class _Echo(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_block_network_allows_loopback(local_server: str) -> None:
    with block_network():
        assert httpx.get(local_server).text == "ok"
        assert httpx.get(local_server.replace("127.0.0.1", "localhost")).text == "ok"


def test_block_network_allow_list() -> None:
    with block_network(allow=["192.0.2.1"]), pytest.raises(OSError):
        # allowed through to the OS (TEST-NET-1 is unroutable: it fails as a network error)
        socket.create_connection(("192.0.2.1", 9), timeout=0.01)
