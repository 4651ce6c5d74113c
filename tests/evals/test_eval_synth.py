"""The synthetic generator: deterministic, sized, and every planted fact is labelled and real."""

from __future__ import annotations

import json

import pytest
from eval_support import offline  # noqa: F401  (autouse: no network)
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import FunctionCall, Message, counter_for
from compactkit.evals import (
    DOMAINS,
    STYLES,
    ArtifactProbe,
    ConstraintProbe,
    ContinuationProbe,
    DecisionProbe,
    RecallProbe,
    SynthSpec,
    ToolStateProbe,
    UpdateProbe,
    generate,
)
from compactkit.evals.scoring import context_lines, normalize, score_probes
from compactkit.formats import parse_transcript


def transcript(spec: SynthSpec):  # type: ignore[no-untyped-def]
    case = generate(spec)
    return case, parse_transcript(json.dumps(case.transcript), format=spec.format)


def test_same_spec_same_bytes_and_another_seed_another_session() -> None:
    spec = SynthSpec(domain="data", style="bash", size_tokens=6000, seed=3)
    assert generate(spec).model_dump_json() == generate(spec).model_dump_json()
    other = generate(spec.model_copy(update={"seed": 4}))
    assert other.transcript != generate(spec).transcript


@settings(max_examples=12, deadline=None)
@given(
    domain=st.sampled_from(DOMAINS),
    style=st.sampled_from(STYLES),
    seed=st.integers(0, 10_000),
    size=st.integers(2_000, 12_000),
)
def test_every_probe_is_a_fact_of_the_uncompressed_transcript(
    domain: str, style: str, seed: int, size: int
) -> None:
    spec = SynthSpec(domain=domain, style=style, size_tokens=size, seed=seed)  # type: ignore[arg-type]
    case, parsed = transcript(spec)
    tokens = counter_for(case.model).count(parsed.items, tools=parsed.tools).tokens
    assert 0.85 * size <= tokens <= 1.5 * size + 800
    # The whole transcript keeps every planted fact: that is what makes retention measurable.
    assert all(s.kept for s in score_probes(case.probes, parsed.items))
    types = {p.type for p in case.probes}
    assert {"constraint", "artifact", "continuation"} <= types
    ids = {p.call_id for p in case.probes if isinstance(p, ToolStateProbe)}
    assert len(ids) == (0 if style == "react" else 1)


def test_a_larger_session_plants_every_class() -> None:
    case, _ = transcript(SynthSpec(domain="coding", style="typed", size_tokens=40_000, seed=1))
    kinds = {type(p) for p in case.probes}
    assert kinds == {
        ConstraintProbe,
        RecallProbe,
        ArtifactProbe,
        DecisionProbe,
        ContinuationProbe,
        UpdateProbe,
        ToolStateProbe,
    }
    recall = {p.kind for p in case.probes if isinstance(p, RecallProbe)}
    assert recall == {"error", "identifier", "number"}
    assert any(p.dead_end for p in case.probes if isinstance(p, DecisionProbe))
    actions = {p.action for p in case.probes if isinstance(p, ArtifactProbe)}
    assert {"read", "modified", "created"} <= actions


def test_artifact_labels_come_from_the_tool_calls() -> None:
    case, parsed = transcript(SynthSpec(domain="coding", style="typed", size_tokens=20_000, seed=5))
    touched: dict[str, set[str]] = {}
    for item in parsed.items:
        if isinstance(item, FunctionCall) and "path" in item.parsed_arguments():
            touched.setdefault(item.parsed_arguments()["path"], set()).add(item.name)
    labelled = {p.path: p.action for p in case.probes if isinstance(p, ArtifactProbe)}
    file_tools = {"read_file", "write_file", "edit_file", "delete_file"}
    assert set(labelled) == {p for p, tools in touched.items() if tools & file_tools}
    for path, action in labelled.items():
        tools = touched[path] & file_tools
        if action == "read":
            assert tools == {"read_file"}
        elif action == "created":
            assert "write_file" in tools
        elif action == "modified":
            assert "edit_file" in tools and "write_file" not in tools


@pytest.mark.parametrize("style", STYLES)
def test_each_style_looks_like_its_agents(style: str) -> None:
    case, parsed = transcript(SynthSpec(domain="coding", style=style, size_tokens=20_000, seed=2))  # type: ignore[arg-type]
    calls = [i for i in parsed.items if isinstance(i, FunctionCall)]
    names = {c.name for c in calls}
    text = "\n".join(context_lines(parsed.items))
    if style == "typed":
        assert {"read_file", "edit_file", "run_tests"} <= names
    elif style == "bash":
        assert names == {"bash"}
        assert "<<'" in text and ("sed -i" in text or "apply_patch" in text)
    elif style == "editor":
        assert names == {"str_replace_editor", "bash"}
    else:
        assert not calls and not parsed.tools
        assert "Action Input:" in text and "Observation:" in text
    if style != "react":  # several calls in one assistant turn
        chat = case.transcript if isinstance(case.transcript, list) else case.transcript["messages"]
        assert any(len(m.get("tool_calls") or []) > 1 for m in chat)


def test_formats_non_ascii_and_a_huge_single_output() -> None:
    for fmt in ("chat", "responses", "anthropic"):
        case, parsed = transcript(
            SynthSpec(domain="support", style="typed", size_tokens=30_000, seed=7, format=fmt)  # type: ignore[arg-type]
        )
        assert case.format == fmt
        assert any(not line.isascii() for line in context_lines(parsed.items))
    counter = counter_for("gpt-4o")
    biggest = max(counter.count_item(i) for i in parsed.items)
    assert biggest > 0.04 * 30_000
    users = [i for i in parsed.items if isinstance(i, Message) and i.role == "user"]
    constraints = [p.text for p in case.probes if isinstance(p, ConstraintProbe)]
    assert all(any(normalize(c) in normalize(u.text) for u in users) for c in constraints)


def test_sizes_reach_the_big_end() -> None:
    case, parsed = transcript(
        SynthSpec(domain="coding", style="editor", size_tokens=300_000, seed=1)
    )
    tokens = counter_for("gpt-4o").count(parsed.items, tools=parsed.tools).tokens
    assert 285_000 <= tokens <= 330_000
    assert sum(isinstance(p, ArtifactProbe) for p in case.probes) > 30
    # Filler never mentions a planted fact: the whole transcript still answers every probe.
    assert [s.probe for s in score_probes(case.probes, parsed.items) if not s.kept] == []
