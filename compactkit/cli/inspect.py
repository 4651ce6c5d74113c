"""``compactkit inspect``: a session stored in SQL."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from compactkit.cli._common import EXIT_OK, _emit_json
from compactkit.cli._progress import Progress, _add_quiet_arg
from compactkit.errors import ConfigError


def _register_inspect(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="show a session stored by SQLMemory (or list the sessions)",
        description="Show what an SQL database holds for one session — summary, active items, "
        "archived items and compaction history (newest first) — or list the sessions. "
        "Read-only: never creates or migrates tables.",
    )
    parser.add_argument(
        "url", help="database URL (sqlite:///agent.db, postgresql://...) or a SQLite file's path"
    )
    parser.add_argument("session_id", nargs="?", help="the session to show")
    parser.add_argument("--list", action="store_true", help="list the sessions instead")
    parser.add_argument(
        "--prefix", default="compactkit_", help="table name prefix (default: compactkit_)"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="write the session's timeline page (tokens per item, compactions, summary, "
        "doctor's findings) as a self-contained HTML file; URL may also be a store directory",
    )
    parser.add_argument(
        "--model", "-m", help="with --html: count with this model and draw its budget and trigger"
    )
    _add_quiet_arg(parser)
    parser.set_defaults(handler=_inspect)


def _inspect(args: argparse.Namespace) -> int:
    if args.html is not None:
        return _write_timeline(args)
    try:
        from sqlalchemy import make_url
        from sqlalchemy.exc import ArgumentError

        from compactkit.sql.memory import SQLMemory, list_sql_sessions
    except ImportError as exc:
        raise ConfigError(f"{exc}") from exc
    from compactkit.items import dump_items

    if args.list == (args.session_id is not None):
        raise ConfigError("give either a SESSION_ID or --list")
    given = args.url
    if "://" not in given and Path(given).is_file():  # a SQLite file named by its path
        given = f"sqlite:///{Path(given).resolve()}"
    try:
        url = make_url(given)
    except ArgumentError as exc:
        raise ConfigError(
            f"not a database URL: {args.url!r}; write a SQLite file as sqlite:///{args.url} "
            "(or name an existing file), PostgreSQL as postgresql://user:password@host/db"
        ) from exc
    shown = url.render_as_string(hide_password=True)
    database = url.database or ":memory:"
    if (
        url.get_backend_name() == "sqlite"
        and database != ":memory:"
        and not Path(database).is_file()
    ):
        raise ConfigError(f"no SQLite database file at {database!r}")  # (connecting creates one)
    if url.get_backend_name() == "sqlite" and database != ":memory:":
        _check_sqlite_file(Path(database))
    if args.list:
        infos = list_sql_sessions(url, table_prefix=args.prefix)
        rows = [info.model_dump(mode="json") for info in infos]
        if args.json:
            _emit_json({"sessions": rows})
        else:
            _print_session_table(rows)
        return EXIT_OK
    memory = SQLMemory(url, args.session_id, table_prefix=args.prefix, create_schema=False)
    info = memory.info()
    if info is None:
        raise ConfigError(
            f"no session {args.session_id!r} in {shown} (table prefix {args.prefix!r}); "
            f"list them with: compactkit inspect URL --list"
        )
    # A large session takes a while to read and lay out: say which step runs (stderr only).
    with Progress(f"session {info.session_id}", quiet=args.quiet) as progress:
        steps = 3 if args.json else 4
        progress.update(0, steps, f"reading {info.active_items:,} active items")
        snapshot = memory.snapshot()
        progress.update(1, steps, f"reading {info.archived_items:,} archived items")
        archived = dump_items(memory.archived())
        progress.update(2, steps, f"reading {info.compactions:,} compactions")
        report = {
            "session_id": info.session_id,
            "version": snapshot.version,
            "created_at": info.model_dump(mode="json")["created_at"],
            "updated_at": info.model_dump(mode="json")["updated_at"],
            "saved_state": info.saved_state,
            "summary": snapshot.summary,
            "active": dump_items(snapshot.items),
            "archived": archived,
            "compactions": [r.model_dump(mode="json") for r in memory.compactions()],
        }
        if not args.json:
            progress.update(3, steps, "laying out the timeline")
            lines = _session_lines(report)
    if args.json:
        _emit_json(report)
    else:
        sys.stdout.writelines(lines)
    return EXIT_OK


_SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file (https://sqlite.org/fileformat.html)."""


def _check_sqlite_file(path: Path) -> None:
    """Refuse a file that is not a SQLite database with one line, before SQLAlchemy tries it."""
    try:
        with path.open("rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise ConfigError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from exc
    if header and header != _SQLITE_HEADER:  # (an empty file is a valid, empty database)
        raise ConfigError(
            f"{str(path)!r} is not a SQLite database; name the file SQLMemory writes "
            "(sqlite:///agent.db) or a PostgreSQL URL"
        )


def _write_timeline(args: argparse.Namespace) -> int:
    from pathlib import Path

    from compactkit.checkup import diagnose, read_sessions
    from compactkit.checkup.timeline import timeline_html

    if args.session_id is None:
        raise ConfigError("--html draws one session: give its SESSION_ID")
    (session,) = read_sessions(args.url, args.session_id, table_prefix=args.prefix)
    (diagnosis,) = diagnose([session]).sessions
    page = timeline_html(session, diagnosis.checks, model=args.model)
    Path(args.html).write_text(page, encoding="utf-8")
    if args.json:
        _emit_json({"html": str(args.html), "healthy": diagnosis.healthy})
    return EXIT_OK


def _print_session_table(rows: list[dict[str, Any]]) -> None:
    header = ("session", "version", "active", "archived", "compactions", "saved", "updated")
    table = [
        (
            r["session_id"],
            r["version"],
            r["active_items"],
            r["archived_items"],
            r["compactions"],
            "yes" if r["saved_state"] else "no",
            r["updated_at"][:19],
        )
        for r in rows
    ]
    widths = [max(len(str(row[i])) for row in [header, *table]) for i in range(len(header))]
    for row in [header, *table]:
        line = "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True))
        sys.stdout.write(line.rstrip() + "\n")


def _session_lines(report: dict[str, Any]) -> list[str]:
    """The session as a timeline: every stored item oldest first, each compaction shown where
    the span it folded ends, then the summary the model sees now."""
    from compactkit.items import FunctionCall, item_text, load_items

    archived = {item["seq"] for item in report["archived"]}
    items = sorted(load_items([*report["active"], *report["archived"]]), key=lambda i: i.seq or 0)
    compactions = sorted(report["compactions"], key=lambda c: c["id"])
    after: dict[int, list[dict[str, Any]]] = {}
    for c in compactions:
        after.setdefault(c["last_seq"] if c["last_seq"] is not None else -1, []).append(c)

    out: list[str] = []
    out.append(
        f"session {report['session_id']}  version {report['version']}  "
        f"created {report['created_at'][:19]}  updated {report['updated_at'][:19]}\n"
        f"{len(report['active'])} active, {len(archived)} archived, "
        f"{len(compactions)} compactions\n\ntimeline (oldest first; ~ marks archived items):\n"
    )
    for c in after.pop(-1, []):
        out.append(_compaction_line(c))
    width = len(str(items[-1].seq)) if items else 1
    for item in items:
        who = getattr(item, "role", None) or item.type.replace("function_call_output", "tool")
        if isinstance(item, FunctionCall):
            who, text = "call", f"{item.name}({' '.join(item.arguments.split())})"
        else:
            text = " ".join(item_text(item).split())
        mark = "~" if item.seq in archived else " "
        pin = " (pinned)" if item.pinned else ""
        text = f"{text[:96]}…" if len(text) > 97 else text
        out.append(f" {mark}#{item.seq:<{width}} {who:<9}{pin} {text}\n")
        for c in after.pop(item.seq or 0, []):
            out.append(_compaction_line(c))
    for rest in after.values():  # spans whose items were purged since
        out.extend(_compaction_line(c) for c in rest)
    summary = report["summary"]
    out.append(f"\nsummary the model sees now ({len(summary)} chars):\n")
    out.extend(f"  {row}\n" for row in (summary.splitlines() or ["(none)"]))
    return out


def _compaction_line(c: dict[str, Any]) -> str:
    span = (
        f"folded #{c['first_seq']}-#{c['last_seq']}"
        if c["first_seq"] is not None
        else "folded nothing"
    )
    tokens = (
        f", tokens {c['tokens_before']:,} -> {c['tokens_after']:,}" if c["tokens_before"] else ""
    )
    undone = " (undone)" if c["undone_at"] else ""
    error = f", error: {c['error']}" if c["error"] else ""
    return (
        f"   -- compaction #{c['id']} {c['created_at'][:19]} {c['strategy']} {c['outcome']}: "
        f"{span} ({c['archived']} archived), items {c['items_before']} -> {c['items_after']}"
        f"{tokens}{undone}{error}\n"
    )
