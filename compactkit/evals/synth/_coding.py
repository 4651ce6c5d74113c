"""The coding domain: an agent changing a Python service, with tests, linters and git."""

from __future__ import annotations

import random

from compactkit.evals.synth import _text as text
from compactkit.evals.synth._domain import Domain, Ending, Update
from compactkit.evals.synth._styles import Run
from compactkit.items import Tool

__all__ = ["Coding"]

_PACKAGES = ("ledgerline", "tidewater", "quillstack", "harborview", "fernwood")
_MODULES = ("transport", "retry", "config", "cache", "auth", "schema", "storage", "cli", "queue")

_CONSTRAINTS = (
    "Never commit directly to main; work on the branch feature/backoff.",
    "Do not touch anything under vendor/ — it is generated.",
    "Use pytest fixtures, not unittest.TestCase.",
    "Keep the public signature of Client.request() unchanged.",
    "Run the full test suite before every commit.",
    "Do not add new third-party dependencies.",
    "Log with the module logger; no print() calls in library code.",
    "Type hints on every new function, and mypy --strict must stay clean.",
    "Keep the changelog entry under docs/changelog.md in the same commit as the code.",
)
_LATE = (
    "From now on, do not run the integration tests; they hit the shared staging database.",
    "Also: keep every line under 100 characters, the linter in CI enforces it.",
    "One more rule: never force-push, even to your own branch.",
)
_DECISIONS = (
    (
        "I'll use httpx.MockTransport in the tests instead of monkeypatching socket calls, because the client builds its transport per request.",
        ("httpx.MockTransport",),
    ),
    (
        "Decision: jitter is applied as full jitter (random between 0 and the cap) because equal jitter still synchronises clients.",
        ("full jitter",),
    ),
    (
        "I'm going with a monotonic clock (time.monotonic) for the deadline because wall-clock time can jump.",
        ("time.monotonic",),
    ),
)
_DEAD_ENDS = (
    (
        "Tried pinning urllib3<2 to silence the warning; abandoned it because botocore in the lockfile requires urllib3>=2.",
        ("urllib3<2",),
    ),
    (
        "I tried caching the session object in a module global, but that broke the fork-safety test, so I reverted it.",
        ("module global",),
    ),
)


class Coding(Domain):
    """Changing a small Python service."""

    name = "coding"
    late_constraints = _LATE
    decisions = _DECISIONS
    dead_ends = _DEAD_ENDS
    tools = (
        Tool(
            name="run_tests",
            description="Run pytest on a path and return the report.",
            parameters={
                "type": "object",
                "properties": {"path": {"type": "string"}, "k": {"type": "string"}},
                "required": ["path"],
            },
        ),
        Tool(
            name="git",
            description="Run a git subcommand.",
            parameters={
                "type": "object",
                "properties": {"args": {"type": "string"}},
                "required": ["args"],
            },
        ),
    )

    def __init__(self) -> None:
        self.package = "ledgerline"

    def system(self) -> str:
        return (
            "You are an autonomous software engineering agent working in a developer's "
            f"repository at /srv/work/{self.package}. Read before you edit, run the tests after "
            "every change, and explain each step in a sentence before you act. Python 3.12."
        )

    def opening(self, rng: random.Random) -> tuple[str, list[str]]:
        self.package = rng.choice(_PACKAGES)
        goal = (
            f"Please add retries with exponential backoff to the HTTP transport of {self.package}, "
            "so that 429 and 503 responses are retried with a capped delay."
        )
        return goal, rng.sample(_CONSTRAINTS, rng.randint(3, 5))

    def workspace(self, rng: random.Random, scale: float) -> dict[str, str]:
        files = {}
        for module in rng.sample(_MODULES, 6):
            functions = max(2, int(rng.randint(3, 8) * scale))
            files[f"src/{self.package}/{module}.py"] = text.code_module(rng, functions)
            files[f"tests/test_{module}.py"] = text.code_module(rng, max(2, functions // 2))
        files["docs/guía_rápida.md"] = "# Guía rápida\n\n" + text.prose(rng, 6) + "\n"
        return files

    def new_file(self, rng: random.Random, scale: float) -> tuple[str, str]:
        name = f"{rng.choice(text.WORDS)}_{rng.choice(text.WORDS)}"
        folder = rng.choice((f"src/{self.package}", "tests", "scripts"))
        prefix = "test_" if folder == "tests" else ""
        return f"{folder}/{prefix}{name}.py", text.code_module(rng, max(2, int(4 * scale)))

    def failing_run(self, rng: random.Random, path: str) -> tuple[Run, str]:
        n = rng.randint(2, 97)
        ident = f"{rng.choice(text.WORDS)}_{rng.choice(text.WORDS)}"
        kind = rng.randrange(6)
        test = f"tests/test_{rng.choice(_MODULES)}.py"
        if kind == 0:
            error = f"AssertionError: expected {n} retries, got {n + rng.randint(1, 5)}"
            out = (
                f"============================= test session starts ==============================\n"
                f"collected {n + 20} items\n\n{test} ..F.\n\n"
                f"=================================== FAILURES ===================================\n"
                f"____ test_{ident} ____\n\n    def test_{ident}():\n>       assert calls == {n}\n"
                f"E       {error}\n\n{test}:{rng.randint(10, 300)}: AssertionError\n"
                f"=========================== short test summary info ============================\n"
                f"FAILED {test}::test_{ident} - {error}\n"
                f"========================= 1 failed, {n + 19} passed in {rng.uniform(0.5, 9):.2f}s ========================="
            )
            return Run(
                f"python -m pytest {test} -q", out, ("run_tests", {"path": test}), True
            ), error
        if kind == 1:
            error = f"TypeError: {ident}() got an unexpected keyword argument 'max_delay_{n}'"
            out = (
                "Traceback (most recent call last):\n"
                f'  File "/srv/work/{self.package}/{path}", line {rng.randint(5, 200)}, in {ident}\n'
                f"    return _send(request, max_delay_{n}=cap)\n{error}"
            )
            return Run(
                f"python -c 'import {self.package}; {self.package}.{ident}()'", out, None, True
            ), error
        if kind == 2:
            error = f'{path}:{rng.randint(5, 300)}: error: Argument 1 to "{ident}" has incompatible type "float"; expected "int"  [arg-type]'
            out = f"{error}\nFound 1 error in 1 file (checked {n} source files)"
            return Run(f"mypy --strict src/{self.package}", out, None, True), error
        if kind == 3:
            error = f"{path}:{rng.randint(5, 300)}:{rng.randint(1, 60)}: E999 SyntaxError: invalid syntax"
            return Run(f"flake8 {path}", error, None, True), error
        if kind == 4:
            tool = rng.choice(("tree", "rg", "jq", "fd"))
            error = f"bash: line 1: {tool}: command not found"
            return Run(f"{tool} src/{self.package} | head -n {n}", error, None, True), error
        error = f"ModuleNotFoundError: No module named '{self.package}.{ident}'"
        out = (
            "Traceback (most recent call last):\n"
            f'  File "/srv/work/{self.package}/{path}", line {rng.randint(1, 20)}, in <module>\n'
            f"    from {self.package}.{ident} import {rng.choice(text.WORDS)}\n{error}"
        )
        return Run(f"python {path}", out, None, True), error

    def passing_run(self, rng: random.Random, scale: float) -> Run:
        count = rng.randint(40, 400)
        dots = "".join(rng.choice("....s") for _ in range(int(count * scale)))
        lines = [dots[i : i + 80] for i in range(0, len(dots), 80)]
        out = "\n".join(
            [
                "============================= test session starts ==============================",
                f"collected {count} items",
                *lines,
                f"============================== {count} passed in {rng.uniform(1, 30):.2f}s ==============================",
            ]
        )
        return Run("python -m pytest -q", out, ("run_tests", {"path": "tests"}))

    def bulky_run(self, rng: random.Random, lines: int) -> Run:
        if rng.random() < 0.5:
            out = text.log_lines(rng, lines, service=self.package)
            return Run(f"cat /var/log/{self.package}/worker.log", out)
        listing = "\n".join(
            f"src/{self.package}/{rng.choice(_MODULES)}.py:{rng.randint(1, 400)}:    {rng.choice(text.WORDS)}_{rng.choice(text.WORDS)}(request, timeout=timeout)"
            for _ in range(lines)
        )
        return Run(f"grep -rn 'timeout' src/{self.package}", listing)

    def identifier_run(self, rng: random.Random) -> tuple[Run, str, str]:
        roll = rng.randrange(3)
        if roll == 0:
            sha = text.hexid(rng)
            msg = f"{rng.choice(('Add', 'Fix', 'Cap'))} {rng.choice(text.WORDS)} {rng.choice(text.WORDS)} handling"
            out = f"[feature/backoff {sha}] {msg}\n 2 files changed, {rng.randint(5, 90)} insertions(+), {rng.randint(0, 30)} deletions(-)"
            run = Run(f'git commit -am "{msg}"', out, ("git", {"args": f'commit -am "{msg}"'}))
            return run, sha, "Committing this step."
        if roll == 1:
            url = f"https://ci.example.dev/{self.package}/runs/{rng.randint(10000, 99999)}"
            out = f"Pipeline queued: {url}\nstatus: pending"
            return Run("gh workflow run ci.yml --ref feature/backoff", out), url, "Triggering CI."
        key = text.ticket(rng, rng.choice(("PAY", "NET", "OPS")))
        out = f"{key}  Retries storm the upstream after 503s  (open, assignee: {text.person(rng)})"
        return Run(f"jira issue view {key} --plain", out), key, "Checking the linked ticket."

    def recall_run(self, rng: random.Random) -> tuple[Run, str]:
        ms = rng.randint(120, 980)
        fact = f"p95 latency {ms} ms"
        out = f"benchmark: retry_path\nrequests: {rng.randint(1000, 9000)}\np50 latency {ms // 3} ms\n{fact}\nerrors: 0"
        return Run("python scripts/bench_retry.py --requests 5000", out), fact

    def update(self, rng: random.Random, index: int) -> Update:
        if index % 2 == 0:
            old, new = rng.choice(((3, 5), (4, 6), (2, 4)))
            return Update(
                "max_retries",
                (),
                str(old),
                str(new),
                f"Set max_retries to {old} for now.",
                f"Change of plan: max_retries should be {new}, the upstream team asked for it.",
                (f"src/{self.package}/config.py", f"max_retries = {old}", f"max_retries = {new}"),
            )
        old_s, new_s = rng.choice((("30", "45"), ("20", "60"), ("10", "25")))
        return Update(
            "backoff cap",
            ("max_delay", "delay cap"),
            f"{old_s} seconds",
            f"{new_s} seconds",
            f"Cap the backoff at {old_s} seconds.",
            f"Actually, make the backoff cap {new_s} seconds instead.",
            (f"src/{self.package}/config.py", f"max_delay = {old_s}.0", f"max_delay = {new_s}.0"),
        )

    def ending(self, rng: random.Random, workspace: dict[str, str]) -> Ending:
        pending = Run(
            "python -m pytest tests -q",
            "",
            ("run_tests", {"path": "tests"}),
        )
        return Ending(
            state="Current state: retries with capped backoff are in place and the unit tests pass.",
            state_phrases=("capped backoff",),
            next_step="Next step: write the changelog entry and open the pull request.",
            next_phrases=("open the pull request",),
            final_user="Looks good. Run the whole suite once more, then go ahead.",
            pending=pending,
        )
