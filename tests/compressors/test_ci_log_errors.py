"""Error lines inside CI logs (a timestamp or the job and step names before each line, as
GitHub Actions writes them) are recognised like the same lines printed bare."""

from __future__ import annotations

import pytest

from compactkit.compressors._facts import errors_in

BARE = [
    "E   ModuleNotFoundError: No module named 'tomllib'",
    "ERROR tests/test_config.py",
    "Error: Process completed with exit code 2.",
    "make: *** [all] Error 1",
]
EXPECTED = [
    "ModuleNotFoundError: No module named 'tomllib'",
    "ERROR tests/test_config.py",
    "Error: Process completed with exit code 2.",
    "make: *** [all] Error 1",
]


@pytest.mark.parametrize(
    "prefix",
    ["", "test (3.10)  Run tests  ", "test (3.10)\tRun tests\t", "2024-05-01T10:00:00.1234567Z "],
    ids=["bare", "gh-log-expanded", "gh-log-tabs", "timestamp"],
)
def test_ci_log_prefixes_do_not_hide_errors(prefix: str) -> None:
    log = "\n".join(f"{prefix}{line}" for line in ["collecting ...", *BARE, "done"])
    assert errors_in(log) == EXPECTED


def test_ordinary_text_with_wide_spaces_is_not_an_error() -> None:
    assert errors_in("name  value  notes\nretries  3  fine") == []


@pytest.mark.parametrize(
    "prefix",
    [
        "svc-billing  | ",
        "web_1 | ",
        "[worker] ",
        "[2026-01-02 10:00:01,123] [celery] ",
        "2026-01-02 10:00:01 ",
        "10:00:01.250 ",
        "app[4242]: ",
    ],
    ids=["compose", "compose-short", "tag", "python-logging", "timestamp", "clock", "syslog"],
)
def test_service_log_prefixes_do_not_hide_errors(prefix: str) -> None:
    log = "\n".join(
        [f"{prefix}starting", f"{prefix}TypeError: cannot read properties of undefined", "ok"]
    )
    assert errors_in(log) == ["TypeError: cannot read properties of undefined"]


def test_a_github_error_annotation_is_an_error() -> None:
    assert errors_in("##[error]Process completed with exit code 1.") == [
        "Process completed with exit code 1."
    ]


def test_log_lines_without_an_error_stay_quiet() -> None:
    assert errors_in("svc-api  | listening on :8080\n[worker] ready\napp[1]: all good") == []
