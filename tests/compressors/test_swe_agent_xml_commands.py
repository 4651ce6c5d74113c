"""SWE-agent's XML format: the assistant wraps its command in ``<command>`` tags (its
``XMLThoughtActionParser`` reads what lies between the last ``<command>`` and the last
``</command>``), and the output comes back as a user message ending with the shell's status
lines. The digest reads that output as the command's, never as the user's words, and the
command is not a decision or a value the assistant stated."""

from __future__ import annotations

from swe_agent_support import (
    FILE,
    TASK,
    observation,
    section,
    summary_of,
    values_after_a_kept_write,
)

from compactkit.compressors.digest._text_actions import bare_blocks, tagged_command


def xml(thought: str, command: str) -> str:
    return f"{thought}\n<command>\n{command}\n</command>"


def xml_session() -> list[tuple[str, str]]:
    return [
        ("user", TASK),
        ("assistant", xml("Let's reproduce it first.", "python reproduce.py")),
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
        ("assistant", xml("Now open the field.", "open src/fields.py 1474")),
        (
            "user",
            observation(
                f"[File: /repo/src/fields.py (1997 lines total)]\n{FILE}", "/repo/src/fields.py"
            ),
        ),
        (
            "assistant",
            xml(
                "We should round instead.",
                "edit 1475:1475\n        return int(round(x))\nend_of_edit",
            ),
        ),
        (
            "user",
            observation("[File: /repo/src/fields.py (1997 lines total)]", "/repo/src/fields.py"),
        ),
        ("assistant", xml("Raise the timeout.", "cat > settings.toml <<EOF\ntimeout = 45\nEOF")),
        ("user", observation("")),  # a command with no output: the status lines alone
        ("assistant", xml("The rounding is wrong.", "submit")),
        ("user", "Thanks, that looks right."),
    ]


def test_the_output_of_a_tagged_command_is_the_commands_not_the_users_words() -> None:
    summary = summary_of(*xml_session())
    constraints = section(summary, "Constraints")
    assert "You must not edit the tests." in constraints  # the task's own rule
    assert "restart the worker" not in constraints  # tool output is data, not a rule
    assert "precision lost" not in constraints and "Traceback" not in constraints
    assert "(Current directory:" not in summary and "bash-$" not in summary
    commands = section(summary, "Commands")
    assert "`python reproduce.py`" in commands and "`open src/fields.py 1474`" in commands
    assert "ValueError: precision lost for 345 ms" in section(summary, "Errors")
    modified = section(summary, "Files modified")
    assert "`src/fields.py` — read; edited lines 1475-1475" in modified


def test_the_tagged_command_is_neither_a_decision_nor_a_stated_value() -> None:
    summary = summary_of(*xml_session())
    decisions = section(summary, "Decisions")
    assert "We should round instead." in decisions
    assert "<command>" not in summary and "end_of_edit" not in decisions
    values = section(summary, "Values")
    assert "local_20" not in values  # output is not a value the user set
    assert "`timeout` = 45 (current)" in values  # what the command wrote into a config file


def test_the_command_is_between_the_last_tags_the_message_ends_with() -> None:
    two = "First\n<command>\nls\n</command>\nthen\n<command>\nopen f.py\n</command>\n"
    assert bare_blocks(two) == [("bash", {"command": "open f.py"})]
    end = two.rindex("</command>") + len("</command>")
    assert tagged_command(two) == (two.rindex("<command>"), end, "open f.py")
    # both tags on lines of their own: the thought goes on after the command
    goes_on = "Look.\n<command>\nls -la\n</command>\nThen I will open it."
    assert bare_blocks(goes_on) == [("bash", {"command": "ls -la"})]
    assert tagged_command("Look. <command>ls</command>\nThen I will open it.") is None
    heredoc = "Write it.\n```bash\ncat > job.xml <<'EOF'\n<job>\n<command>\nmake\n</command>\n</job>\nEOF\n```"
    assert tagged_command(heredoc) is None
    fenced_inside = "Edit:\n<command>\nedit 1:1\n```\nx = 1\n```\nend_of_edit\n</command>"
    assert bare_blocks(fenced_inside) == [
        ("bash", {"command": "edit 1:1\n```\nx = 1\n```\nend_of_edit"})
    ]
    assert bare_blocks("<command>\n   \n</command>") == []  # an empty command runs nothing
    # prose naming the tags, then SWE-agent's fenced command: the fenced block is the command
    named = "It reads what lies between <command> and </command>.\n```\nopen f.py\n```"
    assert bare_blocks(named) == [("bash", {"command": "open f.py"})]
    assert tagged_command("Split at <command>, then at </command> and go on.") is None


def test_prose_that_names_the_tags_is_read_as_prose() -> None:
    said = (
        "The parser splits each job at <command>. We decided to use lxml instead of regex for "
        "the parsing. The timeout should be 30 seconds. Next, I will handle the closing "
        "</command> tag."
    )
    summary = summary_of(
        ("user", "Make the jobs parser accept an empty job."),
        ("assistant", f"Here is jobs.xml:\n{FILE}"),
        ("user", "Go on."),
        ("assistant", said),
        ("user", "ok"),
        ("assistant", "Working on it."),
        ("user", "Thanks."),
    )
    assert "We decided to use lxml instead of regex" in section(summary, "Decisions")
    assert "`timeout` = 30 seconds" in section(summary, "Values")


def test_a_fenced_block_in_a_tagged_message_is_not_its_command() -> None:
    summary = summary_of(
        ("user", TASK),
        ("assistant", xml("Open the README.", "open README.md")),
        ("user", observation(FILE, "/repo/README.md")),
        (
            "assistant",
            xml(
                "The docs say:\n```bash\npython -m pytest\n```\nDocument the install step.",
                "edit 3:3\n```bash\npip install -e .\n```\nend_of_edit",
            ),
        ),
        ("user", observation("File updated. Please review the changes.", "/repo/README.md")),
        ("assistant", xml("Done.", "submit")),
        ("user", "Thanks."),
    )
    commands = section(summary, "Commands")
    assert "`edit 3:3" in commands
    assert "pip install" not in commands and "python -m pytest" not in commands
    assert "`README.md` — read; edited lines 3-3" in section(summary, "Files modified")


def test_a_message_that_is_only_a_command_leaves_the_last_words_before_it() -> None:
    summary = summary_of(
        ("user", TASK),
        ("assistant", xml("Let me open the file.", "open src/fields.py")),
        ("user", observation(FILE, "/repo/src/fields.py")),
        ("assistant", "<command>\nedit 12:12\n    return int(round(x))\nend_of_edit\n</command>"),
        ("user", observation("File updated.", "/repo/src/fields.py")),
        ("assistant", "Done."),
        ("user", "Thanks."),
    )
    assert "the assistant said: Let me open the file." in section(summary, "Current state")


def test_a_value_a_kept_tagged_command_writes_supersedes_the_summarys() -> None:
    def write(timeout: int) -> str:
        return xml("Set it.", f"cat > settings.toml <<EOF\ntimeout = {timeout}\nEOF")

    values = values_after_a_kept_write(write)
    assert "`timeout` = 30 (superseded)" in values and "= 30 (current)" not in values


def test_the_thought_after_a_command_on_lines_of_its_own_is_read_as_prose() -> None:
    summary = summary_of(
        ("user", TASK),
        (
            "assistant",
            "Let me run it.\n<command>\npython reproduce.py\n</command>\n"
            "We decided to round instead of truncating.",
        ),
        ("user", observation(f"{FILE}\nValueError: precision lost for 345 ms")),
        ("assistant", "Looking."),
        ("user", "Go on."),
    )
    assert "`python reproduce.py`" in section(summary, "Commands")
    assert "ValueError: precision lost for 345 ms" in section(summary, "Errors")
    assert "We decided to round instead of truncating." in section(summary, "Decisions")
    assert "precision lost" not in section(summary, "Constraints")
