"""One real MemoryService (temp SQLite file, free port) on its own thread, shared by the client tests.

Servers run on a private event loop in a background thread so that blocking callers (the sync
client, the CLI, a subprocess) and asyncio callers can all reach them. Each test gets a fresh
tenant, so tests never see each other's agents or blocks.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from strata.client import AsyncMemoryClient, MemoryClient
from strata_memory.config import MemorySettings
from strata_memory.main import start_memory_server

T = TypeVar("T")


class LoopThread:
    """An event loop on a background thread; ``run`` executes a coroutine there from any thread."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="strata-server", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=timeout)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()


@pytest.fixture(scope="session")
def memory_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of the shared MemoryService."""
    database: Path = tmp_path_factory.mktemp("client") / "memory.sqlite3"
    settings = MemorySettings(address="127.0.0.1:0", database_url=f"sqlite:///{database}")
    loop = LoopThread()
    server = loop.run(start_memory_server(settings))
    yield server.address
    loop.run(server.stop(0))
    loop.close()


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
