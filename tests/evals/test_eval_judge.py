"""LLM mode against a mocked OpenAI endpoint: questions, answers, grades and reasons."""

from __future__ import annotations

import json

import httpx
import openai
from eval_support import completion, fake_reply, offline  # noqa: F401  (offline: autouse, no network)

from compactkit import OpenAIChatLLM, SummarizationError
from compactkit.evals import DIMENSIONS, Judge, Suite, SynthSpec, generate, run_suite, summarize
from compactkit.evals.baselines import baseline
from compactkit.evals.judge import questions
from compactkit.testing import ScriptedLLM


def mocked_llm(requests: list[dict[str, object]]) -> OpenAIChatLLM:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        requests.append(body)
        return httpx.Response(200, json=completion(fake_reply(body["messages"])))

    client = openai.OpenAI(
        api_key="sk-test",
        base_url="https://llm.example.test/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handle)),
    )
    return OpenAIChatLLM("judge-model", client=client)


def test_the_judge_grades_every_question_on_six_dimensions() -> None:
    case = generate(SynthSpec(domain="coding", style="typed", size_tokens=8000, seed=1))
    suite = Suite(name="one", cases=(case,))
    requests: list[dict[str, object]] = []
    results = run_suite(suite, {"digest": baseline("digest")}, judge=Judge(mocked_llm(requests)))
    judged = results[0].judge
    assert judged is not None and judged.error is None
    asked = {q.id for q in questions(case.probes)}
    assert {g.id for g in judged.grades} == asked
    assert len(requests) == 2  # one reader call, one judge call
    reader, grader = requests
    assert "<context>" in reader["messages"][1]["content"]  # type: ignore[index]
    assert "Expected:" in grader["messages"][1]["content"]  # type: ignore[index]
    for grade in judged.grades:
        assert set(grade.scores) == set(DIMENSIONS)
        assert grade.reason in ("the answer says unknown", "the answer names files")
    artifact = next(g for g in judged.grades if g.id == "artifact")
    assert artifact.scores["accuracy"] == 4 and artifact.answer == "see the files in context"
    assert results[0].summarizer_calls == 0  # judge calls are not summarizer cost
    report = summarize(results, suite="one", judged=True)
    assert report["judge_prompts"] == {"reader": "reader-v1", "judge": "judge-v1"}
    assert 1 <= report["compressors"]["digest"]["judge"]["overall"]["mean"] <= 4


def test_an_unusable_or_failed_reply_is_recorded_not_raised() -> None:
    case = generate(SynthSpec(size_tokens=3000, seed=2))
    suite = Suite(name="one", cases=(case,))
    for reply in ("I cannot answer in JSON, sorry.", SummarizationError("HTTP 500")):
        results = run_suite(suite, {"none": baseline("none")}, judge=Judge(ScriptedLLM([reply])))
        judged = results[0].judge
        assert judged is not None and judged.overall is None
        assert judged.error
        assert summarize(results, suite="one", judged=True)["compressors"]["none"]["judge"] is None


def test_custom_questions_are_asked_on_their_own() -> None:
    case = generate(SynthSpec(size_tokens=3000, seed=3))
    probe = case.probes[0].model_copy(update={"question": "Which branch?", "id": "branch"})
    asked = questions([probe, *case.probes[1:]])
    assert asked[0].id == "branch" and asked[0].text == "Which branch?"
    assert "constraint" in {q.id for q in asked[1:]} or probe.type != "constraint"


def test_the_reader_and_judge_over_respx() -> None:
    import respx

    case = generate(SynthSpec(domain="support", style="bash", size_tokens=4000, seed=9))
    client = openai.OpenAI(
        api_key="sk-test",
        base_url="https://api.openai.com/v1",
        max_retries=0,
        http_client=httpx.Client(),
    )
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post("https://api.openai.com/v1/chat/completions").mock(
            side_effect=lambda request: httpx.Response(
                200, json=completion(fake_reply(json.loads(request.content)["messages"]))
            )
        )
        judge = Judge(
            OpenAIChatLLM("reader", client=client), OpenAIChatLLM("grader", client=client)
        )
        results = run_suite(
            Suite(name="r", cases=(case,)), {"window": baseline("window")}, judge=judge
        )
    models = [json.loads(call.request.content)["model"] for call in route.calls]
    assert models == ["reader", "grader"]
    assert results[0].judge is not None and results[0].judge.overall is not None
