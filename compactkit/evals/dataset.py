"""Suites: eval cases read from JSONL or YAML files, validated, with errors that name the spot.

A suite file holds cases (``compactkit.evals.schema.Case``) and *generated* entries:

* JSONL — one JSON object per line: a case, or ``{"generate": {...}}`` with a ``SynthSpec``.
* YAML — a list of such entries, or a mapping ``{schema_version: 1, name: ..., description: ...,
  cases: [...]}``.

A directory is a suite of every ``*.jsonl`` / ``*.yaml`` / ``*.yml`` file in it, in name order.
``transcript_file`` paths are relative to the file that names them. Anything malformed raises
``SuiteFormatError`` naming the file, the line and the field (``probes[2].text``), never a
traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from compactkit.errors import FormatError
from compactkit.evals.schema import SCHEMA_VERSION, Case
from compactkit.evals.synth import SynthSpec, generate
from compactkit.formats import Transcript, load_transcript, parse_transcript

__all__ = ["Suite", "SuiteFormatError", "dump_cases", "load_suite"]


class SuiteFormatError(FormatError):
    """A suite file is malformed.

    Attributes:
        path: The file.
        line: The 1-based line of the offending entry or field, when known.
        field: The offending field (``"probes[2].text"``), when known.
    """

    def __init__(
        self, message: str, *, path: str = "", line: int | None = None, field: str = ""
    ) -> None:
        where = path + (f":{line}" if line else "")
        super().__init__(f"{where}: {message}" if where else message)
        self.path = path
        self.line = line
        self.field = field


@dataclass(frozen=True)
class Suite:
    """Cases to run, with where each came from (to resolve ``transcript_file``)."""

    name: str
    """The suite's name (its file's stem by default)."""
    cases: tuple[Case, ...]
    """The cases, in file order."""
    description: str = ""
    """What the suite is for."""
    origins: dict[str, Path] = field(default_factory=dict)
    """Per case id, the file it was read from."""

    def transcript(self, case: Case) -> Transcript:
        """The case's transcript, parsed (inline or from ``transcript_file``).

        Raises:
            FormatError: the transcript is not a valid conversation.
        """
        if case.transcript_file is not None:
            origin = self.origins.get(case.id)
            base = origin.parent if origin is not None else Path.cwd()
            return load_transcript(base / case.transcript_file, format=case.format)
        return parse_transcript(
            json.dumps(case.transcript), format=case.format, source=f"case {case.id!r}"
        )


def load_suite(path: str | Path) -> Suite:
    """Read a suite file or directory.

    Raises:
        SuiteFormatError: not JSON/YAML, an unknown schema version, an invalid case or
            generator spec, or a duplicate case id — naming the file, line and field.
        OSError: the path cannot be read.
    """
    root = Path(path)
    if root.is_dir():
        files = sorted(
            p for p in root.iterdir() if p.suffix in (".jsonl", ".yaml", ".yml") and p.is_file()
        )
        if not files:
            raise SuiteFormatError("no *.jsonl, *.yaml or *.yml suite files here", path=str(root))
    elif root.exists():
        files = [root]
    else:
        raise SuiteFormatError("no such suite file or directory", path=str(root))
    cases: list[Case] = []
    origins: dict[str, Path] = {}
    lines: dict[str, tuple[Path, int | None]] = {}
    name, description = root.stem, ""
    for file in files:
        meta, entries = _read(file)
        if len(files) == 1:
            name = str(meta.get("name") or name)
            description = str(meta.get("description") or "")
        for line, entry, node in entries:
            case = _case(entry, file, line, node)
            if case.id in lines:
                first, first_line = lines[case.id]
                raise SuiteFormatError(
                    f"duplicate case id {case.id!r} (first at {first}:{first_line}); ids must be "
                    "unique within a suite",
                    path=str(file),
                    line=line,
                    field="id",
                )
            lines[case.id] = (file, line)
            origins[case.id] = file
            cases.append(case)
    return Suite(name=name, cases=tuple(cases), description=description, origins=origins)


def dump_cases(cases: Iterable[Case], path: str | Path) -> None:
    """Write cases as a JSONL suite file (one case per line)."""
    with Path(path).open("w", encoding="utf-8") as out:
        for case in cases:
            out.write(case.model_dump_json(exclude_none=True) + "\n")


_Entry = tuple[int | None, Any, Any]  # (line, value, yaml node or None)


def _read(file: Path) -> tuple[dict[str, Any], list[_Entry]]:
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SuiteFormatError(f"not UTF-8 (byte {exc.start})", path=str(file)) from None
    if file.suffix == ".jsonl":
        entries: list[_Entry] = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entries.append((number, json.loads(line), None))
            except json.JSONDecodeError as exc:
                raise SuiteFormatError(
                    f"not JSON: {exc.msg} (column {exc.colno}); each line must be one case object",
                    path=str(file),
                    line=number,
                ) from None
        return {}, entries
    return _read_yaml(text, file)


def _read_yaml(text: str, file: Path) -> tuple[dict[str, Any], list[_Entry]]:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - pyyaml ships with the evals extra
        raise SuiteFormatError(
            "reading YAML suites needs PyYAML: pip install 'compactkit[evals]'", path=str(file)
        ) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise SuiteFormatError(f"not valid YAML: {problem}", path=str(file), line=line) from None
    meta: dict[str, Any] = {}
    if isinstance(data, dict):
        meta = data
        version = data.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise SuiteFormatError(
                f"schema_version {version!r} is not supported; this compactkit reads version "
                f"{SCHEMA_VERSION}",
                path=str(file),
                line=_line(node, ("schema_version",)),
                field="schema_version",
            )
        unknown = sorted(set(data) - {"schema_version", "name", "description", "cases"})
        if unknown:
            raise SuiteFormatError(
                f"unknown top-level key(s) {unknown}; expected schema_version, name, "
                "description, cases",
                path=str(file),
                line=_line(node, (unknown[0],)),
                field=unknown[0],
            )
        cases, cases_node = data.get("cases"), _child(node, "cases")
    else:
        cases, cases_node = data, node
    if not isinstance(cases, list):
        raise SuiteFormatError(
            "expected a list of cases (or a mapping with 'cases:')", path=str(file), line=1
        )
    nodes = cases_node.value if cases_node is not None else [None] * len(cases)
    return meta, [
        (n.start_mark.line + 1 if n is not None else None, c, n)
        for c, n in zip(cases, nodes, strict=False)
    ]


def _case(entry: Any, file: Path, line: int | None, node: Any) -> Case:
    if not isinstance(entry, dict):
        raise SuiteFormatError(
            f"a case must be an object, got {type(entry).__name__}", path=str(file), line=line
        )
    try:
        if "generate" in entry:
            extra = sorted(set(entry) - {"generate"})
            if extra:
                raise SuiteFormatError(
                    f"{extra[0]}: a generated entry holds only 'generate:' (put {extra} inside it)",
                    path=str(file),
                    line=line,
                    field=extra[0],
                )
            return generate(SynthSpec.model_validate(entry["generate"]))
        return Case.model_validate(entry)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc: Sequence[str | int] = error["loc"]
        if "generate" in entry:
            loc = ("generate", *loc)
        where = _field(loc)
        deeper = _line(node, tuple(loc)) if node is not None else None
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise SuiteFormatError(
            f"{where or 'case'}: {error['msg']}{more}",
            path=str(file),
            line=deeper or line,
            field=where,
        ) from None


def _field(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("constraint", "recall", "artifact", "decision", "continuation"):
            continue  # the discriminator's branch name, not a field
        elif part in ("update", "tool_state", "function-after[_one_transcript()]"):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


def _child(node: Any, key: str | int) -> Any:
    value = getattr(node, "value", None)
    if isinstance(key, int):
        return value[key] if isinstance(value, list) and key < len(value) else None
    if isinstance(value, list):
        for pair in value:
            if isinstance(pair, tuple) and getattr(pair[0], "value", None) == key:
                return pair[1]
    return None


def _line(node: Any, loc: tuple[str | int, ...]) -> int | None:
    """The line of the deepest node along ``loc`` (1-based)."""
    best = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        child = _child(node, key)
        if child is None:
            continue  # a discriminator branch in loc, or a missing field: stay at the parent
        node = child
        best = node.start_mark.line + 1
    return best
