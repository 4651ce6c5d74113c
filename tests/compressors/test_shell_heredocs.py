"""A command line's heredocs are read by their opening line and then their closing line
(issue 35), and a script that names no way of writing a file is not scanned: the heredocs, the
files and the edits are exactly those the one heredoc pattern gives."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors.digest import _shell_files as shell_files
from compactkit.compressors.digest._files import FileOp, patch_ops

PROPERTY = settings(deadline=None, max_examples=600)

PARTS = [
    "cat > a.py <<'EOF'",
    'cat > b.toml <<"EOF"',
    "python - <<EOF",
    "cat <<-END",
    "cat << 'A-B' > c.txt",
    "<<'EOF\"",
    "<<<EOF",
    "<<",
    "<<1x",
    "git apply <<PATCH",
    "EOF",
    "  EOF  ",
    "\tEND",
    "EOFX",
    "A-B",
    "PATCH",
    "open('out.txt', 'w').write('x')",
    "Path('p.txt').write_text('y')",
    "p = Path('q.txt')",
    "p.write_text('z')",
    "retries = 3",
    "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y",
    "echo hi && ls",
]
_filler = st.text(st.sampled_from("<'\"EOF -\t\nx"), max_size=6)
COMMANDS = st.lists(st.sampled_from(PARTS) | _filler, max_size=10).flatmap(
    lambda parts: st.sampled_from(["\n", "", " "]).map(lambda sep: sep.join(parts))
)


@PROPERTY
@given(COMMANDS, st.booleans())
def test_heredocs_are_the_matches_of_the_pattern(command: str, trailing: bool) -> None:
    command += "\n" if trailing else ""
    plain = [
        (m.start(), m.end(), m.group(2), m.group(3), m.group(4))
        for m in shell_files._HEREDOC.finditer(command)
    ]
    assert [tuple(h) for h in shell_files.heredocs(command)] == plain


def _plain_shell_file_ops(command: str) -> list[FileOp]:
    """``shell_file_ops`` as written with the one heredoc pattern, every script scanned."""
    ops: list[FileOp] = []
    bodies: list[tuple[str, str]] = []

    def lift(match: re.Match[str]) -> str:
        line_start = command.rfind("\n", 0, match.start()) + 1
        bodies.append((command[line_start : match.start()], match.group(4)))
        return f"<<{match.group(2)}{match.group(3)}\n"

    text = shell_files._HEREDOC.sub(lift, command)
    for intro, body in bodies:
        program = shell_files._program(intro)
        if shell_files._PATCHERS.match(program) or re.search(r"\bgit\s+apply\b", intro):
            ops += list(patch_ops(body))
        elif shell_files._SCRIPTS.match(program):
            ops += _plain_script_ops(body)
    for part in shell_files.split_commands(text):
        ops += shell_files._part_ops(part)
    return shell_files._unique(ops)


def _plain_script_ops(script: str) -> list[FileOp]:
    ops = []
    variables = {
        m.group("var"): m.group("path") for m in shell_files._SCRIPT_PATH_VAR.finditer(script)
    }
    for match in shell_files._SCRIPT_WRITES.finditer(script):
        path = match.group("open") or match.group("path") or match.group("dst")
        path = path or match.group("node")
        if path:
            ops.append(FileOp(path, True, "written by a script"))
        elif match.group("gone"):
            ops.append(FileOp(match.group("gone"), True, "deleted by a script"))
    for var, path in variables.items():
        if re.search(rf"\b{re.escape(var)}\s*\.\s*(?:write_text|write_bytes|unlink)\(", script):
            ops.append(FileOp(path, True, "written by a script"))
    return ops


@PROPERTY
@given(COMMANDS)
def test_files_of_commands_with_heredocs_are_those_of_the_pattern(command: str) -> None:
    assert shell_files.shell_file_ops(command) == _plain_shell_file_ops(command)


SCRIPT_PARTS = [
    "open('a.txt', 'w')",
    "open('a.txt')",
    "Path('b.txt').write_text('x')",
    "shutil.copy(src, 'c.txt')",
    "shutil.move(a, 'd.txt')",
    "os.remove('e.txt')",
    "os.unlink('f.txt')",
    "fs.writeFileSync('g.txt', x)",
    "out = Path('h.txt')",
    "out.write_bytes(b)",
    "print('hi')",
]


@PROPERTY
@given(st.lists(st.sampled_from(SCRIPT_PARTS) | st.text(max_size=5), max_size=6).map("\n".join))
def test_scripts_without_a_writing_word_write_nothing(script: str) -> None:
    assert shell_files._script_ops(script) == _plain_script_ops(script)


def test_a_real_heredoc_script_is_lifted_out_of_its_command() -> None:
    command = (
        "cd /testbed && cat > reproduce.py <<'EOF'\nimport os\n"
        "open('out.log', 'w').write('EOF')\nEOF\npython reproduce.py"
    )
    assert shell_files.shell_file_ops(command) == _plain_shell_file_ops(command)
    assert [h.body for h in shell_files.heredocs(command)] == [
        "import os\nopen('out.log', 'w').write('EOF')"
    ]
