"""The complexity gate: no function above cyclomatic complexity 25, at most 1% over 60 lines.

Run ``python scripts/complexity.py`` to print the numbers (share of radon blocks with
complexity >= 11, the longest functions); ``--check`` exits non-zero when the rule is broken.
CI runs it with ``--check`` (``.ci/run``); ``tests/test_complexity.py`` runs the same check.

Lengths do not count docstrings. Table-driven parsers whose tables are data may exceed the
length limit: list them in ``LONG_BY_DESIGN`` with the reason.

``KNOWN_OFFENDERS`` is the debt left when the gate was added (issue 31): functions that still
break the rule. The check fails on any function that breaks it and is not listed, so the list
can only shrink: split one, then delete its line.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from radon.complexity import cc_visit

MAX_COMPLEXITY = 25
LONG_FUNCTION_LINES = 60
MAX_LONG_SHARE = 0.01
COMPLEX_BLOCK = 11  # radon's grade C and above: the share the issue reports

# "path:qualified name" -> why its length is data, not logic.
LONG_BY_DESIGN: dict[str, str] = {
    "compactkit/sql/_schema.py:tables": "the table definitions (columns, indexes) are data",
    "compactkit/cli/eval.py:_register_eval": "an argparse table: one add_argument per option",
}

# Over the limits when the gate was added; each line goes once its function is split.
KNOWN_OFFENDERS: frozenset[str] = frozenset(
    {
        # landed by other work while the gate was being added:
        "compactkit/integrations/langchain.py:CompactkitMiddleware.__init__",
        "compactkit/sql/store.py:SQLSessionStore.save",
        "compactkit/checkup/timeline.py:_chart",
        "compactkit/cli/compact.py:_compact",
        "compactkit/cli/inspect.py:_inspect",
        "compactkit/compressors/summary/_chunks.py:cut_chunks",
        "compactkit/compressors/summary/compressor.py:SummaryCompressor.__init__",
        "compactkit/compressors/summary/compressor.py:SummaryCompressor._plan",
        "compactkit/evals/_html.py:scatter",
        "compactkit/evals/runner.py:run_one",
        "compactkit/evals/runner.py:run_suite",
        "compactkit/integrations/_governed.py:Governors.build",
        "compactkit/integrations/_wire.py:WireConverter.from_items",
        "compactkit/integrations/openai_agents.py:CompactkitSession.__init__",
        "compactkit/runtime/agent.py:Agent.__init__",
        "compactkit/sql/_compaction.py:Compactions.apply",
        "compactkit/sql/_compaction.py:Compactions.undo_last_compaction",
        "compactkit/sql/_writes.py:Writes.restore",
    }
)


@dataclass(frozen=True)
class Function:
    """One function or method: where it is, how long, how complex."""

    where: str
    lines: int
    complexity: int


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    def walk(
        node: ast.AST, prefix: str
    ) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                yield name, child
                yield from walk(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


def _docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of the function's docstring (prose, not code: not counted in its length)."""
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return (first.end_lineno or first.lineno) - first.lineno + 1
    return 0


def measure(root: Path) -> tuple[list[Function], int, int]:
    """Every function under ``root``, plus radon's blocks (functions, methods, classes) and
    how many of them are at or above grade C."""
    functions: list[Function] = []
    blocks = complex_blocks = 0
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        rel = path.as_posix()
        complexity: dict[tuple[str, int], int] = {}
        for block in cc_visit(source):
            blocks += 1
            complex_blocks += block.complexity >= COMPLEX_BLOCK
            for closure in getattr(block, "closures", ()):
                complexity[(closure.name, closure.lineno)] = closure.complexity
            complexity[(block.name, block.lineno)] = block.complexity
        for name, node in _functions(ast.parse(source)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1 - _docstring_lines(node)
            cc = complexity.get((node.name, node.lineno), 1)
            functions.append(Function(f"{rel}:{name}", lines, cc))
    return functions, blocks, complex_blocks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the rule is broken")
    parser.add_argument("root", nargs="?", default="compactkit")
    args = parser.parse_args(argv)
    functions, blocks, complex_blocks = measure(Path(args.root))
    too_complex = [f for f in functions if f.complexity > MAX_COMPLEXITY]
    long = [f for f in functions if f.lines > LONG_FUNCTION_LINES and f.where not in LONG_BY_DESIGN]
    new = sorted({f.where for f in [*too_complex, *long]} - KNOWN_OFFENDERS)
    fixed = sorted(KNOWN_OFFENDERS - {f.where for f in [*too_complex, *long]})
    allowed_long = int(len(functions) * MAX_LONG_SHARE)
    print(f"functions: {len(functions)}; radon blocks: {blocks}")
    print(
        f"blocks with complexity >= {COMPLEX_BLOCK}: {complex_blocks} ({complex_blocks / blocks:.1%})"
    )
    print(f"functions over complexity {MAX_COMPLEXITY}: {len(too_complex)}")
    for f in sorted(too_complex, key=lambda f: -f.complexity):
        print(f"  {f.complexity:4d}  {f.where}")
    print(f"functions over {LONG_FUNCTION_LINES} lines: {len(long)} (allowed: {allowed_long})")
    for f in sorted(long, key=lambda f: -f.lines):
        print(f"  {f.lines:4d}  {f.where}")
    met = not too_complex and len(long) <= allowed_long
    print(f"rule met: {'yes' if met else 'no'}; known offenders left: {len(KNOWN_OFFENDERS)}")
    for where in fixed:
        print(f"  no longer an offender (delete it from KNOWN_OFFENDERS): {where}")
    if args.check and new:
        print("complexity gate: FAILED; new offenders (split them):", file=sys.stderr)
        for where in new:
            print(f"  {where}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
