"""Benchmark: what the digest keeps at 10-40x compression, and how summary trimming scales.

Part 1 — fact retention. Seeded coding-agent transcripts of about 80k, 150k and 300k tokens, in
four agent styles, are compacted by ``DigestCompressor(target_tokens=8000)`` (exact o200k_base
tokens, the whole request):

* ``tools``  — function-calling tools (``read_file``, ``write_file``, ``edit_file``, ``run``);
* ``bash``   — one ``bash`` tool: edits through ``sed -i``, heredocs, ``python - <<EOF`` scripts,
  ``git apply``; errors only visible in command output;
* ``react``  — text actions: the assistant writes ```` ```bash ```` blocks or ``Action:`` lines and
  the observation comes back as a *user* message (mini-swe-agent / ReAct style);
* ``editor`` — an editor tool with a ``command``/``path`` argument (``str_replace_editor``) plus
  a shell tool.

The generator knows the ground truth of every fact it plants (user constraints, files modified,
distinct error lines, identifiers, values that change), drawn from its own vocabulary — Python,
TypeScript, shell, linter and test-runner error shapes — not from the digest's patterns. A fact
counts as kept when the compacted request still holds it verbatim: in the summary (constraints
under their own heading, files modified under theirs) or in the verbatim tail. A value is
"reported wrong" when the summary calls a superseded value current.

When ``compactkit.evals.synth`` (the eval suite's generator) exists, its coding transcripts are
measured too.

Part 2 — ``SummaryDocument.trim_to`` (and ``parse``/``merge``) time at 1k..20k entries: the
ratio per doubling is what matters (linear ≈ 2x, quadratic ≈ 4x).

Part 3 — ``compactkit compact --compressor digest --target 8000`` wall time on the 300k
transcript (the CLI in a subprocess).

Run: ``python evals/benchmarks/bench_digest_scale.py`` (``--tiny`` for CI's smoke run;
``--json`` for machine-readable output).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compactkit import (
    DigestCompressor,
    FunctionCall,
    FunctionCallOutput,
    Item,
    MemorySnapshot,
    Message,
    items_to_chat,
)
from compactkit.budget import TiktokenCounter
from compactkit.compressors import SummaryDocument
from compactkit.items import item_text

COUNTER = TiktokenCounter("o200k_base")
TARGET = 8000
STYLES = ("tools", "bash", "react", "editor")
CLASSES = ("constraints", "files_modified", "errors", "identifiers")

# -- vocabulary (the generator's own; not the digest's) ----------------------------------------

MODULES = (
    "auth billing cache client config db events export http jobs ledger metrics models notify "
    "parser queue render router schema search session storage sync tasks tokens upload users "
    "views worker ingest audit pricing invoices webhooks scheduler"
).split()
PACKAGES = ("app", "core", "services", "api", "lib")
LIBS = ("httpx", "requests", "pydantic", "attrs", "sqlalchemy", "orjson", "structlog", "click")
BRANCHES = ("main", "master", "release", "production", "develop")
NAMES = ("ana", "bo", "chen", "dara", "eli", "femi", "gus", "hana", "ivo", "jun")
SETTINGS = (
    "max_retries",
    "timeout_seconds",
    "pool_size",
    "batch_size",
    "cache_ttl",
    "worker_count",
    "page_limit",
    "rate_limit_per_minute",
)
PY_EXCEPTIONS = (
    ("KeyError", "'{w}_id'"),
    ("ValueError", "invalid literal for int() with base 10: '{w}'"),
    ("TypeError", "{W}.__init__() got an unexpected keyword argument '{w}'"),
    ("AttributeError", "'NoneType' object has no attribute '{w}'"),
    ("ModuleNotFoundError", "No module named '{w}_utils'"),
    ("ImportError", "cannot import name '{W}Client' from 'app.{w}'"),
    ("AssertionError", "expected {n} items, got {m}"),
    ("sqlalchemy.exc.IntegrityError", "UNIQUE constraint failed: {w}.id"),
    ("RuntimeError", "event loop is closed while {w} was pending"),
    ("json.decoder.JSONDecodeError", "Expecting value: line {n} column {m} (char {n}{m})"),
)
USER_RULES = (
    "Don't touch {path}, another team owns it.",
    "Keep the public API of app.{w} unchanged.",
    "Use {lib} instead of {lib2} for this.",
    "Never commit directly to {branch}.",
    "Please don't add new runtime dependencies for the {w} work.",
    "Make sure the {w} tests still pass on Python 3.9.",
    "Only change files under {pkg}/{w}/ for now.",
    "Avoid network calls in the {w} unit tests.",
    "Log {w} failures at warning level, not error.",
    "All new functions in {w} need type hints and a docstring.",
    "Do not rename the {w} database columns.",
    "Keep each commit under {n}0 lines for the {w} change.",
)
REQUESTS = (
    "Can you look at why the {w} export is slow?",
    "What's the status on the {w} migration?",
    "Next, have a look at the flaky {w} test.",
    "Good progress. Now the {w} endpoint returns 500 in staging, can you check?",
    "Also update the changelog for the {w} fix.",
)
THOUGHTS = (
    "Let me look at how {w} is wired before changing anything.",
    "The failure points at the {w} layer; I'll read the module first.",
    "I'll run the {w} tests again to see whether the change helped.",
    "I decided to keep the old {w} signature because callers in {pkg} rely on it.",
    "Switching to a plain dict here instead of the {W}Config class, since it is never reused.",
    "The root cause is that {w} is initialised twice during startup.",
    "Now I will edit the file to fix the {w} handling.",
)


def _w(rng: random.Random) -> str:
    return rng.choice(MODULES)


def _fill(rng: random.Random, template: str, **extra: str) -> str:
    w = _w(rng)
    values = {
        "w": w,
        "W": w.capitalize(),
        "n": str(rng.randint(2, 9)),
        "m": str(rng.randint(10, 99)),
        "lib": rng.choice(LIBS),
        "lib2": rng.choice(LIBS),
        "branch": rng.choice(BRANCHES),
        "pkg": rng.choice(PACKAGES),
        "path": f"{rng.choice(PACKAGES)}/{w}/legacy_{rng.randint(1, 99)}.py",
    }
    values.update(extra)
    return template.format(**values)


def _code(rng: random.Random, lines: int) -> str:
    w = _w(rng)
    out = [f'"""The {w} module."""', "", "from __future__ import annotations", ""]
    for n in range(lines):
        kind = rng.random()
        if kind < 0.15:
            out.append(f"def {w}_{n}(value: int, *, strict: bool = False) -> int:")
        elif kind < 0.3:
            out.append(f"    if value > {rng.randint(1, 500)}:")
        elif kind < 0.45:
            out.append(f"        return _{rng.choice(MODULES)}(value)  # keep in sync")
        elif kind < 0.6:
            out.append(f"    logger.debug('{w} step %s', value)")
        else:
            out.append(
                f"    result = {rng.choice(MODULES)}.apply(value, limit={rng.randint(1, 64)})"
            )
    return "\n".join(out)


@dataclass
class Truth:
    constraints: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    values: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Gen:
    """One seeded transcript in one style, grown step by step to a token size."""

    style: str
    rng: random.Random
    items: list[Item] = field(default_factory=list)
    truth: Truth = field(default_factory=Truth)
    tokens: int = 0
    calls: int = 0
    files: list[str] = field(default_factory=list)
    pending_errors: list[str] = field(default_factory=list)

    def add(self, *items: Item) -> None:
        for item in items:
            self.items.append(item)
            self.tokens += COUNTER.count_item(item)

    def path(self, new: bool = False) -> str:
        # Agents work on a set of files: most steps revisit one (distinct files modified per
        # 150k tokens land near the ~57 the issue saw in real runs).
        if self.files and not new:
            return self.rng.choice(self.files)
        ext = self.rng.choices([".py", ".ts", ".toml", ".md"], [8, 2, 1, 1])[0]
        base = "tests" if self.rng.random() < 0.2 else self.rng.choice(PACKAGES)
        path = f"{base}/{_w(self.rng)}/{_w(self.rng)}_{self.rng.randint(1, 300)}{ext}"
        self.files.append(path)
        return path

    # one action: a tool call (or text action) and its output, in this generator's style
    def act(self, tool: str, args: dict[str, Any], command: str, output: str) -> None:
        self.calls += 1
        cid = f"call_{self.calls:05d}"
        if self.style == "react":
            if self.rng.random() < 0.5:
                text = f"THOUGHT: {self.thought()}\n\n```bash\n{command}\n```"
                obs = f"<returncode>{_rc(output)}</returncode>\n<output>\n{output}\n</output>"
            else:
                text = f"Thought: {self.thought()}\nAction: bash\nAction Input: {command}"
                obs = f"Observation: {output}"
            self.add(Message(role="assistant", content=text), Message(role="user", content=obs))
            return
        if self.style == "bash" or tool == "bash":
            name, arguments = "bash", {"command": command}
        else:
            name, arguments = tool, args
        self.add(
            Message(role="assistant", content=self.thought()),
            FunctionCall(call_id=cid, name=name, arguments=json.dumps(arguments)),
            FunctionCallOutput(call_id=cid, output=output),
        )

    def thought(self) -> str:
        return _fill(self.rng, self.rng.choice(THOUGHTS))

    # -- steps ---------------------------------------------------------------------------------

    def read(self) -> None:
        path = self.path(new=self.rng.random() < 0.4)
        body = _code(self.rng, int(self.rng.lognormvariate(4.2, 0.6)))
        if self.style == "editor":
            self.act(
                "str_replace_editor",
                {"command": "view", "path": f"/repo/{path}"},
                f"cat -n {path}",
                body,
            )
        else:
            self.act("read_file", {"path": path}, f"cat {path}", body)

    def edit(self) -> None:
        path = self.path(new=self.rng.random() < 0.15)
        old = f"return {_w(self.rng)}(value)"
        new = f"return {_w(self.rng)}(value, strict=True)"
        shape = self.rng.randrange(5)
        if self.style == "editor":
            tool = "str_replace_editor"
            args: dict[str, Any] = {
                "command": "str_replace",
                "path": f"/repo/{path}",
                "old_str": old,
                "new_str": new,
            }
            output = f"The file /repo/{path} has been edited. Review the changes."
        else:
            tool = "edit_file"
            args = {"path": path, "old_str": old, "new_str": new}
            output = "ok"
        command = [
            f"sed -i 's/{old}/{new}/' {path}",
            f"cat > {path} <<'EOF'\n{_code(self.rng, 12)}\nEOF",
            f"python - <<'EOF'\nfrom pathlib import Path\np = Path('{path}')\n"
            f"p.write_text(p.read_text().replace('{old}', '{new}'))\nEOF",
            f"git apply <<'EOF'\n--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n-{old}\n+{new}\nEOF",
            f"perl -pi -e 's/{old}/{new}/' {path}",
        ][shape]
        if self.style in ("bash", "react"):
            output = ""
        self.act(tool, args, command, output)
        shown = f"/repo/{path}" if self.style == "editor" else path
        if shown not in self.truth.files_modified:
            self.truth.files_modified.append(shown)

    def error_line(self) -> tuple[str, str]:
        """An error line and the output that shows it."""
        rng = self.rng
        path = self.path()
        kind = rng.randrange(8)
        if kind <= 2:
            name, message = rng.choice(PY_EXCEPTIONS)
            line = f"{name}: {_fill(rng, message)}"
            out = (
                "Traceback (most recent call last):\n"
                f'  File "/repo/{path}", line {rng.randint(5, 400)}, in {_w(rng)}\n'
                f"    result = {_w(rng)}.apply(value)\n{line}"
            )
        elif kind == 3:
            test = f"tests/test_{_w(rng)}.py::test_{_w(rng)}_{rng.randint(1, 40)}"
            name, message = rng.choice(PY_EXCEPTIONS)
            line = f"FAILED {test} - {name}: {_fill(rng, message)}"
            out = f"collected {rng.randint(20, 300)} items\n\n{line}\n==== 1 failed, {rng.randint(5, 90)} passed in 3.21s ===="
        elif kind == 4:
            line = f'{path}:{rng.randint(2, 300)}: error: Incompatible types in assignment (expression has type "{_w(rng)}", variable has type "int")  [assignment]'
            out = f"{line}\nFound 1 error in 1 file (checked {rng.randint(20, 90)} source files)"
        elif kind == 5:
            line = f"./{path}:{rng.randint(2, 300)}:{rng.randint(1, 60)}: {rng.choice(['E999 SyntaxError: invalid syntax', 'F401 ' + repr(_w(rng)) + ' imported but unused', 'F821 undefined name ' + repr(_w(rng))])}"
            out = line
        elif kind == 6:
            ts = f"web/src/{_w(rng)}.ts"
            line = f"{ts}({rng.randint(2, 200)},{rng.randint(1, 40)}): error TS2322: Type 'string' is not assignable to type '{_w(rng).capitalize()}Id'."
            out = line
        else:
            line = rng.choice(
                [
                    f"bash: line 1: {_w(rng)}ctl: command not found",
                    f"npm ERR! missing script: {_w(rng)}",
                    f"make: *** [Makefile:{rng.randint(3, 90)}: {_w(rng)}] Error 2",
                    f"cat: {path}.bak: No such file or directory",
                ]
            )
            out = line
        return line, out

    def run(self) -> None:
        rng = self.rng
        if self.pending_errors and rng.random() < 0.5:
            line, out = self.pending_errors.pop(0), None
            out = f"{line}"
        elif rng.random() < 0.45:
            line, out = self.error_line()
            if rng.random() < 0.4:
                self.pending_errors.append(line)
        else:
            line, out = (
                None,
                (
                    f"{'.' * rng.randint(10, 70)}\n==== {rng.randint(10, 300)} passed in "
                    f"{rng.uniform(0.5, 30):.2f}s ===="
                ),
            )
        if line is not None and line not in self.truth.errors:
            self.truth.errors.append(line)
        command = rng.choice(
            ["pytest -q", f"pytest tests/test_{_w(rng)}.py -x", "mypy app", "flake8 .", "npm test"]
        )
        exit_code = 1 if line else 0
        self.act("run", {"command": command}, command, f"{out}\n[exit code: {exit_code}]")

    def identifier(self) -> None:
        rng = self.rng
        kind = rng.randrange(4)
        if kind == 0:
            sha = "".join(rng.choices("0123456789abcdef", k=7))
            ident = sha
            command = f"git commit -am 'Fix {_w(rng)} handling'"
            out = f"[feat/{_w(rng)} {sha}] Fix {_w(rng)} handling\n 2 files changed"
        elif kind == 1:
            ident = f"https://github.com/acme/{_w(rng)}/pull/{rng.randint(100, 999)}"
            command = "gh pr create --fill"
            out = f"Creating pull request\n{ident}"
        elif kind == 2:
            ident = (
                f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-"
                f"a{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
            )
            command = f"python -m app.jobs status --job {ident}"
            out = f"job {ident}: running (3/7 steps)"
        else:
            ident = f"{rng.choice(['OPS', 'PAY', 'CORE'])}-{rng.randint(100, 9999)}"
            command = f"jira view {ident}"
            out = f"{ident}: {_w(rng)} fails on retry\nstatus: In Progress"
        self.truth.identifiers.append(ident)
        self.act("run", {"command": command}, command, out)

    def user(self) -> None:
        rng = self.rng
        parts = []
        if rng.random() < 0.55:
            rule = _fill(rng, rng.choice(USER_RULES))
            parts.append(rule)
            self.truth.constraints.append(rule)
        if rng.random() < 0.3:
            name = rng.choice(SETTINGS)
            value = str(rng.choice([2, 3, 5, 8, 10, 15, 30, 45, 60, 100, 250]))
            history = self.truth.values.setdefault(name, [])
            if not history or history[-1] != value:
                history.append(value)
                parts.append(f"Set `{name}` to {value}.")
        if not parts or rng.random() < 0.5:
            parts.insert(0, _fill(rng, rng.choice(REQUESTS)))
        self.add(Message(role="user", content=" ".join(parts)))

    def grep(self) -> None:
        rng = self.rng
        w = _w(rng)
        hits = "\n".join(
            f"{self.path()}:{rng.randint(1, 400)}:    {w}.apply(value)"
            for _ in range(rng.randint(3, 30))
        )
        self.act("bash", {"command": f"grep -rn '{w}' app"}, f"grep -rn '{w}' app", hits)


def generate(style: str, size: int, seed: int) -> tuple[list[Item], Truth]:
    """A seeded coding-agent transcript of about ``size`` tokens in ``style``."""
    gen = Gen(style, random.Random(f"{style}-{size}-{seed}"))
    gen.add(
        Message(
            role="system",
            content="You are a coding agent working in /repo. Read before you edit; run the "
            "tests after each change.",
        )
    )
    first = _fill(gen.rng, "The {w} service drops requests under load; find out why and fix it.")
    rule = _fill(gen.rng, gen.rng.choice(USER_RULES))
    gen.truth.constraints.append(rule)
    gen.add(Message(role="user", content=f"{first}\n\n{rule}"))
    steps: list[tuple[float, Callable[[], None]]] = [
        (0.30, gen.read),
        (0.22, gen.edit),
        (0.25, gen.run),
        (0.07, gen.identifier),
        (0.08, gen.grep),
        (0.08, gen.user),
    ]
    while gen.tokens < size:
        pick = gen.rng.random()
        for weight, step in steps:
            pick -= weight
            if pick <= 0:
                step()
                break
        else:
            gen.read()
    gen.add(Message(role="user", content="Please carry on."))
    return gen.items, gen.truth


def _rc(output: str) -> int:
    return 1 if re.search(r"Error|error|FAILED|not found", output) else 0


# -- scoring -----------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.split())


def score(snapshot: MemorySnapshot, truth: Truth) -> dict[str, Any]:
    """Per class: facts planted, facts still held verbatim; values reported wrong."""
    doc = SummaryDocument.parse(snapshot.summary) if snapshot.summary else SummaryDocument()
    tail = _norm("\n".join(item_text(i) for i in snapshot.items))
    summary = _norm(snapshot.summary)
    constraints = _norm("\n".join(doc.entries("constraints")))
    modified = _norm("\n".join(doc.entries("files_modified")))
    found = {
        "constraints": [
            c for c in truth.constraints if _norm(c) in constraints or _norm(c) in tail
        ],
        "files_modified": [f for f in truth.files_modified if f"`{f}`" in modified or f in tail],
        "errors": [e for e in truth.errors if _norm(e) in summary or _norm(e) in tail],
        "identifiers": [i for i in truth.identifiers if i in summary or i in tail],
    }
    wrong = 0
    for name, history in truth.values.items():
        for old in history[:-1]:
            if old != history[-1] and f"`{name}` = {old} (current)" in summary:
                wrong += 1
    planted = {
        "constraints": truth.constraints,
        "files_modified": truth.files_modified,
        "errors": truth.errors,
        "identifiers": truth.identifiers,
    }
    return {cls: {"planted": len(planted[cls]), "kept": len(found[cls])} for cls in CLASSES} | {
        "superseded_as_current": wrong
    }


def retention(sizes: list[int], seed: int, styles: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        for style in styles:
            items, truth = generate(style, size, seed)
            snapshot = MemorySnapshot.of(items)
            start = time.perf_counter()
            result = DigestCompressor(target_tokens=TARGET, counter=COUNTER).compress(snapshot)
            elapsed = time.perf_counter() - start
            after = result.stats.tokens_after or 0
            rows.append(
                {
                    "style": style,
                    "size": size,
                    "tokens_before": result.stats.tokens_before,
                    "tokens_after": after,
                    "ratio": round((result.stats.tokens_before or 0) / max(after, 1), 1),
                    "target_use": round(after / TARGET, 3),
                    "seconds": round(elapsed, 2),
                    **score(result.snapshot, truth),
                }
            )
    return rows


SYNTH_CLASSES = ("constraint", "artifact_modified", "error", "identifier")


def synth_rows(sizes: list[int], seed: int) -> list[dict[str, Any]]:
    """The eval suite's own coding transcripts (``compactkit.evals.synth``), scored by its own
    deterministic scorer (``compactkit.evals.scoring.score_probes``) on the rendered request."""
    try:
        from compactkit.evals.scoring import score_probes
        from compactkit.evals.synth import STYLES as SYNTH_STYLES
        from compactkit.evals.synth import SynthSpec
        from compactkit.evals.synth import generate as synth
        from compactkit.formats import parse_transcript
    except ImportError:
        return []
    rows = []
    for size in sizes:
        for style in SYNTH_STYLES:
            case = synth(SynthSpec(domain="coding", style=style, size_tokens=size, seed=seed))
            text = (
                case.transcript if isinstance(case.transcript, str) else json.dumps(case.transcript)
            )
            transcript = parse_transcript(text)
            snapshot = MemorySnapshot.from_items(transcript.items)
            compressor = DigestCompressor(
                target_tokens=TARGET, counter=COUNTER, tools=tuple(transcript.tools)
            )
            start = time.perf_counter()
            result = compressor.compress(snapshot)
            elapsed = time.perf_counter() - start
            scores = score_probes(case.probes, result.snapshot.render_items())
            row: dict[str, Any] = {
                "style": f"synth:{style}",
                "size": size,
                "tokens_before": result.stats.tokens_before,
                "tokens_after": result.stats.tokens_after or 0,
                "ratio": round(
                    (result.stats.tokens_before or 0) / max(result.stats.tokens_after or 1, 1), 1
                ),
                "target_use": round((result.stats.tokens_after or 0) / TARGET, 3),
                "seconds": round(elapsed, 2),
                "superseded_as_current": sum(1 for sc in scores if sc.stale),
            }
            for cls, name in zip(SYNTH_CLASSES, CLASSES, strict=True):
                mine = [sc for sc in scores if sc.cls == cls]
                row[name] = {"planted": len(mine), "kept": sum(sc.kept for sc in mine)}
            rows.append(row)
    return rows


# -- trimming scale ----------------------------------------------------------------------------


def trimming(sizes: list[int]) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        doc = SummaryDocument.of(
            constraints=[f"Never touch module{i}." for i in range(n // 20)],
            commands=[f"`make step{i}` → exit {i % 3}" for i in range(n // 4)],
            files_read=[f"`src/m{i}.py` — read" for i in range(n // 4)],
            errors=[f"`KeyError: 'k{i}'` — from `pytest -q`" for i in range(n // 5)],
            identifiers=[f"`PAY-{i}` — ticket" for i in range(n - n // 20 - 2 * (n // 4) - n // 5)],
        )
        text = doc.render()
        start = time.perf_counter()
        parsed = SummaryDocument.parse(text)
        parse_s = time.perf_counter() - start
        start = time.perf_counter()
        merged = SummaryDocument().merge(parsed)
        merge_s = time.perf_counter() - start
        start = time.perf_counter()
        trimmed = merged.trim_to(2000, COUNTER)
        trim_s = time.perf_counter() - start
        assert COUNTER.count_text(trimmed.render()) <= 2000
        rows.append(
            {
                "entries": len(doc),
                "parse_s": round(parse_s, 3),
                "merge_s": round(merge_s, 3),
                "trim_s": round(trim_s, 3),
            }
        )
    return rows


# -- the CLI on the largest transcript ---------------------------------------------------------


def cli_time(size: int, seed: int) -> dict[str, Any]:
    items, _ = generate("tools", size, seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.json"
        path.write_text(json.dumps({"messages": items_to_chat(items)}), encoding="utf-8")
        start = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "compactkit",
                "compact",
                str(path),
                "--model",
                "gpt-4o",
                "--compressor",
                "digest",
                "--target",
                str(TARGET),
                "--json",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import compactkit"], check=True)
        startup = time.perf_counter() - start
    out = json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr[-300:]}
    return {
        "size": size,
        "seconds": round(elapsed, 2),
        "import_seconds": round(startup, 2),
        "tokens_after": out.get("tokens_after"),
        "outcome": out.get("outcome"),
    }


def _print(rows: list[dict[str, Any]], trims: list[dict[str, Any]], cli: dict[str, Any]) -> None:
    print(f"digest to {TARGET:,} tokens: kept/planted per class")
    header = f"{'style':7} {'size':>7} {'ratio':>6} {'use':>5} {'sec':>5} " + " ".join(
        f"{c[:14]:>15}" for c in CLASSES
    )
    print(header + "  wrong-current")
    totals: dict[str, list[int]] = {c: [0, 0] for c in CLASSES}
    for row in rows:
        cells = []
        for cls in CLASSES:
            kept, planted = row[cls]["kept"], row[cls]["planted"]
            totals[cls][0] += kept
            totals[cls][1] += planted
            pct = 100 * kept / planted if planted else 100.0
            cells.append(f"{kept:>4}/{planted:<4}{pct:5.0f}%")
        print(
            f"{row['style']:7} {row['tokens_before']:>7,} {row['ratio']:>5}x "
            f"{row['target_use']:>5.2f} {row['seconds']:>5} "
            + " ".join(cells)
            + f"  {row['superseded_as_current']}"
        )
    print(
        "all                              "
        + " ".join(f"{k:>4}/{p:<4}{(100 * k / p if p else 100):5.0f}%" for k, p in totals.values())
    )
    print("\ntrim_to / parse / merge seconds by entries (ratio per doubling ~2 = linear)")
    for row in trims:
        print(
            f"  {row['entries']:>6} entries: trim {row['trim_s']:.3f}s  parse {row['parse_s']:.3f}s"
            f"  merge {row['merge_s']:.3f}s"
        )
    if cli:
        print(f"\ncompactkit compact --compressor digest on {cli['size']:,} tokens: {cli}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--styles", default="tools,bash,react,editor")
    parser.add_argument("--sizes", default=None, help="comma-separated token sizes")
    args = parser.parse_args()
    styles = tuple(args.styles.split(","))
    if args.tiny:
        sizes, trim_sizes = [20_000], [500, 1000]
    else:
        sizes, trim_sizes = [80_000, 150_000, 300_000], [1000, 2000, 5000, 10000, 20000]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    rows = retention(sizes, args.seed, styles) + synth_rows(sizes, args.seed)
    trims = trimming(trim_sizes)
    cli = {} if args.tiny else cli_time(max(sizes), args.seed)
    if args.json:
        print(json.dumps({"retention": rows, "trimming": trims, "cli": cli}, indent=1))
    else:
        _print(rows, trims, cli)


if __name__ == "__main__":
    main()
