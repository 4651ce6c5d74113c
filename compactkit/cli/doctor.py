"""``compactkit doctor``: the "why did my agent forget?" checklist on stored sessions."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from compactkit.cli._common import EXIT_FAILURE, EXIT_OK, _emit_json


def _register_doctor(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="run the debugging checklist on stored sessions",
        description="Check what a session stored for the usual reasons an agent forgets: tool "
        "calls without outputs, a missing or duplicated summary, items dropped instead of "
        "folded, rules missing from the summary, compactions that gained nothing, sessions "
        "sharing one memory. Read-only. Exit 0 healthy, 1 findings, 2 bad input.",
    )
    parser.add_argument(
        "url",
        help="database URL (sqlite:///agent.db, postgresql://...), a SQLite file's path, "
        "or a FileSessionStore directory",
    )
    parser.add_argument("session_id", nargs="?", help="the session to check (default: every one)")
    parser.add_argument(
        "--prefix", default="compactkit_", help="table name prefix (default: compactkit_)"
    )
    parser.add_argument(
        "--model",
        "-m",
        help="the sessions' model: also report compactions that left the context over its budget",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from compactkit.checkup import doctor

    diagnosis = doctor(args.url, args.session_id, table_prefix=args.prefix, model=args.model)
    if args.json:
        _emit_json(diagnosis.to_json())
    else:
        sys.stdout.writelines(_lines(diagnosis))
    return EXIT_OK if diagnosis.healthy else EXIT_FAILURE


def _lines(diagnosis: Any) -> list[str]:
    out: list[str] = []
    for session in diagnosis.sessions:
        verdict = "healthy" if session.healthy else f"{len(session.findings)} finding(s)"
        out.append(f"session {session.session_id}: {verdict}\n")
        for check in session.checks:
            out.append(f"  {'ok ' if check.ok else 'BAD'} {check.name:<10} {check.message}\n")
            if not check.ok:
                if check.evidence:
                    out.append(f"      evidence: {', '.join(check.evidence)}\n")
                out.append(f"      fix: {check.fix}\n")
    if not diagnosis.sessions:
        out.append("no sessions stored\n")
    return out
