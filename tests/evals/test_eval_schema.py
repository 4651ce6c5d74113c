"""Suite files: valid ones load; a malformed one is a SuiteFormatError naming line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_support import offline  # noqa: F401  (autouse: no network)

from compactkit import MemorySnapshot
from compactkit.errors import FormatError
from compactkit.evals import (
    Case,
    ConstraintProbe,
    SuiteFormatError,
    SynthSpec,
    dump_cases,
    generate,
    load_suite,
    score_probes,
)

CHAT = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Never delete the backups. Rotate the logs."},
    {"role": "assistant", "content": "Done."},
]


def case(**overrides: object) -> dict[str, object]:
    value: dict[str, object] = {
        "id": "c1",
        "transcript": CHAT,
        "probes": [{"type": "constraint", "text": "Never delete the backups."}],
    }
    value.update(overrides)
    return value


def write_jsonl(path: Path, *entries: object) -> Path:
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n", encoding="utf-8")
    return path


def test_jsonl_and_yaml_suites_load(tmp_path: Path) -> None:
    suite = load_suite(write_jsonl(tmp_path / "s.jsonl", case(), case(id="c2")))
    assert [c.id for c in suite.cases] == ["c1", "c2"]
    assert suite.cases[0].probes == (ConstraintProbe(text="Never delete the backups."),)
    assert len(suite.transcript(suite.cases[0]).items) == 3

    (tmp_path / "s.yaml").write_text(
        "schema_version: 1\nname: mine\ncases:\n"
        "  - id: y1\n    transcript_file: t.json\n"
        "    probes:\n      - {type: recall, fact: Rotate the logs., kind: other}\n",
        encoding="utf-8",
    )
    (tmp_path / "t.json").write_text(json.dumps(CHAT), encoding="utf-8")
    yaml_suite = load_suite(tmp_path / "s.yaml")
    assert yaml_suite.name == "mine"
    assert yaml_suite.transcript(yaml_suite.cases[0]).items[1].text.startswith("Never")


def test_a_directory_is_every_suite_file_in_it(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", case(id="a"))
    write_jsonl(tmp_path / "b.jsonl", case(id="b"))
    assert [c.id for c in load_suite(tmp_path).cases] == ["a", "b"]


def test_generated_entries_are_expanded(tmp_path: Path) -> None:
    spec = {"domain": "support", "style": "react", "size_tokens": 3000, "seed": 4}
    suite = load_suite(write_jsonl(tmp_path / "s.jsonl", {"generate": spec}))
    assert suite.cases == (generate(SynthSpec(**spec)),)  # type: ignore[arg-type]


def test_cases_written_by_dump_cases_read_back(tmp_path: Path) -> None:
    cases = [generate(SynthSpec(size_tokens=3000, seed=s)) for s in (1, 2)]
    dump_cases(cases, tmp_path / "out.jsonl")
    assert list(load_suite(tmp_path / "out.jsonl").cases) == cases


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        (case(probes=[{"type": "constraint"}]), "probes[0].text", "Field required"),
        (case(probes=[{"type": "guess", "text": "x"}]), "probes[0]", "does not match"),
        (case(probes=[]), "probes", "at least 1"),
        (case(transcript=None), "", "exactly one of"),
        (case(target_tokens=0), "target_tokens", "greater than 0"),
        (case(schema_version=2), "schema_version", "1"),
        ({"generate": {"domain": "law"}}, "generate.domain", "coding"),
        ({"generate": {}, "id": "x"}, "id", "only 'generate:'"),
    ],
)
def test_a_bad_jsonl_case_names_the_line_and_field(
    tmp_path: Path, entry: object, field: str, words: str
) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", case(id="fine"), entry)
    with pytest.raises(SuiteFormatError) as info:
        load_suite(path)
    error = info.value
    assert isinstance(error, FormatError)
    assert (error.path, error.line, error.field) == (str(path), 2, field)
    assert str(error).startswith(f"{path}:2: {field or 'case'}")
    assert words in str(error)


def test_jsonl_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(case()) + "\n\n{oops\n", encoding="utf-8")
    with pytest.raises(SuiteFormatError, match=r"s\.jsonl:3: not JSON"):
        load_suite(path)


def test_a_bad_yaml_field_names_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "cases:\n"
        "  - id: one\n"
        "    transcript: []\n"
        "    probes:\n"
        "      - type: update\n"
        "        name: timeout\n"
        "        current: 5\n"
        "        superseded: []\n",
        encoding="utf-8",
    )
    with pytest.raises(SuiteFormatError) as info:
        load_suite(path)
    assert info.value.field == "probes[0].current"  # a number where text is expected
    assert info.value.line == 7


def test_yaml_syntax_errors_unknown_keys_and_versions(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cases:\n  - id: [unclosed\n", encoding="utf-8")
    with pytest.raises(SuiteFormatError, match="not valid YAML"):
        load_suite(bad)
    bad.write_text("schema_version: 9\ncases: []\n", encoding="utf-8")
    with pytest.raises(SuiteFormatError, match=r"bad\.yaml:1: schema_version 9 is not supported"):
        load_suite(bad)
    bad.write_text("name: x\ncasez: []\n", encoding="utf-8")
    with pytest.raises(
        SuiteFormatError, match=r"bad\.yaml:2: unknown top-level key\(s\) \['casez'\]"
    ):
        load_suite(bad)


def test_duplicate_ids_and_missing_paths(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", case(), case())
    with pytest.raises(SuiteFormatError, match=r"s\.jsonl:2: duplicate case id 'c1'"):
        load_suite(path)
    with pytest.raises(SuiteFormatError, match="no such suite"):
        load_suite(tmp_path / "missing.yaml")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SuiteFormatError, match=r"no \*\.jsonl"):
        load_suite(tmp_path / "empty")


def test_a_transcript_that_is_not_a_conversation_is_a_format_error(tmp_path: Path) -> None:
    suite = load_suite(write_jsonl(tmp_path / "s.jsonl", case(transcript={"nothing": 1})))
    with pytest.raises(FormatError, match="case 'c1'"):
        suite.transcript(suite.cases[0])


def test_the_shipped_suites_load() -> None:
    from eval_support import SUITES

    for path in [*sorted(SUITES.glob("*.yaml")), SUITES / "handwritten"]:
        suite = load_suite(path)
        assert suite.cases, path
        for c in suite.cases:
            assert isinstance(c, Case)
            whole = MemorySnapshot.from_items(suite.transcript(c).items).render_items()
            # A probe the uncompressed transcript fails is a wrong probe, not a lossy compressor.
            assert [v.probe for v in score_probes(c.probes, whole) if not v.kept] == [], c.id
