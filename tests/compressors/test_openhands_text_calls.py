"""OpenHands without native function calling writes each call as text in the assistant's
message (``<function=NAME>``, one ``<parameter=KEY>VALUE</parameter>`` per argument,
``</function>``) and feeds the result back as a user message (``EXECUTION RESULT of
[NAME]:``). The digest reads such a call as the tool call it stands for: its command with its
outcome, the file it edits, an error a later run resolved; never as the assistant's words."""

from __future__ import annotations

from swe_agent_support import FILE, section, summary_of

from compactkit.compressors import DigestCompressor
from compactkit.compressors.digest._text_actions import text_actions, without_text_actions
from compactkit.items import FunctionCall, FunctionCallOutput, Message
from compactkit.items.snapshot import MemorySnapshot


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


def test_the_call_the_message_ends_with_is_read_with_its_parameters() -> None:
    text = call("First", "execute_bash", command="ls -la")
    assert text_actions(text) == [("execute_bash", {"command": "ls -la"})]
    assert without_text_actions(text).split() == ["First"]
    assert text_actions("<function=finish>\n</function>") == [("finish", {})]
    # generation stops at "</function": a call without its closing tag is still the call
    assert text_actions(text.removesuffix("</function>")) == [
        ("execute_bash", {"command": "ls -la"})
    ]
    assert text_actions("Use <function=execute_bash> to run a command.") == []
    # cut inside the closing tag, or wrapped in Qwen3-Coder's <tool_call> tags
    assert text_actions(text.removesuffix("function>")) == [("execute_bash", {"command": "ls -la"})]
    wrapped = f"First\n<tool_call>\n{text.split(chr(10), 2)[2]}\n</tool_call>"
    assert text_actions(wrapped) == [("execute_bash", {"command": "ls -la"})]
    assert without_text_actions(wrapped).split() == ["First"]


def test_a_call_cut_at_its_closing_tag_is_read_as_the_call() -> None:
    cut = [(role, text.removesuffix("</function>")) for role, text in openhands_session()]
    summary = summary_of(*cut)
    assert f"`{RUN}` → exit 0 — earlier: exit 1" in section(summary, "Commands")
    assert f"`{FIELDS}` — read; edited" in section(summary, "Files modified")
    assert "<function=" not in summary


def test_an_example_of_the_format_in_prose_is_not_a_call() -> None:
    example = call(
        "The prompt should show a call such as:",
        "str_replace_editor",
        command="create",
        path="/repo/hello.py",
        file_text="print(1)",
    )
    items = (
        Message(role="user", content="Document the text tool-call format in prompt.txt"),
        Message(role="assistant", content="Let me look."),
        FunctionCall(call_id="c1", name="bash", arguments='{"command": "cat prompt.txt"}'),
        FunctionCallOutput(call_id="c1", output=FILE),
        Message(role="assistant", content=example + "\n\nI will add that example next."),
        Message(role="user", content="ok go ahead"),
        Message(role="assistant", content="Working on it."),
        Message(role="user", content="thanks"),
    )
    result = DigestCompressor(keep_last_groups=1).compress(MemorySnapshot(items=items))
    assert result.snapshot is not None and result.snapshot.summary is not None
    summary = result.snapshot.summary
    assert "hello.py" not in section(summary, "Files modified")
    assert "I will add that example next." in summary


def test_a_fenced_block_in_an_argument_is_not_a_command_and_the_header_is_not_output() -> None:
    readme = "# Tool\n\nInstall it:\n\n```bash\nrm -rf build && pip install -e .\n```"
    summary = summary_of(
        ("user", "Write a README for the tool."),
        (
            "assistant",
            call(
                "Create it.",
                "str_replace_editor",
                command="create",
                path="README.md",
                file_text=readme,
            ),
        ),
        ("user", result("str_replace_editor", f"File created successfully at: README.md\n{FILE}")),
        ("assistant", call("", "think", thought="Check the result next.")),
        ("user", result("think", "Your thought has been logged.")),
        ("user", "Thanks."),
    )
    assert "rm -rf build" not in section(summary, "Commands")
    assert "`README.md` — created" in section(summary, "Files modified")
    assert "EXECUTION RESULT" not in summary


def test_calls_wrapped_in_tool_call_tags_are_read() -> None:
    wrapped = [
        (role, text.replace("<function=", "<tool_call>\n<function=") + "\n</tool_call>")
        if "<function=" in text
        else (role, text)
        for role, text in openhands_session()
    ]
    summary = summary_of(*wrapped)
    assert f"`{RUN}` → exit 0 — earlier: exit 1" in section(summary, "Commands")
    assert f"`{FIELDS}` — read; edited" in section(summary, "Files modified")
    assert "tool_call" not in summary
