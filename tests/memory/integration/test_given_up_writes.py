"""A write whose call ended (deadline passed, client cancelled) while it waited for the store writes
nothing: the caller was told it failed, and would retry it.

Another writer holds the store (on SQLite its write lock, on PostgreSQL the blocks table) while a memory
edit is called with a short deadline; the call ends DEADLINE_EXCEEDED while the edit waits. Once the
server's handler has ended too (its in-flight gauge), the store is released, and the edit must not go
on to commit: a caller that retried the append would have it twice. The server is stopped before the
store is read, so every transaction it started has ended.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from functools import partial

import grpc
from sqlalchemy import select

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from strata_memory.store import schema
from strata_memory.store.database import Database
from strata_serving.metrics import RPC_LABELS, rpc_labels
from tests.hermetic import unreachable_address
from tests.memory.integration.conftest import expect_error, new_agent
from tests.security import faults

DEADLINE = 60.0
EXECUTE_TOOL = "/strata.memory.v1.MemoryService/ExecuteTool"


@contextlib.contextmanager
def store_held(database: Database) -> Iterator[None]:
    """Another writer holds what a block edit must take until the block exits."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with database.writing() as connection:
            if not database.is_sqlite:
                connection.exec_driver_sql("LOCK TABLE blocks IN EXCLUSIVE MODE")  # reads still run
            held.set()
            release.wait(DEADLINE)

    holder = threading.Thread(target=hold, name="other-writer")
    holder.start()
    try:
        assert held.wait(DEADLINE)
        yield
    finally:
        release.set()
        holder.join(DEADLINE)


async def none_in_flight(server: MemoryServer, method: str) -> bool:
    labels = dict(zip(RPC_LABELS, rpc_labels(method, "unary"), strict=True))
    return server.grpc.registry.get_sample_value("strata_rpc_in_flight", labels) == 0


def human_values(url: str) -> list[str]:
    database = Database(url)
    try:
        with database.reading() as connection:
            query = select(schema.blocks.c.value).where(schema.blocks.c.label == "human")
            return list(connection.execute(query).scalars())
    finally:
        database.close()


async def test_an_edit_whose_deadline_passed_while_it_waited_for_the_store_changes_nothing(
    store_url: str,
) -> None:
    settings = MemorySettings(
        address="127.0.0.1:0",
        database_url=store_url,
        retrieval_address=unreachable_address(),
        metrics_address="127.0.0.1:0",
    )
    server = await start_memory_server(settings)
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            agent = await new_agent(stub, pb.Block(label="human", value="Name: Bob", limit=5000))
            append = api.ExecuteToolRequest(
                agent_id=agent.id,
                tool_name="core_memory_append",
                arguments=json.dumps({"label": "human", "content": "Likes tea"}),
            )
            with store_held(server.database):
                await expect_error(stub.ExecuteTool(append, timeout=1.0), grpc.StatusCode.DEADLINE_EXCEEDED)
                # the server gave the call up as well
                assert await faults.wait_until(partial(none_in_flight, server, EXECUTE_TOOL), within=DEADLINE)
    finally:
        await server.stop(0)  # waits for the store's threads: the given-up edit has run its course
    assert human_values(store_url) == ["Name: Bob"]
