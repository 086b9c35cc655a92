"""A hostile server cannot keep a client paging forever (``strata/client/paging.py``): a repeated
``next_page_token`` or more pages than the client's cap ends the listing with ``PagingError``, in
the sync and async clients, the CLI and MemFS alike. The server here is a real gRPC server whose
ListAgents and ListBlocks never end; after ``SAFETY_STOP`` calls it refuses, so a client without the
guard fails the test instead of hanging it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from strata.cli.main import main
from strata.client import AsyncMemoryClient, MemoryClient
from strata.client.paging import MAX_PAGES, PagingError
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb

SAFETY_STOP = 500


class EndlessPages(memory_service_pb2_grpc.MemoryServiceServicer):
    """Answers every page with one item and a next token: the same one, or a new one each time."""

    def __init__(self) -> None:
        self.calls = 0
        self.repeat = True
        self._fresh = itertools.count()

    def _token(self, context: grpc.ServicerContext) -> str:
        self.calls += 1
        if self.calls > SAFETY_STOP:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "the test's safety stop")
        return "same-token" if self.repeat else f"token-{next(self._fresh)}"

    def ListBlocks(  # noqa: N802 - the gRPC method name
        self, request: api.ListBlocksRequest, context: grpc.ServicerContext
    ) -> api.ListBlocksResponse:
        token = self._token(context)
        block = pb.Block(id=f"block-{self.calls}", label=f"b{self.calls}", value="v", description="d")
        return api.ListBlocksResponse(blocks=[block], next_page_token=token)

    def ListAgents(  # noqa: N802 - the gRPC method name
        self, request: api.ListAgentsRequest, context: grpc.ServicerContext
    ) -> api.ListAgentsResponse:
        token = self._token(context)
        return api.ListAgentsResponse(agents=[pb.Agent(id=f"agent-{self.calls}")], next_page_token=token)


@pytest.fixture
def endless() -> Iterator[tuple[str, EndlessPages]]:
    servicer = EndlessPages()  # type: ignore[abstract]  # the other methods answer UNIMPLEMENTED
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    memory_service_pb2_grpc.add_MemoryServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", servicer
    server.stop(0)


def test_a_repeated_token_ends_the_listing_after_two_calls(endless: tuple[str, EndlessPages]) -> None:
    address, servicer = endless
    with MemoryClient(address, timeout=5) as client, pytest.raises(PagingError) as caught:
        list(client.iter_blocks(agent_id="agent-1"))
    assert servicer.calls == 2
    assert "ListBlocks: the server sent page token 'same-token' a second time" in caught.value.message
    assert caught.value.reason == "PAGING_DID_NOT_END"


async def test_ever_new_tokens_end_at_the_clients_page_cap(endless: tuple[str, EndlessPages]) -> None:
    address, servicer = endless
    servicer.repeat = False
    async with AsyncMemoryClient(address, timeout=5, max_pages=25) as client:
        seen: list[str] = []

        async def follow() -> None:
            seen.extend([agent.id async for agent in client.iter_agents()])

        with pytest.raises(PagingError, match="ListAgents: more than 25 pages"):
            await follow()
    assert servicer.calls == 25
    assert MAX_PAGES == 10_000


def test_the_cli_reports_a_listing_that_does_not_end(
    endless: tuple[str, EndlessPages], capsys: pytest.CaptureFixture[str]
) -> None:
    address, servicer = endless
    code = main(["--target", address, "blocks", "list", "--agent", "agent-1"])
    assert (code, servicer.calls) == (1, 2)
    assert "a second time" in capsys.readouterr().err


def test_memfs_clone_stops_instead_of_paging_forever(
    endless: tuple[str, EndlessPages], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address, servicer = endless
    code = main(["--target", address, "memfs", "clone", "agent-1", str(tmp_path / "memory")])
    assert (code, servicer.calls) == (1, 2)
    assert "ListBlocks: the server sent page token" in capsys.readouterr().err
    assert not (tmp_path / "memory").exists()
