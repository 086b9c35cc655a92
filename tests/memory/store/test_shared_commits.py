"""On SQLite, writes sent with ``write_together`` while a transaction holds the lock run next in one
transaction (a savepoint each) with one commit; each caller is answered after that commit with its own
result or error, and a write that fails changes nothing while the others stand."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from strata_memory.store import schema
from strata_memory.store.database import Database
from tests.memory.store.sent import first_keyword, recorded
from tests.security import faults

HANG = 30.0  # a hang detector only


class Refused(Exception):
    pass


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/m.sqlite3")
    database.migrate()
    yield database
    database.close()


def key(conn: Any, name: str) -> str:
    conn.execute(
        insert(schema.api_keys).values(
            key_id=name, tenant_id="t", secret_sha256=name, display_name=name, created_us=0
        )
    )
    return name


def key_then_refuse(conn: Any, name: str) -> str:
    key(conn, name)
    raise Refused(name)


def keys(db: Database) -> list[str]:
    with db.reading() as conn:
        return sorted(conn.execute(select(schema.api_keys.c.key_id)).scalars())


@asynccontextmanager
async def lock_held(db: Database) -> AsyncIterator[None]:
    """Another transaction of this process holds the write lock until the block ends."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with db.writing():
            held.set()
            release.wait(HANG)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(HANG)
    try:
        yield
    finally:
        release.set()
        await asyncio.to_thread(holder.join, HANG)


async def queued(db: Database, count: int) -> None:
    """Until ``count`` writes wait for the next shared transaction while one is running (blocked on
    the held lock); ``count`` 0: the writes sent so far were taken by it. A hang detector only."""

    async def ready() -> bool:
        running = db._committer is not None and not db._committer.done()
        return running and len(db._sharing) == count

    assert await faults.wait_until(ready, within=HANG)


async def test_writes_that_wait_together_share_one_transaction_and_a_refused_one_changes_nothing(
    db: Database,
) -> None:
    with recorded([db._writer], lambda s: first_keyword(s) if s.startswith("BEGIN") else None) as begun:
        async with lock_held(db):
            first = asyncio.ensure_future(db.write_together(partial(key, name="first")))
            await queued(db, 0)  # the first went to run alone and waits for the lock
            names = ["a", "b", "refused", "c"]
            writes = [
                asyncio.ensure_future(
                    db.write_together(partial(key_then_refuse if name == "refused" else key, name=name))
                )
                for name in names
            ]
            await queued(db, len(names))
        assert await first == "first"
        outcomes = await asyncio.gather(*writes, return_exceptions=True)
    assert outcomes[:2] == ["a", "b"]
    assert outcomes[3] == "c"
    assert isinstance(outcomes[2], Refused)
    assert keys(db) == ["a", "b", "c", "first"]
    assert begun == ["BEGIN", "BEGIN", "BEGIN"]  # the holder's, the first's, then one for the four


async def test_a_store_error_in_one_write_leaves_the_others_to_commit_alone(db: Database) -> None:
    await db.write(partial(key, name="taken"))
    async with lock_held(db):
        first = asyncio.ensure_future(db.write_together(partial(key, name="first")))
        await queued(db, 0)
        writes = [
            asyncio.ensure_future(db.write_together(partial(key, name=name))) for name in ("d", "taken", "e")
        ]
        await queued(db, 3)
    await first
    outcomes = await asyncio.gather(*writes, return_exceptions=True)
    assert outcomes[0] == "d"
    assert outcomes[2] == "e"
    assert isinstance(outcomes[1], IntegrityError)  # the duplicate key, as write() would raise it
    assert keys(db) == ["d", "e", "first", "taken"]


async def test_a_write_that_finds_no_transaction_running_commits_alone(db: Database) -> None:
    assert await db.write_together(partial(key, name="alone")) == "alone"
    assert keys(db) == ["alone"]


async def test_a_write_whose_caller_gave_up_while_it_waited_is_rolled_back(db: Database) -> None:
    async with lock_held(db):
        first = asyncio.ensure_future(db.write_together(partial(key, name="first")))
        await queued(db, 0)
        writes = {
            name: asyncio.ensure_future(db.write_together(partial(key, name=name)))
            for name in ("f", "gone", "g")
        }
        await queued(db, 3)
        writes["gone"].cancel()
    await first
    assert await writes["f"] == "f"
    assert await writes["g"] == "g"
    assert writes["gone"].cancelled()
    assert keys(db) == ["f", "first", "g"]
