"""Appends that reach the store together share its transaction (SQLite), and each is still answered
with its own outcome: through a real server, appends sent while another writer holds the store commit
in one transaction once it is released, a failing one changes nothing (its sequence numbers are not
used up), and the agent's messages are numbered without gaps or repeats."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer
from strata_memory.store.database import Database
from tests.memory.integration.conftest import Stub, new_agent
from tests.memory.store.sent import recorded
from tests.security import faults

HANG = 60.0  # a hang detector only
USER = pb.MESSAGE_ROLE_USER


@contextlib.contextmanager
def store_held(database: Database) -> Iterator[None]:
    """Another writer of this process holds the store (SQLite's write lock) until the block exits."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with database.writing():
            held.set()
            release.wait(HANG)

    holder = threading.Thread(target=hold, name="other-writer")
    holder.start()
    try:
        assert held.wait(HANG)
        yield
    finally:
        release.set()
        holder.join(HANG)


async def sharing(database: Database, count: int) -> None:
    """Until ``count`` appends wait for the next shared transaction while one is running (blocked on
    the held store); ``count`` 0: the appends sent so far were taken by it. A hang detector only."""

    async def ready() -> bool:
        running = database._committer is not None and not database._committer.done()
        return running and len(database._sharing) == count

    assert await faults.wait_until(ready, within=HANG)


def append(stub: Stub, agent_id: str, count: int, conversation_id: str = "") -> asyncio.Future[Any]:
    messages = [pb.Message(role=USER, content=f"m{i}") for i in range(count)]
    request = api.AppendMessagesRequest(agent_id=agent_id, conversation_id=conversation_id, messages=messages)
    return asyncio.ensure_future(stub.AppendMessages(request))


async def test_appends_that_wait_together_commit_together_each_with_its_own_outcome(
    memory_server: MemoryServer, stub: Stub
) -> None:
    database = memory_server.database
    if not database.is_sqlite:
        pytest.skip("appends share a transaction on SQLite only")
    agent = await new_agent(stub)
    sizes = [1, 2, 3, 1, 2]
    with recorded([database._writer], lambda s: " ".join(s.split()[:3])) as sent:
        with store_held(database):
            first = append(stub, agent.id, 2)
            await sharing(database, 0)  # taken alone: it waits for the store
            calls = [append(stub, agent.id, n) for n in sizes[:2]]
            calls.append(append(stub, agent.id, 2, conversation_id="nope"))  # refused after its UPDATE
            calls += [append(stub, agent.id, n) for n in sizes[2:]]
            await sharing(database, len(calls))
        stored = [m.sequence for m in (await first).messages]
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
    refused = outcomes.pop(2)
    assert isinstance(refused, grpc.aio.AioRpcError)
    assert refused.code() == grpc.StatusCode.NOT_FOUND
    for response in outcomes:
        assert not isinstance(response, BaseException), response
        stored += [m.sequence for m in response.messages]
    assert sorted(stored) == list(range(1, 2 + sum(sizes) + 1))  # no gap where the refused one was
    listed = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent.id, page_size=100))
    assert sorted(m.sequence for m in listed.messages) == sorted(stored)
    transactions = " ".join(sent).split("BEGIN IMMEDIATE")
    assert sum("INSERT INTO messages" in t for t in transactions) == 2  # the first's, then the rest's
