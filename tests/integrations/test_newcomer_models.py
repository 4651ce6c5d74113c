"""The model as a LangChain or pydantic-ai user already has it: the chat model object the agent
is built with, or the framework's ``provider:model`` string."""

from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from compactkit import ConfigError, ModelProfile
from compactkit.budget import ProfileRegistry, budget_for
from compactkit.integrations import CompactkitCapability, CompactkitMiddleware


def _budget(integration: CompactkitMiddleware | CompactkitCapability) -> int:
    governors = (
        integration.governors
        if isinstance(integration, CompactkitMiddleware)
        else integration.history.governors
    )
    return governors.projecting.projector.budget


def test_middleware_takes_the_chat_model_or_its_provider_spelling() -> None:
    expected = budget_for("gpt-4o-mini").usable_input
    llm = ChatOpenAI(model="gpt-4o-mini", api_key="sk-test")
    assert _budget(CompactkitMiddleware(llm)) == expected
    assert _budget(CompactkitMiddleware("openai:gpt-4o-mini")) == expected


def test_capability_takes_the_pydantic_ai_model_or_its_provider_spelling() -> None:
    expected = budget_for("gpt-4o").usable_input
    model = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(api_key="sk-test"))
    assert _budget(CompactkitCapability(model)) == expected
    assert _budget(CompactkitCapability("openai:gpt-4o")) == expected


def test_an_object_without_a_model_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="chat model object that carries one, got object"):
        CompactkitMiddleware(object())  # type: ignore[arg-type]


def test_a_colon_in_a_registered_name_still_matches_whole() -> None:
    registry = ProfileRegistry(
        [
            ModelProfile(
                name="32b", context_window=8_000, max_output=1_000, chars_per_token=3, source="t"
            ),
            ModelProfile(
                name="qwen3:32b",
                context_window=40_000,
                max_output=1_000,
                chars_per_token=3,
                source="t",
            ),
        ]
    )
    assert registry.get("qwen3:32b").context_window == 40_000
    assert registry.get("ollama:32b").context_window == 8_000  # the fallback after the colon
