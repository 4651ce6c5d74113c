"""OpenHands without native function calling writes each call as text in the assistant's
message (``<function=NAME>``, one ``<parameter=KEY>VALUE</parameter>`` per argument,
``</function>``) and feeds the result back as a user message (``EXECUTION RESULT of
[NAME]:``). The digest reads such a call as the tool call it stands for: its command with its
outcome, the file it edits, an error a later run resolved; never as the assistant's words."""

from __future__ import annotations

from swe_agent_support import FILE, section, summary_of

from compactkit.compressors.digest._files import text_actions, without_text_actions


def call(prose: str, name: str, **parameters: str) -> str:
    body = "".join(f"<parameter={key}>{value}</parameter>\n" for key, value in parameters.items())
    return f"{prose}\n\n<function={name}>\n{body}</function>"


def result(name: str, text: str) -> str:
    return f"EXECUTION RESULT of [{name}]:\n{text}"


RUN = "cd /workspace/repo && python reproduce.py"
FIELDS = "/workspace/repo/src/fields.py"


def openhands_session() -> list[tuple[str, str]]:
    return [
        ("user", "Fix the TimeDelta rounding in src/fields.py. You must not modify the tests."),
        ("assistant", call("Let me reproduce it first.", "execute_bash", command=RUN)),
        (
            "user",
            result(
                "execute_bash",
                'Traceback (most recent call last):\n  File "reproduce.py", line 3, in <module>\n'
                "ValueError: precision lost for 345 ms\n[Command finished with exit code 1]",
            ),
        ),
        ("assistant", call("Let me view it.", "str_replace_editor", command="view", path=FIELDS)),
        (
            "user",
            result("str_replace_editor", f"Here's the result of `cat -n` on {FIELDS}:\n{FILE}"),
        ),
        (
            "assistant",
            call(
                "We should round instead of truncating.",
                "str_replace_editor",
                command="str_replace",
                path=FIELDS,
                old_str="        return int(x)",
                new_str="        # Decided to round instead, because int() truncates.\n        return int(round(x))",
            ),
        ),
        ("user", result("str_replace_editor", f"The file {FIELDS} has been edited.")),
        ("assistant", call("Run it again.", "execute_bash", command=RUN)),
        ("user", result("execute_bash", "345\n[Command finished with exit code 0]")),
        ("assistant", call("", "finish", message="Fixed the rounding.")),
        ("user", "Thanks."),
    ]


def test_a_text_function_call_is_read_as_the_tool_call_it_stands_for() -> None:
    summary = summary_of(*openhands_session())
    commands = section(summary, "Commands")
    assert f"`{RUN}` → exit 0 — earlier: exit 1" in commands
    assert f"`{FIELDS}` — read; edited" in section(summary, "Files modified")
    errors = section(summary, "Errors")
    assert "ValueError: precision lost for 345 ms" in errors and "resolved" in errors


def test_the_call_is_not_the_assistants_words() -> None:
    summary = summary_of(*openhands_session())
    assert "We should round instead of truncating." in section(summary, "Decisions")
    assert "<function=" not in summary and "<parameter=" not in summary
    assert "int() truncates" not in summary  # the comment an edit inserts is code, not a decision


def test_text_actions_reads_each_call_and_its_parameters() -> None:
    text = call("First", "execute_bash", command="ls -la") + "\n" + call("", "think", thought="x")
    assert text_actions(text) == [
        ("execute_bash", {"command": "ls -la"}),
        ("think", {"thought": "x"}),
    ]
    assert text_actions("<function=finish>\n</function>") == [("finish", {})]
    assert text_actions("<function=execute_bash>\n<parameter=command>ls") == []  # unclosed
    assert without_text_actions(text).split() == ["First"]
