"""Recall and expand for ``SQLMemory``: SQLite FTS5, PostgreSQL full-text search.

``recall(query)`` first indexes the items stored since the last indexed seq (one short write,
O(new items); nothing when none are new), then asks the database for the best archived items —
``bm25()`` over the FTS5 table on SQLite, ``ts_rank`` over the GIN-indexed ``tsvector`` on
PostgreSQL. The query's words are ORed; they are bound as parameters and never parsed as
full-text query syntax. Schema: ``compactkit.sql._recall_schema``.
"""

from __future__ import annotations

from sqlalchemy import (
    ColumnElement,
    Connection,
    Table,
    bindparam,
    func,
    literal_column,
    or_,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite

from compactkit.items import Item, item_text
from compactkit.memory.recall import (
    DEFAULT_RECALL_LIMIT,
    RecallHit,
    candidates,
    check_limit,
    hit_for_item,
    parse_ref,
    query_words,
    rank_hits,
    rank_matches,
    search_words,
    summary_hits,
)
from compactkit.sql._engine import read_transaction, single_statement, write_transaction
from compactkit.sql._reads import SQLSession
from compactkit.sql._recall_schema import fts_name
from compactkit.sql._rows import _ARCHIVED

__all__ = ["Recall"]

_BATCH = 2000  # items indexed per INSERT
_ANALYZE_AFTER = 5000  # items indexed at once from which PostgreSQL's statistics are refreshed
_WINDOW_ALLOWANCE = 50  # ranked matches fetched beyond ``limit``: room for active ones to drop


class Recall(SQLSession):
    """``recall`` and ``expand`` of ``SQLMemory`` (see ``compactkit.memory.Recallable``)."""

    def recall(self, query: str, *, limit: int = DEFAULT_RECALL_LIMIT) -> list[RecallHit]:
        """The archived items (and summary lines) that best match ``query``, best first (see
        ``compactkit.memory.recall``).

        Raises:
            ConfigError: ``query`` has no words, or ``limit`` is not between 1 and 1000.
            StorageError: the database cannot be read or the index written.
        """
        words = query_words(query)
        check_limit(limit)
        failure = f"cannot search session {self._session_id!r}"
        # One read transaction in the common case (the index is current): the index check,
        # the search and the summary share a connection and a snapshot.
        with read_transaction(self._engine, failure) as conn:
            newest, indexed = self._index_marks(conn)
            found = self._search(conn, words, limit) if newest <= indexed else None
        if found is None:
            self._index_new_items()
            with read_transaction(self._engine, failure) as conn:
                found = self._search(conn, words, limit)
        rows, summary = found
        items = self._items([(payload, seq, pinned) for seq, payload, pinned, _ in rows])
        hits = [hit_for_item(item, float(row[3])) for item, row in zip(items, rows, strict=True)]
        return rank_hits(hits, summary_hits(summary, words), words, limit)

    def _search(
        self, conn: Connection, words: list[str], limit: int
    ) -> tuple[list[tuple[int, str, bool, float]], str]:
        """The best archived rows for ``words`` and the session's summary, in ``conn``."""
        # Items holding every word: a posting-list intersection, fast when one word is
        # rare; only when none does, the items holding any word (a wider, slower match).
        rows = self._best_archived(conn, words, limit, every_word=True)
        if not rows:
            rows = self._best_archived(conn, words, candidates(limit), every_word=False)
        row = self._session_row(conn)
        return rows, "" if row is None else row.summary

    def _best_archived(
        self, conn: Connection, words: list[str], limit: int, *, every_word: bool
    ) -> list[tuple[int, str, bool, float]]:
        """The ``limit`` best-ranked matches that are archived, with their payloads.

        Two statements the planner cannot get wrong: the ranked seqs from the full-text index
        alone (``cap`` of them), then those items by primary key. Joining the two in one
        statement let PostgreSQL, right after a compaction had updated every row of the
        session (stale statistics, dead index entries), hash-join the whole items table.
        A match still in the active window is dropped; when that leaves fewer than ``limit``
        and the index had more, the next ``cap`` are fetched.
        """
        rank = self._rank_postgresql if conn.dialect.name == "postgresql" else self._rank_sqlite
        cap = limit + _WINDOW_ALLOWANCE
        while True:
            ranked = rank(conn, words, cap, every_word=every_word)
            found = self._archived_rows(conn, [seq for seq, _ in ranked])
            rows = [(seq, *found[seq], score) for seq, score in ranked if seq in found]
            if len(rows) >= limit or len(ranked) < cap:
                return rows[:limit]
            cap *= 4

    def expand(self, ref: str) -> list[Item]:
        """Every stored item the reference names (``#412``, ``#412-418``), as first stored, by
        seq; empty when none is stored.

        Raises:
            ConfigError: ``ref`` is not a reference.
            StorageError: the database cannot be read.
        """
        first, last = parse_ref(ref)
        i = self._t.items
        query = (
            select(i.c.payload, i.c.seq, i.c.pinned)
            .where(i.c.session_id == self._session_id, i.c.seq.between(first, last))
            .order_by(i.c.seq)
        )
        with read_transaction(self._engine, f"cannot read session {self._session_id!r}") as conn:
            rows = conn.execute(query).all()
        return self._items([(r.payload, r.seq, r.pinned) for r in rows])

    # -- the index -------------------------------------------------------------------------

    def _index_new_items(self) -> None:
        """Index the items stored since the last indexed one (nothing when there are none)."""
        failure = f"cannot index session {self._session_id!r} for recall"
        with single_statement(self._engine, failure) as conn:
            newest, indexed = self._index_marks(conn)
        if newest <= indexed:
            return
        with write_transaction(self._engine, failure) as conn:
            if self._lock_existing(conn) is None:  # serialises with the session's writers
                return
            newest, indexed = self._index_marks(conn)
            i, r = self._t.items, self._recall_table
            query = (
                select(i.c.payload, i.c.seq, i.c.pinned)
                .where(i.c.session_id == self._session_id, i.c.seq > indexed)
                .order_by(i.c.seq)
            )
            rows = conn.execute(query).all()
            for start in range(0, len(rows), _BATCH):
                batch = rows[start : start + _BATCH]
                items = self._items([(row.payload, row.seq, row.pinned) for row in batch])
                values = [
                    {
                        "session_id": self._session_id,
                        "seq": item.seq,
                        "words": " ".join(search_words(item_text(item))),
                    }
                    for item in items
                ]
                if conn.dialect.name == "postgresql":
                    statement = postgresql.insert(r).values(
                        session_id=bindparam("session_id"),
                        seq=bindparam("seq"),
                        words=func.to_tsvector("simple", bindparam("words")),
                    )
                    conn.execute(statement.on_conflict_do_nothing(), values)
                else:
                    conn.execute(sqlite.insert(r).on_conflict_do_nothing(), values)
        if len(rows) >= _ANALYZE_AFTER and self._engine.dialect.name == "postgresql":
            # Fresh statistics for the rows just indexed: without them (autovacuum analyzes
            # later, under load much later) the planner may read the whole session's index
            # rows by (session_id, seq) instead of the GIN index. A few hundred ms once per
            # large indexing, against every search after it.
            with single_statement(self._engine, failure) as conn:
                conn.execute(text(f"ANALYZE {r.name}"))

    def _index_marks(self, conn: Connection) -> tuple[int, int]:
        """The newest stored seq and the newest indexed seq of the session (0 for none)."""
        i, r = self._t.items, self._recall_table
        newest = select(func.max(i.c.seq)).where(i.c.session_id == self._session_id)
        indexed = select(func.max(r.c.seq)).where(r.c.session_id == self._session_id)
        found = conn.execute(select(newest.scalar_subquery(), indexed.scalar_subquery())).one()
        return int(found[0] or 0), int(found[1] or 0)

    @property
    def _recall_table(self) -> Table:
        return self._t.metadata.tables[f"{self._t.prefix}recall"]

    # -- searches ----------------------------------------------------------------------------

    def _archived_rows(self, conn: Connection, seqs: list[int]) -> dict[int, tuple[str, bool]]:
        """Payload and pinned of those of ``seqs`` that are archived: folded away, or replaced
        in the active window (a masked output's original)."""
        if not seqs:
            return {}
        i = self._t.items
        query = select(i.c.seq, i.c.payload, i.c.pinned).where(
            i.c.session_id == self._session_id,
            i.c.seq.in_(seqs),
            or_(i.c.status == _ARCHIVED, i.c.replacement.is_not(None)),
        )
        return {seq: (payload, pinned) for seq, payload, pinned in conn.execute(query).all()}

    def _rank_sqlite(
        self, conn: Connection, words: list[str], cap: int, *, every_word: bool
    ) -> list[tuple[int, float]]:
        r = self._recall_table
        fts = fts_name(self._t.prefix)
        joiner = " AND " if every_word else " OR "
        match = joiner.join(f'"{word}"' for word in words)  # words are letters and digits only
        matching = literal_column(fts).op("MATCH")(match)
        if every_word:
            # Most queries (an identifier and a few words) match a handful of items. FTS5's
            # bm25() first counts the documents of every query word by walking its whole
            # posting list (4.3 ms per query at 100k items with common words), so when all
            # the matches fit in ``cap`` they are fetched unranked and ranked here instead.
            # CROSS JOIN: SQLite's planner keeps the full-text match as the outer loop (else
            # it may walk the session's rows and test each against the match).
            few = text(
                f"SELECT r.seq, r.words FROM {fts} CROSS JOIN {r.name} AS r "
                f"ON r.id = {fts}.rowid WHERE {fts} MATCH :match AND r.session_id = :session "
                "LIMIT :cap"
            )
            found = {"match": match, "session": self._session_id, "cap": cap + 1}
            rows = conn.execute(few, found).all()
            if len(rows) <= cap:
                return rank_matches([(seq, found) for seq, found in rows], words)[:cap]
        score: ColumnElement[float] = literal_column(f"-bm25({fts})")
        query = (
            select(r.c.seq, score.label("score"))
            .select_from(text(fts))
            .join(r, r.c.id == literal_column(f"{fts}.rowid"))
            .where(matching, r.c.session_id == self._session_id)
            .order_by(literal_column("score").desc(), r.c.seq)
            .limit(cap)
        )
        return [(seq, float(value)) for seq, value in conn.execute(query).all()]

    def _rank_postgresql(
        self, conn: Connection, words: list[str], cap: int, *, every_word: bool
    ) -> list[tuple[int, float]]:
        r = self._recall_table
        joiner = " & " if every_word else " | "
        wanted = func.to_tsquery("simple", joiner.join(f"'{word}'" for word in words))
        query = (
            select(r.c.seq, func.ts_rank(r.c.words, wanted).label("score"))
            .where(r.c.session_id == self._session_id, r.c.words.op("@@")(wanted))
            .order_by(literal_column("score").desc(), r.c.seq)
            .limit(cap)
        )
        return [(seq, float(value)) for seq, value in conn.execute(query).all()]
