"""Databases for the SQL tests: an SQLite file, and PostgreSQL when
``COMPACTKIT_TEST_POSTGRES_URL`` is set (CI always sets it; see .ci/run)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, event

from compactkit.sql._schema import tables

POSTGRES_URL = os.environ.get("COMPACTKIT_TEST_POSTGRES_URL")

needs_postgres = pytest.mark.skipif(
    not POSTGRES_URL, reason="set COMPACTKIT_TEST_POSTGRES_URL to run the PostgreSQL tests"
)


@dataclass(frozen=True)
class Database:
    """Where a test's tables live."""

    name: str
    url: str
    prefix: str


def sqlite_database(directory: Path) -> Database:
    """A fresh SQLite file in ``directory``."""
    return Database("sqlite", f"sqlite:///{directory}/compactkit.db", "compactkit_")


def fast_engine(url: str) -> Engine:
    """An engine for ``url`` whose commits skip the flush to disk (SQLite
    ``synchronous=NORMAL`` in WAL mode, PostgreSQL ``synchronous_commit=off``).

    Only a power loss or an operating-system crash could lose a commit, and the tests cause
    neither: the semantics are the same, the suites just run several times faster. The crash
    and multi-process tests use URLs, so they run with compactkit's own durable defaults.
    """
    if url.startswith("sqlite"):
        engine = create_engine(url)
        event.listen(engine, "connect", lambda dbapi, _: dbapi.execute("PRAGMA synchronous=NORMAL"))
        return engine
    return create_engine(url, connect_args={"options": "-c synchronous_commit=off"})


@pytest.fixture(scope="module")
def postgres() -> Iterator[Database]:
    """PostgreSQL with a table prefix of its own, dropped afterwards."""
    if not POSTGRES_URL:
        pytest.skip("set COMPACTKIT_TEST_POSTGRES_URL to run the PostgreSQL tests")
    database = Database("postgresql", POSTGRES_URL, f"t{uuid.uuid4().hex[:10]}_")
    yield database
    drop(database)


def drop(database: Database) -> None:
    """Drop the tables of ``database.prefix``."""
    engine = create_engine(database.url)
    try:
        tables(database.prefix).metadata.drop_all(engine)  # schema_version included
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=needs_postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    """Each SQL test runs on an SQLite file and on PostgreSQL."""
    if request.param == "sqlite":
        return sqlite_database(tmp_path)
    found: Database = request.getfixturevalue("postgres")
    return found
