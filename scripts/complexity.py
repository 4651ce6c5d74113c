"""The complexity gate: no function above cyclomatic complexity 25, at most 1% over 60 lines.

Run ``python scripts/complexity.py`` to print the numbers (share of radon blocks with
complexity >= 11, the longest functions); ``--check`` exits non-zero when the rule is broken.
CI runs it with ``--check`` (``.ci/run``); ``tests/test_complexity.py`` runs the same check.

Table-driven parsers whose tables are data may exceed the length limit: list them in
``LONG_BY_DESIGN`` with the reason.
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
LONG_BY_DESIGN: dict[str, str] = {}


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
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
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
    if args.check and (too_complex or len(long) > allowed_long):
        print("complexity gate: FAILED (split the functions listed above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
