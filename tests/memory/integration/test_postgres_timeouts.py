"""PostgreSQL's time limits through real MemoryServices (issue 26 item 6).

- A replica frozen mid-transaction does not hold the others' writes: the "frozen" replica stands for
  one whose link to PostgreSQL paused inside a write transaction (its own store, same settings as
  every replica, locks a block's row and then sends nothing). PostgreSQL ends that session after
  ``store_idle_in_transaction_seconds``; the healthy replica's edit goes through within its deadline
  and the frozen transaction commits nothing.
- A call's deadline bounds its statements: edits whose deadline passed while they waited for a row
  lock are cancelled in PostgreSQL, so they neither keep the store's threads (another agent's read is
  answered at once) nor commit once the lock comes free.
- A replica that cannot reach its store reports NOT_SERVING, and SERVING again once it can.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import DBAPIError

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from tests.freezing_proxy import FreezingProxy
from tests.hermetic import unreachable_address
from tests.memory.integration.conftest import Stub
from tests.store_backends import empty_tables

FROZEN_FOR = 12.0
"""Seconds the frozen replica's transaction stays idle holding its lock (past the healthy call's deadline)."""
DEADLINE = 8.0


def _settings(url: str, **overrides: object) -> MemorySettings:
    return MemorySettings(
        address="127.0.0.1:0",
        database_url=url,
        retrieval_address=unreachable_address(),
        store_idle_in_transaction_seconds=2.0,
        **overrides,  # type: ignore[arg-type]
    )


@pytest.fixture
async def replicas(postgres_schema: str) -> AsyncIterator[tuple[MemoryServer, MemoryServer]]:
    empty_tables(postgres_schema)
    healthy = await start_memory_server(_settings(postgres_schema))
    frozen = await start_memory_server(_settings(postgres_schema))
    yield healthy, frozen
    await frozen.stop(0)
    await healthy.stop(0)


async def _agent_with_block(stub: Stub, name: str) -> pb.Block:
    agent = await stub.CreateAgent(
        api.CreateAgentRequest(agent=pb.Agent(name=name), blocks=[pb.Block(label="human", value="Ada")])
    )
    block: pb.Block = await stub.GetBlock(
        api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human"))
    )
    return block


def _edit(block_id: str, value: str) -> api.UpdateBlockRequest:
    return api.UpdateBlockRequest(
        ref=pb.BlockRef(block_id=block_id),
        block=pb.Block(value=value),
        update_mask=FieldMask(paths=["value"]),
    )


def _freeze_holding(frozen: MemoryServer, block_id: str, locked: threading.Event) -> list[BaseException]:
    """Lock the block's row in a write transaction of the frozen replica's store, then go silent."""
    failures: list[BaseException] = []
    try:
        with frozen.database.writing() as conn:
            conn.execute(text("UPDATE blocks SET description = 'frozen' WHERE id = :id"), {"id": block_id})
            locked.set()
            threading.Event().wait(FROZEN_FOR)  # the link paused: no statement, no commit
    except DBAPIError as ended:
        failures.append(ended)
    finally:
        locked.set()
    return failures


async def test_a_frozen_replica_does_not_hold_the_healthy_replicas_writes(
    replicas: tuple[MemoryServer, MemoryServer],
) -> None:
    healthy, frozen = replicas
    async with grpc.aio.insecure_channel(healthy.address) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        block = await _agent_with_block(stub, "a")
        locked = threading.Event()
        holder = asyncio.create_task(asyncio.to_thread(_freeze_holding, frozen, block.id, locked))
        await asyncio.to_thread(locked.wait)
        started = time.monotonic()
        edited = await stub.UpdateBlock(_edit(block.id, "Ada Lovelace"), timeout=DEADLINE)
        assert edited.value == "Ada Lovelace"
        assert time.monotonic() - started < DEADLINE
        failures = await holder
        assert failures, "the frozen transaction must not commit once PostgreSQL ended its session"
        after = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(block_id=block.id)))
        assert (after.value, after.description) == ("Ada Lovelace", "")


class RowLock:
    """A transaction of the test's own (no time limits) holding one block's row lock until released."""

    def __init__(self, url: str) -> None:
        self._engine = create_engine(url)
        self._taken, self._release = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def take(self, block_id: str) -> None:
        def hold() -> None:
            with self._engine.begin() as conn:
                self._pid = int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
                conn.execute(text("SELECT id FROM blocks WHERE id = :id FOR UPDATE"), {"id": block_id})
                self._taken.set()
                self._release.wait(30)

        self._thread = threading.Thread(target=hold, daemon=True)
        self._thread.start()
        assert self._taken.wait(10)

    def release(self) -> None:
        self._release.set()
        if self._thread is not None:
            self._thread.join(10)

    def waiting(self) -> list[str]:
        """What the sessions waiting for this lock now run."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                text("SELECT query FROM pg_stat_activity WHERE :holder = ANY(pg_blocking_pids(pid))"),
                {"holder": self._pid},
            )
            return [str(query) for query in rows.scalars()]


@pytest.fixture
def row_lock(postgres_schema: str) -> Iterator[RowLock]:
    lock = RowLock(postgres_schema)
    yield lock
    lock.release()
    lock._engine.dispose()


async def test_a_call_past_its_deadline_stops_waiting_for_a_row_lock(
    postgres_schema: str, row_lock: RowLock
) -> None:
    empty_tables(postgres_schema)
    server = await start_memory_server(_settings(postgres_schema, db_workers=2))
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            locked, other = await _agent_with_block(stub, "locked"), await _agent_with_block(stub, "other")
            await asyncio.to_thread(row_lock.take, locked.id)
            edits = [stub.UpdateBlock(_edit(locked.id, f"late {i}"), timeout=0.5) for i in range(4)]
            outcomes = await asyncio.gather(*edits, return_exceptions=True)
            # The statement is cancelled at the deadline: the client's deadline or the server's answer
            # (STORE_UNAVAILABLE, sqlstate 57014) comes first.
            assert all(
                isinstance(o, grpc.aio.AioRpcError)
                and o.code() in {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE}
                for o in outcomes
            ), outcomes
            started = time.monotonic()
            read = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(block_id=other.id)), timeout=5)
            waited = time.monotonic() - started
            assert read.value == "Ada"
            assert waited < 1.0, (
                f"another agent's read waited {waited:.1f} s for store threads held by the lock"
            )
            assert await _none_waiting(row_lock, within=3.0)
            await asyncio.to_thread(row_lock.release)
            await asyncio.sleep(0.5)
            after = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(block_id=locked.id)))
            assert after.value == "Ada", "an edit whose caller gave up was committed later"
    finally:
        await server.stop(0)


async def _none_waiting(lock: RowLock, within: float) -> bool:
    """Whether no session waits for the lock within ``within`` seconds (a statement's timeout counts
    from that statement's start, and a loaded machine delivers it late)."""
    started = time.monotonic()
    while await asyncio.to_thread(lock.waiting):
        if time.monotonic() - started > within:
            return False
        await asyncio.sleep(0.05)
    return True


async def _health(address: str) -> int:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=""), timeout=2
        )
        return int(reply.status)


async def _health_becomes(address: str, status: int, within: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < within:
        if await _health(address) == status:
            return time.monotonic() - started
        await asyncio.sleep(0.1)
    raise AssertionError(f"health did not become {health_pb2.HealthCheckResponse.ServingStatus.Name(status)}")


async def test_a_replica_that_cannot_reach_its_store_reports_not_serving(postgres_schema: str) -> None:
    url = make_url(postgres_schema)
    proxy = FreezingProxy(url.host or "127.0.0.1", url.port or 5432)
    await proxy.start()
    through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    server = await start_memory_server(_settings(through, store_probe_seconds=0.5))
    try:
        assert await _health(server.address) == health_pb2.HealthCheckResponse.SERVING
        proxy.freeze()  # the link stops carrying bytes; no connection is closed
        await _health_becomes(server.address, health_pb2.HealthCheckResponse.NOT_SERVING, within=5)
        proxy.thaw()
        await _health_becomes(server.address, health_pb2.HealthCheckResponse.SERVING, within=10)
    finally:
        proxy.thaw()
        await server.stop(0)
        await proxy.stop()
