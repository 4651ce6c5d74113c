"""``compactkit recall`` and ``compactkit expand``: search a stored session's archive and summary,
and show the items a reference names (docs/recall.md).

URL is a database URL (``sqlite:///agent.db``, ``postgresql://...``), a SQLite file's path, or a
``FileSessionStore`` directory. A SQL database must hold compactkit's tables at the current
schema version (the tables are never created here).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compactkit.cli._common import EXIT_OK, _emit_json
from compactkit.errors import ConfigError, SessionNotFoundError

if TYPE_CHECKING:  # the memories load when a command runs, not when the CLI starts
    from compactkit.items import Item
    from compactkit.memory import Recallable

_SHOWN = 240  # characters of a hit's text in the plain listing (--json has all of it)


def _register_recall(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "recall",
        help="full-text search of a stored session's archive and summary",
        description="Search what compaction folded out of a stored session (and its summary) "
        "for QUERY's words; prints the best hits with their references (expand them with "
        "`compactkit expand`).",
    )
    _common_args(parser)
    parser.add_argument("query", help="words to look for (no query syntax: any text is fine)")
    parser.add_argument("--limit", type=int, default=5, help="hits to show (default 5)")
    parser.set_defaults(handler=_recall)


def _register_expand(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "expand",
        help="the items a summary reference (#412 or #412-418) names",
        description="Print every stored item a reference names, as first stored, in order.",
    )
    _common_args(parser)
    parser.add_argument("ref", help="a reference: #412 or #412-418")
    parser.set_defaults(handler=_expand)


def _common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url",
        help="database URL (sqlite:///agent.db, postgresql://...), a SQLite file's path, or a "
        "FileSessionStore directory",
    )
    parser.add_argument("session_id", metavar="SESSION", help="the session")
    parser.add_argument(
        "--prefix", default="compactkit_", help="table name prefix (default: compactkit_)"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object")


def _recall(args: argparse.Namespace) -> int:
    memory = _open(args.url, args.session_id, args.prefix)
    hits = memory.recall(args.query, limit=args.limit)
    if args.json:
        _emit_json({"hits": [hit.to_json() for hit in hits]})
        return EXIT_OK
    if not hits:
        sys.stdout.write("no hits\n")
    for hit in hits:
        who = hit.kind if hit.role is None else f"{hit.kind}/{hit.role}"
        sys.stdout.write(f"{hit.ref}  {who}  score {hit.score:.3g}\n    {_line(hit.text)}\n")
    return EXIT_OK


def _expand(args: argparse.Namespace) -> int:
    from compactkit.items import dump_items, item_text

    memory = _open(args.url, args.session_id, args.prefix)
    items = memory.expand(args.ref)
    if args.json:
        _emit_json({"ref": args.ref, "items": dump_items(items)})
        return EXIT_OK
    if not items:
        sys.stdout.write(f"no stored items in {args.ref}\n")
    for item in items:
        sys.stdout.write(f"#{item.seq} {_who(item)}:\n{item_text(item)}\n\n")
    return EXIT_OK


def _open(url: str, session_id: str, prefix: str) -> Recallable:
    """The session's memory, from a session directory or a SQL database."""
    from compactkit.memory import InMemoryMemory, require_recall

    if "://" not in url and Path(url).is_dir():
        from compactkit.sessions.file import FileSessionStore

        try:
            state = FileSessionStore(url).load(session_id)
        except SessionNotFoundError as exc:
            raise ConfigError(f"no session {session_id!r} in the directory {url!r}") from exc
        memory = InMemoryMemory()
        memory.restore(state.memory, history=state.history, dropped=state.dropped_archive)
        return memory
    try:
        from sqlalchemy import make_url
        from sqlalchemy.exc import ArgumentError

        from compactkit.sql.memory import SQLMemory
    except ImportError as exc:
        raise ConfigError(f"{exc}") from exc
    given = url
    if "://" not in given and Path(given).is_file():  # a SQLite file named by its path
        given = f"sqlite:///{Path(given).resolve()}"
    try:
        parsed = make_url(given)
    except ArgumentError as exc:
        raise ConfigError(
            f"not a database URL or session directory: {url!r}; write a SQLite file as "
            f"sqlite:///{url}, PostgreSQL as postgresql://user:password@host/db"
        ) from exc
    database = parsed.database or ":memory:"
    if parsed.get_backend_name() == "sqlite" and not Path(database).is_file():
        raise ConfigError(f"no SQLite database file at {database!r}")  # (connecting creates one)
    sql = SQLMemory(parsed, session_id, table_prefix=prefix, create_schema=False)
    if sql.info() is None:
        raise ConfigError(
            f"no session {session_id!r} in {parsed.render_as_string(hide_password=True)} "
            f"(table prefix {prefix!r}); list them with: compactkit inspect URL --list"
        )
    return require_recall(sql)


def _who(item: Item) -> str:
    from compactkit.items import Message

    return f"{item.type}/{item.role}" if isinstance(item, Message) else item.type


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SHOWN else flat[: _SHOWN - 1] + "…"
