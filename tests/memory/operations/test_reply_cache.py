"""Kept replies (``operations/reply_cache.py``) and the glances that key them (``store/glance.py``), on a
real SQLite store: a reply is reused only under the stamps read now, and a purge leaves no copy."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import bindparam, update

from strata_memory.domain.errors import BlockNotFound
from strata_memory.domain.model import Block
from strata_memory.domain.purge import PurgeKind, PurgeTarget
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.operations.blocks import BlockLocator
from strata_memory.operations.purge import Purger
from strata_memory.store import schema
from strata_memory.store.database import Database
from strata_memory.store.glance import Glances, sqlite_path
from tests.hermetic import unreachable_address
from tests.memory.operations.conftest import TENANT, Ops, agent_record

WORD = "thistlewick"


def _value(record: object) -> str:
    return str(record.block.value)  # type: ignore[attr-defined]


async def test_a_block_reply_is_kept_and_reused_only_under_its_stamp(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(system="Sys"), [Block("human", "Bob", limit=100)])
    where = BlockLocator(agent_id=agent.id, label="human")
    assert await ops.blocks.reply(TENANT, where, _value) == "Bob"  # read in full; its key is warm now
    assert await ops.blocks.reply(TENANT, where, _value) == "Bob"
    assert ops.prompts.replies.hits == 1
    assert ops.db.glances.ran == 1
    block_id = (await ops.blocks.get(TENANT, where)).block.id
    # Another connection writes the row keeping its version (a store restored from a backup): the
    # write time still moves, so the stamp misses and the block is read afresh.
    with ops.db.writing() as conn:
        conn.execute(
            update(schema.blocks)
            .where(schema.blocks.c.id == bindparam("b"))
            .values(value="Eve", updated_us=1),
            {"b": block_id},
        )
    assert await ops.blocks.reply(TENANT, where, _value) == "Eve"
    # ... and keeping its write time but not its version.
    with ops.db.writing() as conn:
        conn.execute(
            update(schema.blocks)
            .where(schema.blocks.c.id == bindparam("b"))
            .values(value="Ann", version=schema.blocks.c.version + 1),
            {"b": block_id},
        )
    assert await ops.blocks.reply(TENANT, where, _value) == "Ann"
    assert await ops.blocks.reply(TENANT, BlockLocator(block_id=block_id), _value) == "Ann"
    for _ in range(2):  # another tenant's stamp is never the block's: not found, warm or not
        with pytest.raises(BlockNotFound):
            await ops.blocks.reply("another-tenant", BlockLocator(block_id=block_id), _value)


async def test_purging_a_block_drops_every_reply_showing_it(ops: Ops) -> None:
    agent = await ops.agents.create(
        agent_record(system="Sys"), [Block("human", f"{WORD} likes tea", limit=100)]
    )
    where = BlockLocator(agent_id=agent.id, label="human")
    for _ in range(2):
        await ops.blocks.reply(TENANT, where, _value)
        await ops.prompts.render_reply(TENANT, agent.id, None, lambda text, _mode: text)
        await ops.prompts.get_reply(TENANT, agent.id, "default", lambda view: view.prompt.text)
    assert ops.prompts.replies.holding(WORD) == 3
    bare = await ops.agents.create(agent_record(system=f"Sys {WORD}-2"), [])  # no block names its reply
    for _ in range(2):
        await ops.prompts.get_reply(TENANT, bare.id, "default", lambda view: view.prompt.text)
    assert ops.prompts.replies.holding(f"{WORD}-2") == 1
    block_id = (await ops.blocks.get(TENANT, where)).block.id
    purger = Purger(ops.db, ops.prompts, RetrievalConnection(unreachable_address(), timeout=0.5))

    await purger.purge(TENANT, PurgeTarget(PurgeKind.BLOCK, block_id))

    assert ops.prompts.replies.holding(WORD) == 0  # nor the reply of an agent with no blocks


def _stamp(raw: sqlite3.Connection) -> int:
    return int(raw.execute("SELECT count(*) FROM agents").fetchone()[0])


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_glance_runs_only_for_a_key_read_lately(db: Database) -> None:
    clock = _Clock()
    glances = Glances(sqlite_path(db.url), warm_seconds=30, clock=clock)
    assert glances.run("k", _stamp) is None  # never read: the pool reads it
    glances.warm("k")
    assert glances.run("k", _stamp) == 0
    assert glances.run("other", _stamp) is None
    clock.now += 31
    assert glances.run("k", _stamp) is None  # read too long ago: its pages may have left memory
    assert (glances.ran, glances.declined) == (1, 3)
    glances.close()


def _evict(path: str) -> None:
    """Drop the store's pages from the OS page cache (this file only): its next reads go to the disk."""
    for each in (path, f"{path}-wal"):
        if not Path(each).exists():
            continue
        fd = os.open(each, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _cold_rows(raw: sqlite3.Connection) -> int:
    """A statement over every page of the store, on a connection that has not read them yet."""
    return int(raw.execute("SELECT count(*) FROM blocks WHERE value LIKE '%zz%'").fetchone()[0])


def test_a_glance_that_waited_for_the_disk_sends_every_read_to_the_pool_for_a_while(db: Database) -> None:
    clock = _Clock()
    path = sqlite_path(db.url)
    assert path is not None
    glances = Glances(path, slow_seconds=0.0, pause_seconds=5, clock=clock)  # any disk read is "slow"
    glances.warm("k")
    glances.warm("j")
    _evict(path)
    assert glances.run("k", _cold_rows) == 0  # its result stands; what follows is paused
    assert glances.slow == 1
    assert glances.run("j", _stamp) is None
    clock.now += 6
    assert glances.run("j", _stamp) == 0


def test_a_glance_slow_without_the_disk_pauses_nothing(db: Database) -> None:
    path = sqlite_path(db.url)
    glances = Glances(path, slow_seconds=0.001)
    glances.warm("k")

    def busy(raw: sqlite3.Connection) -> int:  # CPU only (the loop's thread preempted, say)
        found = _stamp(raw)
        count = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 300000) "
        raw.execute(count + "SELECT count(*) FROM n").fetchone()
        return found

    assert glances.run("k", busy) == 0
    assert glances.slow == 0
    assert glances.run("k", _stamp) == 0
    glances.close()


def test_a_glance_that_meets_a_lock_is_declined_at_once(db: Database) -> None:
    glances = Glances(sqlite_path(db.url))
    glances.warm("k")

    def locked(raw: sqlite3.Connection) -> int:  # fault injected: what SQLite raises with no busy timeout
        raise sqlite3.OperationalError("database is locked")

    assert glances.run("k", locked) is None
    assert glances.run("k", _stamp) == 0
    glances.close()


def test_the_glance_connection_cannot_write(db: Database) -> None:
    glances = Glances(sqlite_path(db.url))
    glances.warm("k")
    assert glances.run("k", lambda raw: raw.execute("DELETE FROM agents").rowcount) is None
    assert glances.run("k", _stamp) == 0
    glances.close()


def test_postgresql_and_memory_databases_have_no_glances() -> None:
    assert sqlite_path("postgresql+psycopg://postgres@127.0.0.1:5432/test") is None
    assert sqlite_path("sqlite:///:memory:") is None
    glances = Glances(None)
    glances.warm("k")
    assert glances.run("k", _stamp) is None
    assert not glances.enabled
