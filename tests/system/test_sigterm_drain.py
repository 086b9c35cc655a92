"""SIGTERM drains a real ``strata-memory`` process: the promise of ``strata_serving.server``.

The process is started through its public entry point (``python -m strata_memory.main``) and sent
SIGTERM while one search is in flight. Then, in order: health reports NOT_SERVING at once while
new calls are still answered (the drain period), after the drain new calls are refused, the search
in flight finishes with its answer (the grace period), and the process exits 0. A process whose
SIGTERM is not wired to the drain dies at once (exit -15, nothing answered); one that skips the
drain refuses calls at once; one that skips the grace cuts the search off.

The search is held in flight by the one stand-in here: a RetrievalService that answers Search
after ``SLOW_SEARCH`` seconds (the fault injected); MemoryService itself is the real process.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NoReturn

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from tests.memory_process import MemoryProcess

DRAIN = 3.0
SLOW_SEARCH = DRAIN + 2.0
SERVICE = "strata.memory.v1.MemoryService"


class SlowRetrieval(retrieval_pb2_grpc.RetrievalServiceServicer):
    """Answers Search (with no hits) only after ``SLOW_SEARCH`` seconds; ``searching`` is set when
    a search arrives. Every other call is refused UNIMPLEMENTED (the outbox just retries its jobs)."""

    def __init__(self) -> None:
        self.searching = asyncio.Event()

    async def Search(self, request: Any, context: Any) -> rpb.SearchResponse:  # noqa: N802
        self.searching.set()
        await asyncio.sleep(SLOW_SEARCH)
        return rpb.SearchResponse()

    async def UpsertDocuments(self, request: Any, context: Any) -> rpb.UpsertDocumentsResponse:  # noqa: N802
        await _refuse(context)

    async def DeleteDocuments(self, request: Any, context: Any) -> rpb.DeleteDocumentsResponse:  # noqa: N802
        await _refuse(context)

    async def FindDocuments(self, request: Any, context: Any) -> rpb.FindDocumentsResponse:  # noqa: N802
        await _refuse(context)

    async def ListDocumentIds(self, request: Any, context: Any) -> rpb.ListDocumentIdsResponse:  # noqa: N802
        await _refuse(context)

    async def Stats(self, request: Any, context: Any) -> rpb.StatsResponse:  # noqa: N802
        await _refuse(context)


async def _refuse(context: Any) -> NoReturn:
    await context.abort(grpc.StatusCode.UNIMPLEMENTED, "not in this test")
    raise AssertionError("abort returned")


@pytest.fixture
async def slow_retrieval() -> AsyncIterator[tuple[str, SlowRetrieval]]:
    server = grpc.aio.server()
    servicer = SlowRetrieval()
    retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        await server.stop(0)


async def _status(address: str) -> int | str:
    """The health status a fresh connection reads, or the error code when none answers."""
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE), timeout=2
            )
        except grpc.aio.AioRpcError as error:
            return error.code().name
        return int(reply.status)


async def _list_agents(address: str) -> str:
    """A call on a fresh connection: ``OK`` or the code it was refused with."""
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            await memory_service_pb2_grpc.MemoryServiceStub(channel).ListAgents(
                api.ListAgentsRequest(), timeout=2
            )
        except grpc.aio.AioRpcError as error:
            return error.code().name
        return "OK"


@pytest.mark.timeout(120)
async def test_sigterm_reports_not_serving_keeps_answering_for_the_drain_then_finishes_in_flight_calls(
    tmp_path: Path, slow_retrieval: tuple[str, SlowRetrieval]
) -> None:
    retrieval_address, retrieval = slow_retrieval
    memory = MemoryProcess(
        f"sqlite:///{tmp_path}/memory.sqlite3",
        retrieval_address=retrieval_address,
        drain_seconds=str(DRAIN),
        shutdown_grace_seconds=str(SLOW_SEARCH + 10),
        retrieval_timeout_seconds=str(SLOW_SEARCH + 10),
    )
    try:
        await memory.wait_serving()
        async with grpc.aio.insecure_channel(memory.address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="sam")), timeout=10)
            archive = pb.Archive(name="notes")
            await stub.CreateArchive(api.CreateArchiveRequest(archive=archive, agent_id=agent.id), timeout=10)
            in_flight = asyncio.ensure_future(
                stub.SearchArchival(
                    api.SearchArchivalRequest(agent_id=agent.id, query="anything"), timeout=60
                )
            )
            await asyncio.wait_for(retrieval.searching.wait(), 20)
            loop = asyncio.get_running_loop()
            memory.process.send_signal(signal.SIGTERM)
            sent = loop.time()

            # The drain: NOT_SERVING at once, still answering.
            await asyncio.sleep(0.5)
            assert await _status(memory.address) == health_pb2.HealthCheckResponse.NOT_SERVING
            assert await _list_agents(memory.address) == "OK"
            assert loop.time() - sent < DRAIN, "the checks above took longer than the drain"
            assert not in_flight.done()

            # After the drain: new calls refused, the search in flight still answered.
            await asyncio.sleep(DRAIN + 0.5 - (loop.time() - sent))
            assert await _list_agents(memory.address) == "UNAVAILABLE"
            reply = await in_flight
            assert list(reply.hits) == []
            assert loop.time() - sent >= SLOW_SEARCH - 1.0
        returncode = await asyncio.get_running_loop().run_in_executor(None, memory.process.wait, 30)
        assert returncode == 0
    finally:
        memory.kill()
