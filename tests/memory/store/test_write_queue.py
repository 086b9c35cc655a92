"""On SQLite a process's write transactions queue on an in-process lock before they take SQLite's:
a writer waiting behind another does not spin in SQLite's busy handler (which sleeps in growing steps
and so oversleeps the moment the lock comes free), it starts once the other one committed. Another
process's writer (here: another ``Database`` on the same file) is still kept out by SQLite's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, insert, select
from sqlalchemy.exc import DBAPIError

from strata_memory.store import schema
from strata_memory.store.database import Database
from strata_memory.store.failures import StoreUnavailable, storage_failure

HANG = 30.0  # a hang detector only


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/m.sqlite3")
    database.migrate()
    yield database
    database.close()


def key(conn: Any, name: str) -> None:
    conn.execute(
        insert(schema.api_keys).values(
            key_id=name, tenant_id="t", secret_sha256=name, display_name=name, created_us=0
        )
    )


def test_a_writer_behind_another_begins_only_once_the_other_committed(db: Database) -> None:
    events: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith("BEGIN IMMEDIATE"):
            events.append(f"begin {threading.current_thread().name}")

    event.listen(db._writer, "before_cursor_execute", seen)
    holding, second_started = threading.Event(), threading.Event()

    def second() -> None:
        second_started.set()
        with db.writing() as conn:
            key(conn, "second")

    other = threading.Thread(target=second, name="second")
    with db.writing() as conn:
        key(conn, "first")
        other.start()
        assert second_started.wait(HANG)
        holding.wait(0.3)  # the second writer reaches the lock while this one holds it
    events.append("first committed")
    other.join(HANG)
    assert events[-2:] == ["first committed", "begin second"]  # before: it was waiting inside SQLite
    with db.reading() as conn:
        assert sorted(conn.execute(select(schema.api_keys.c.key_id)).scalars()) == ["first", "second"]


def test_another_process_writer_is_still_kept_out_by_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/m.sqlite3"
    here, elsewhere = Database(url, busy_timeout_ms=50), Database(url, busy_timeout_ms=50)
    here.migrate()
    try:
        with here.writing() as conn:
            key(conn, "here")
            with pytest.raises(DBAPIError) as refused, elsewhere.writing() as other:
                key(other, "elsewhere")
        assert isinstance(storage_failure(refused.value), StoreUnavailable)  # SQLITE_BUSY
    finally:
        here.close()
        elsewhere.close()
