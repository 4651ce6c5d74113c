"""An error is marked resolved when it was: a later passing run of the same tool over a scope
that covers the failed one (the whole project included), or an edit of the file its traceback
names (also when the traceback gives the absolute path and the edit the relative one)."""

from __future__ import annotations

import json

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors import DigestCompressor, SummaryDocument
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.snapshot import MemorySnapshot

COUNTER = TiktokenCounter("o200k_base")
FAILED = "FAILED tests/test_a.py::test_x - AssertionError: expected 3 retries, got 4"
PYTEST_FAIL = f"collected 5 items\n\n{FAILED}\n===== 1 failed, 4 passed in 0.50s ====="
PYTEST_PASS = "collected 90 items\n.....\n===== 90 passed in 3.20s ====="
TYPE_ERROR = "TypeError: send() got an unexpected keyword argument 'max_delay'"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/work/app/src/app/client.py", line 12, in send\n'
    f"    return _send(max_delay=cap)\n{TYPE_ERROR}"
)


def call(n: int, name: str, args: dict[str, object], output: str) -> list[Item]:
    return [
        FunctionCall(call_id=f"c{n}", name=name, arguments=json.dumps(args)),
        FunctionCallOutput(call_id=f"c{n}", output=output),
    ]


def errors_sent(items: list[Item]) -> list[str]:
    noise = "\n".join(f"worker {k}: heartbeat ok" for k in range(300))  # worth folding
    items = [
        Message(role="user", content="Fix the retry bug."),
        *call(0, "bash", {"command": "tail -n 300 worker.log"}, noise),
        *items,
    ]
    items.append(Message(role="user", content="Go on."))
    result = DigestCompressor(keep_last_groups=0, counter=COUNTER).compress(
        MemorySnapshot.from_items(items)
    )
    return SummaryDocument.parse(result.snapshot.summary or "").entries("errors")


def test_a_typed_test_tool_passing_over_the_whole_suite_resolves_the_failure() -> None:
    errors = errors_sent(
        [
            *call(1, "run_tests", {"path": "tests/test_a.py"}, PYTEST_FAIL),
            *call(2, "run_tests", {"path": "tests"}, PYTEST_PASS),
        ]
    )
    entry = next(e for e in errors if FAILED in e)
    assert "resolved: `run_tests" in entry


def test_a_passing_run_over_the_whole_project_resolves_a_narrower_failure() -> None:
    errors = errors_sent(
        [
            *call(1, "bash", {"command": "python -m pytest tests/test_a.py -q"}, PYTEST_FAIL),
            *call(2, "bash", {"command": "python -m pytest -q"}, PYTEST_PASS),
        ]
    )
    entry = next(e for e in errors if FAILED in e)
    assert "resolved: `python -m pytest -q` succeeded later" in entry


def test_an_edit_of_the_file_a_traceback_names_by_its_absolute_path_resolves_it() -> None:
    edit = {"path": "src/app/client.py", "old_str": "max_delay=cap", "new_str": "cap=cap"}
    errors = errors_sent(
        [
            *call(1, "bash", {"command": "python -c 'import app; app.send()'"}, TRACEBACK),
            *call(2, "edit_file", edit, "Edited src/app/client.py"),
        ]
    )
    entry = next(e for e in errors if TYPE_ERROR in e)
    assert "resolved: `/srv/work/app/src/app/client.py` changed after it" in entry


def test_an_error_nothing_fixed_stays_open() -> None:
    errors = errors_sent(
        [
            *call(1, "bash", {"command": "python -m pytest tests/test_a.py -q"}, PYTEST_FAIL),
            *call(2, "bash", {"command": "ruff check ."}, "All checks passed!\nexit code 0"),
            *call(3, "edit_file", {"path": "src/other.py", "old_str": "a", "new_str": "b"}, "ok"),
        ]
    )
    entry = next(e for e in errors if FAILED in e)
    assert "resolved" not in entry
