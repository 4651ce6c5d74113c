"""SWE-agent feeds each command's output back as a user message that ends with its shell's
status lines and prompt (``(Open file: …)``, ``(Current directory: …)``, ``bash-$``), after an
assistant message whose command is a fenced block with no language. The digest reads such a
message as the command's output, never as the user's words; a person's reply stays theirs."""

from __future__ import annotations

from swe_agent_support import (
    FILE,
    STATUS,
    TASK,
    observation,
    section,
    summary_of,
    values_after_a_kept_write,
)

from compactkit.compressors.digest._text_actions import bare_blocks


def swe_agent_session() -> list[tuple[str, str]]:
    return [
        ("user", TASK),
        ("assistant", "Let's reproduce it first.\n```\npython reproduce.py\n```"),
        (
            "user",
            observation(
                "Traceback (most recent call last):\n"
                '  File "reproduce.py", line 3, in <module>\n'
                "ValueError: precision lost for 345 ms\n"
                "Note: you must always restart the worker after a deploy.\n"
                "local_20 = 0"
            ),
        ),
        ("assistant", "Now open the field.\n```\nopen src/fields.py 1474\n```"),
        (
            "user",
            observation(
                f"[File: /repo/src/fields.py (1997 lines total)]\n{FILE}", "/repo/src/fields.py"
            ),
        ),
        (
            "assistant",
            "Round instead.\n```\nedit 1475:1475\n        return int(round(x))\nend_of_edit\n```",
        ),
        (
            "user",
            observation("[File: /repo/src/fields.py (1997 lines total)]", "/repo/src/fields.py"),
        ),
        ("assistant", "Raise the timeout.\n```\ncat > settings.toml <<EOF\ntimeout = 45\nEOF\n```"),
        ("user", observation("")),  # a command with no output: the status lines alone
        ("assistant", "The rounding is wrong.\n```\nsubmit\n```"),
        ("user", "Thanks, that looks right."),
    ]


def test_a_swe_agent_observation_is_the_commands_output_not_the_users_words() -> None:
    summary = summary_of(*swe_agent_session())
    constraints = section(summary, "Constraints")
    assert "You must not edit the tests." in constraints  # the task's own rule
    assert "restart the worker" not in constraints  # tool output is data, not a rule
    assert "precision lost" not in constraints and "Traceback" not in constraints
    commands = section(summary, "Commands")
    assert "`python reproduce.py`" in commands and "`open src/fields.py 1474`" in commands
    assert "ValueError: precision lost for 345 ms" in section(summary, "Errors")
    values = section(summary, "Values")
    assert "local_20" not in values  # output is not a value the user set
    assert "`timeout` = 45 (current)" in values  # what the command wrote into a config file
    assert "(Current directory:" not in summary and "bash-$" not in summary
    modified = section(summary, "Files modified")
    # ``edit`` edits the file the status lines before it name as open (below the directory)
    assert "`src/fields.py` — read; edited lines 1475-1475" in modified


def test_an_edit_with_no_file_open_names_no_file() -> None:
    summary = summary_of(
        ("user", TASK),
        ("assistant", "Fix it.\n```\nedit 3:3\nx = 1\nend_of_edit\n```"),
        ("user", observation(f"No file open. Use the open command first.\n{FILE}")),
        ("assistant", "Open it first."),
        ("user", "Go on."),
    )
    assert "`edit 3:3" in section(summary, "Commands")
    assert section(summary, "Files modified") == ""


def test_the_task_message_that_ends_with_the_shell_status_stays_the_goal() -> None:
    summary = summary_of(*swe_agent_session())
    assert "TimeDelta serialization loses precision" in section(summary, "Goal")


def test_a_persons_reply_after_a_fenced_snippet_stays_the_users() -> None:
    summary = summary_of(
        ("user", "Fix the cache in app.py."),
        ("assistant", f"Here is app.py:\n{FILE}\nTry this:\n```\ncache.clear()\n```"),
        ("user", "That fails. Never clear the cache from a request handler."),
        ("assistant", "Understood, I will use the eviction hook instead."),
        ("user", "Go ahead."),
    )
    assert "Never clear the cache from a request handler." in section(summary, "Constraints")
    assert "cache.clear()" not in section(summary, "Commands")


def test_status_lines_without_a_fenced_command_before_them_stay_the_users() -> None:
    summary = summary_of(
        ("user", "Fix the cache in app.py."),
        ("assistant", f"Here is app.py:\n{FILE}\nWhich cache do you mean?"),
        ("user", observation("The session cache. Never restart the server.")),
        ("assistant", "Understood."),
        ("user", "Go ahead."),
    )
    assert "Never restart the server." in section(summary, "Constraints")


def test_bare_blocks_are_the_fenced_blocks_without_a_language() -> None:
    text = "Look:\n```python\nx = 1\n```\nthen\n```\nls -la\n```\nand ```bash\nrm x\n```"
    assert bare_blocks(text) == [("bash", {"command": "ls -la"})]
    assert bare_blocks("```bash\nls\n```") == []
    assert bare_blocks("no fence here") == []
    assert bare_blocks("```\nunclosed") == []


def test_a_value_a_kept_swe_agent_command_writes_supersedes_the_summarys() -> None:
    def write(timeout: int) -> str:
        return f"Set it.\n```\ncat > settings.toml <<EOF\ntimeout = {timeout}\nEOF\n```"

    values = values_after_a_kept_write(write)
    assert "`timeout` = 30 (superseded)" in values and "= 30 (current)" not in values


def test_the_command_is_the_last_outermost_bare_block_as_swe_agent_reads_it() -> None:
    quoted_then_real = (
        "It failed with\n```\npytest tests/test_fields.py\n```\nso:\n```\nopen f.py\n```"
    )
    assert bare_blocks(quoted_then_real) == [("bash", {"command": "open f.py"})]
    heredoc = "```\ncat <<'EOF' > README.md\n```python\nprint(1)\n```\nEOF\n```"
    assert bare_blocks(heredoc) == [
        ("bash", {"command": "cat <<'EOF' > README.md\n```python\nprint(1)\n```\nEOF"})
    ]
    indented = "```\nedit 3:5\n    Example:\n    ```\n    x = 1\nend_of_edit\n```"
    assert bare_blocks(indented) == [
        ("bash", {"command": "edit 3:5\n    Example:\n    ```\n    x = 1\nend_of_edit"})
    ]
    assert bare_blocks("Run:\n```\nls\n```\nthen:\n```python\nx = 1\n```") == []


def test_a_new_task_after_submit_is_the_users_and_a_one_line_answer_is_its_output() -> None:
    second_task = (
        "We're currently solving the following issue within our repository.\n"
        "ISSUE:\nThe cache never expires.\n\nYou must keep the public API stable.\n"
    ) + STATUS.format(open="n/a")
    summary = summary_of(
        *swe_agent_session()[:3],
        ("assistant", "Try the flag.\n```\nsubmit 'flag{one}'\n```"),
        ("user", observation("Wrong flag!")),
        ("assistant", "Done.\n```\nsubmit\n```"),
        ("user", second_task),
        ("assistant", "Open it.\n```\nopen cache.py\n```"),
        (
            "user",
            observation(f"[File: /repo/cache.py (399 lines total)]\n{FILE}", "/repo/cache.py"),
        ),
        ("assistant", "Looking."),
        ("user", "Go on."),
    )
    assert "You must keep the public API stable." in section(summary, "Constraints")
    commands = section(summary, "Commands")
    assert "`submit 'flag{one}'` → output: `Wrong flag!`" in commands
    assert "We're currently solving the following issue" not in commands
