"""A real MemoryService (SQLite file, no RetrievalService needed) for the load generator's tests.

It runs on its own event loop in a background thread, because ``run_load`` drives its own loop
(and, with several processes, spawned children) and blocks the caller until the test is done.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from strata.client import MemoryClient
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from tests.hermetic import unreachable_address
from tests.servers import LoopThread


@pytest.fixture(scope="session")
def memory_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("loadtest")
    settings = MemorySettings(
        address="127.0.0.1:0",
        database_url=f"sqlite:///{root}/memory.sqlite3",
        retrieval_address=unreachable_address(),  # nothing indexes during these tests
        log_level="WARNING",
        log_json=False,
    )
    thread = LoopThread()
    server: MemoryServer = thread.run(start_memory_server(settings))
    yield server.address
    thread.run(server.stop(0))
    thread.close()


@pytest.fixture
def memory_client(memory_target: str) -> Iterator[MemoryClient]:
    with MemoryClient(memory_target) as client:
        yield client
