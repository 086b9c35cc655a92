"""One real MemoryService (temp SQLite file, free port) on its own thread, shared by the client tests.

The server runs on a private event loop in a background thread so that blocking callers (the
sync client, the CLI, a subprocess) and asyncio callers can all reach it. Each test gets a fresh
tenant, so tests never see each other's agents or blocks.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from strata.client import AsyncMemoryClient, MemoryClient
from strata_memory.config import MemorySettings
from strata_memory.main import MemoryServer, start_memory_server


class ServerThread:
    """A MemoryService running on an event loop of its own thread."""

    def __init__(self, database_url: str) -> None:
        self._settings = MemorySettings(address="127.0.0.1:0", database_url=database_url)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="memory-server", daemon=True)
        self._server: MemoryServer | None = None

    @property
    def address(self) -> str:
        assert self._server is not None
        return self._server.address

    def start(self) -> None:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(start_memory_server(self._settings), self._loop)
        self._server = future.result(timeout=30)

    def stop(self) -> None:
        if self._server is not None:
            asyncio.run_coroutine_threadsafe(self._server.stop(0), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()


@pytest.fixture(scope="session")
def memory_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of the shared MemoryService."""
    database: Path = tmp_path_factory.mktemp("client") / "memory.sqlite3"
    server = ServerThread(f"sqlite:///{database}")
    server.start()
    yield server.address
    server.stop()


@pytest.fixture
def tenant() -> str:
    """A tenant of this test alone."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def client(memory_target: str, tenant: str) -> AsyncIterator[AsyncMemoryClient]:
    async with AsyncMemoryClient(memory_target, tenant=tenant, timeout=10) as opened:
        yield opened


@pytest.fixture
def sync_client(memory_target: str, tenant: str) -> Iterator[MemoryClient]:
    with MemoryClient(memory_target, tenant=tenant, timeout=10) as opened:
        yield opened
