"""``FakeCompactEndpoint``: OpenAI's ``POST /responses/compact``, in process, for tests and evals.

It answers as the API documents: the input's user messages, then one ``compaction`` item whose
``encrypted_content`` is opaque (a digest of the input, sized like a real one), with ``usage``.
Nothing in it can be read back, which is the point: an eval of provider compaction scores only
what stays readable (the retained user messages). The answer is built from the ``openai``
package's own types (``CompactedResponse``, ``ResponseCompactionItem``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from typing import Any

__all__ = ["FakeCompactEndpoint"]


class FakeCompactEndpoint:
    """An in-process stand-in for ``client.responses.compact`` (OpenAI's Responses API).

    ``client()`` returns an ``openai.OpenAI`` client whose requests it answers; ``requests``
    holds every request body, in order.

    Args:
        ratio: The size of the opaque content as a share of the input's characters.
    """

    def __init__(self, *, ratio: float = 0.1) -> None:
        self.ratio = ratio
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def handle(self, request: Any) -> Any:
        """Answer one HTTP request (the mock transport's handler)."""
        import httpx2
        from openai.types.responses import CompactedResponse, ResponseCompactionItem, ResponseUsage
        from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

        body = json.loads(request.content or b"{}")
        with self._lock:
            self.requests.append(body)
            number = len(self.requests)
        if not request.url.path.endswith("/responses/compact"):
            return httpx2.Response(404, json={"error": {"message": f"no route {request.url.path}"}})
        inputs = body.get("input") or []
        text = json.dumps(inputs, sort_keys=True)
        seed = hashlib.sha256(text.encode()).digest()
        size = max(64, int(len(text) * self.ratio))
        opaque = base64.b64encode((seed * (size // len(seed) + 1))[:size]).decode()
        item = ResponseCompactionItem(
            id=f"cmp_fake_{number}", type="compaction", encrypted_content=opaque
        )
        tokens_in = len(text) // 4
        answer = CompactedResponse(
            id=f"resp_cmp_fake_{number}",
            created_at=1_770_000_000,
            object="response.compaction",
            output=[item],
            usage=ResponseUsage(
                input_tokens=tokens_in,
                input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
                output_tokens=size // 4,
                output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
                total_tokens=tokens_in + size // 4,
            ),
        ).model_dump(mode="json", exclude_none=True)
        retained = [  # "a list of all user messages, followed by a single compaction item"
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": _text(i.get("content"))}],
            }
            for i in inputs
            if isinstance(i, dict) and i.get("role") == "user"
        ]
        answer["output"] = [*retained, *answer["output"]]
        return httpx2.Response(200, json=answer)

    def client(self) -> Any:
        """An ``openai.OpenAI`` client answered by this endpoint (no network, no retries)."""
        import httpx2
        import openai

        return openai.OpenAI(
            api_key="sk-fake",
            base_url="http://fake-openai.invalid/v1",
            http_client=httpx2.Client(transport=httpx2.MockTransport(self.handle)),
            max_retries=0,
        )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
