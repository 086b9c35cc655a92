"""Row locks on PostgreSQL: two replicas racing one read-modify-write take turns (DESIGN.md "Concurrency":
a stale etag is ABORTED and changes nothing; concurrent writes without etags are serialised, none is lost;
an on_edit agent's stored prompt is current after each edit).

SQLite serialises every write transaction (``BEGIN IMMEDIATE``), so only PostgreSQL shows whether the
operations take their row locks (``SELECT … FOR UPDATE``) before reading what they change. Each test is
deterministic: replica A's write runs to its commit and is held there (its row locks taken, nothing
committed); replica B's call starts and the test waits, polling PostgreSQL's lock table with a deadline,
until B waits on A; then A commits and B finishes. Without the lock B would read the state before A's
commit and act on it. The tests need ``STRATA_TEST_POSTGRES_URL`` (skipped without it, as
``tests/store_backends.py`` says).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Connection

from strata_memory.domain.errors import EtagMismatch
from strata_memory.domain.model import Block
from strata_memory.operations.agents import Agents
from strata_memory.operations.blocks import BlockLocator, Blocks
from strata_memory.operations.prompts import Prompts
from strata_memory.store.database import Database
from strata_memory.store.records import AgentRecord, Page
from tests.memory.operations.conftest import TENANT, agent_record, clock
from tests.store_backends import empty_tables, postgres_schema

__all__ = ["postgres_schema"]  # the fixture, used by name

DEADLINE = 60.0  # seconds: only reached when a step never happens (the test then fails saying which)


@dataclass
class Replica:
    """One MemoryService's operations over its own engines (as a replica process has)."""

    db: Database
    prompts: Prompts
    agents: Agents
    blocks: Blocks


def _replica(url: str) -> Replica:
    db = Database(url, max_workers=2)
    prompts = Prompts(db, clock)
    return Replica(db, prompts, Agents(db, prompts), Blocks(db, prompts))


@pytest.fixture
def replicas(postgres_schema: str) -> Iterator[tuple[Replica, Replica]]:
    empty_tables(postgres_schema)
    a, b = _replica(postgres_schema), _replica(postgres_schema)
    yield a, b
    a.db.close()
    b.db.close()


class HeldAtCommit:
    """Holds ``db``'s next write transaction at its commit, its work done and its row locks held,
    until :meth:`release` (a fault injected through SQLAlchemy's ``commit`` event)."""

    def __init__(self, db: Database) -> None:
        self._engine = db._writer  # the store's own write engine
        self.held = threading.Event()
        self._released = threading.Event()
        self.backend_pid = 0

    def __enter__(self) -> HeldAtCommit:
        event.listen(self._engine, "commit", self._hold)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        event.remove(self._engine, "commit", self._hold)

    def _hold(self, conn: Connection) -> None:
        if self.held.is_set():
            return  # only the first transaction is held
        self.backend_pid = int(conn.connection.dbapi_connection.info.backend_pid)  # type: ignore[union-attr]
        self.held.set()
        self._released.wait(DEADLINE)

    def release(self) -> None:
        self._released.set()
        self.held.set()  # a later commit is not held (and a waiter for the hold stops waiting)


async def _race(
    url: str, held: HeldAtCommit, first: Awaitable[Any], second: Callable[[], Awaitable[Any]]
) -> tuple[Any, Any]:
    """Run ``first`` (a call on the replica ``held`` holds) to its commit, start ``second()`` on the
    other replica, wait until it waits on a lock ``first`` holds, then let ``first`` commit.
    Returns each call's outcome: its value or the exception it raised."""
    a = asyncio.ensure_future(first)
    b: asyncio.Future[Any] | None = None
    try:
        at_commit = asyncio.ensure_future(asyncio.to_thread(held.held.wait, DEADLINE))
        await asyncio.wait({a, at_commit}, return_when=asyncio.FIRST_COMPLETED)
        assert held.held.is_set(), f"the first call ended before its commit: {a.result()!r}"
        b = asyncio.ensure_future(second())
        await _waits_on(url, held.backend_pid)
    finally:
        held.release()
    assert b is not None
    return await asyncio.gather(a, b, return_exceptions=True)


async def _waits_on(url: str, holder_pid: int) -> None:
    """Return once some backend waits on a lock that backend ``holder_pid`` holds (polled with a deadline)."""
    engine = create_engine(url)
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE CAST(:pid AS integer) = ANY(pg_blocking_pids(pid))"
    )

    def waiting() -> bool:
        with engine.connect() as conn:
            return int(conn.execute(query, {"pid": holder_pid}).scalar_one()) > 0

    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE
        while not await asyncio.to_thread(waiting):
            assert loop.time() < deadline, "the second replica never waited on the first one's locks"
            await asyncio.sleep(0.01)
    finally:
        engine.dispose()


async def _agent(replica: Replica, *blocks: Block) -> AgentRecord:
    return await replica.agents.create(agent_record(), list(blocks))


async def test_two_updates_without_etags_of_one_block_are_serialised_and_both_kept(
    postgres_schema: str, replicas: tuple[Replica, Replica]
) -> None:
    a, b = replicas
    agent = await _agent(a, Block("human", "Bob", limit=100))
    human = BlockLocator(agent_id=agent.id, label="human")
    with HeldAtCommit(a.db) as held:
        first, second = await _race(
            postgres_schema,
            held,
            a.blocks.update(TENANT, human, {"value": "Bob likes tea"}, "", actor="replica-a"),
            lambda: b.blocks.update(TENANT, human, {"description": "About the user"}, "", actor="replica-b"),
        )
    assert first.block.version == 2
    # B waited for A's commit and then changed what A wrote: no etag was sent, so nothing is ABORTED
    assert not isinstance(second, BaseException), f"the second update failed: {second!r}"
    assert second.block.version == 3
    stored = await a.blocks.get(TENANT, human)
    assert (stored.block.value, stored.block.description, stored.block.version) == (
        "Bob likes tea",
        "About the user",
        3,
    )
    versions = await a.blocks.versions(TENANT, human, Page())
    assert sorted((v.version, v.actor) for v in versions) == [
        (1, agent.id),
        (2, "replica-a"),
        (3, "replica-b"),
    ]


async def test_a_detach_with_an_etag_an_edit_made_stale_meanwhile_is_aborted_and_changes_nothing(
    postgres_schema: str, replicas: tuple[Replica, Replica]
) -> None:
    a, b = replicas
    agent = await _agent(a, Block("human", "Bob", limit=100), Block("persona", "Sam", limit=100))
    human = BlockLocator(agent_id=agent.id, label="human")
    read = await b.blocks.get(TENANT, human)  # B read the block at version 1 and detaches "if unchanged"
    with HeldAtCommit(a.db) as held:
        edited, detached = await _race(
            postgres_schema,
            held,
            a.blocks.update(TENANT, human, {"value": "Bob likes tea"}, "", actor="replica-a"),
            lambda: b.blocks.detach(TENANT, agent.id, read.block.id, read.etag),
        )
    assert edited.block.version == 2
    assert isinstance(detached, EtagMismatch), f"the detach was not aborted: {detached!r}"
    assert (await a.agents.get(TENANT, agent.id)).block_labels == ("human", "persona")
    assert "Bob likes tea" in (await a.prompts.get(TENANT, agent.id, "default")).prompt.text


async def test_edits_of_two_blocks_of_one_agent_at_once_leave_its_stored_prompt_current(
    postgres_schema: str, replicas: tuple[Replica, Replica]
) -> None:
    a, b = replicas
    agent = await _agent(a, Block("human", "Bob", limit=100), Block("persona", "Sam", limit=100))
    human = BlockLocator(agent_id=agent.id, label="human")
    persona = BlockLocator(agent_id=agent.id, label="persona")
    with HeldAtCommit(a.db) as held:
        first, second = await _race(
            postgres_schema,
            held,
            a.blocks.update(TENANT, human, {"value": "Bob likes tea"}, "", actor="a"),
            lambda: b.blocks.update(TENANT, persona, {"value": "Sam helps"}, "", actor="b"),
        )
    assert not isinstance(first, BaseException), first
    assert not isinstance(second, BaseException), second
    # the agent's prompt was recompiled by B after A's commit (B waited on the agent's row), so it
    # holds both edits and is not stale
    for replica in (a, b):
        view = await replica.prompts.get(TENANT, agent.id, "default")
        assert "Bob likes tea" in view.prompt.text
        assert "Sam helps" in view.prompt.text
        assert not view.stale
