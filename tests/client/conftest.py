"""Real Strata services for the client tests, each on a free port with its data in a temp folder.

A RetrievalService (real embedder, Edge vector shard, Tantivy) and a MemoryService (SQLite file)
that indexes into it run for the whole session on a private event loop in a background thread,
so blocking callers (the sync clients, the CLI, a subprocess) and asyncio callers can all reach
them. Each test gets a fresh tenant, so tests never see each other's agents or blocks.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from strata.cli.main import main
from strata.client import AsyncMemoryClient, MemoryClient
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings
from tests.servers import LoopThread

Strata = Callable[..., tuple[int, str, str]]
"""Runs the CLI in-process: ``strata(*args)`` -> (exit code, stdout, stderr)."""


@pytest.fixture(scope="session")
def server_loop() -> Iterator[LoopThread]:
    loop = LoopThread()
    yield loop
    loop.close()


@pytest.fixture(scope="session")
def retrieval_target(server_loop: LoopThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of the shared RetrievalService."""
    root = tmp_path_factory.mktemp("retrieval")
    settings = RetrievalSettings(
        address="127.0.0.1:0",
        data_dir=root / "data",
        model_cache_dir=root / "models",
        workers=2,
        grace_seconds=0,
        log_json=False,
    )

    async def start() -> RetrievalApp:
        app = RetrievalApp(settings)
        await app.start()
        return app

    app = server_loop.run(start())
    yield app.address
    server_loop.run(app.stop())


@pytest.fixture(scope="session")
def memory_target(
    server_loop: LoopThread, retrieval_target: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The address of the shared MemoryService, which indexes into the shared RetrievalService."""
    database: Path = tmp_path_factory.mktemp("memory") / "memory.sqlite3"
    settings = MemorySettings(
        address="127.0.0.1:0",
        database_url=f"sqlite:///{database}",
        retrieval_address=retrieval_target,
        outbox_max_backoff_seconds=0.5,
        log_json=False,
    )
    server = server_loop.run(start_memory_server(settings))
    yield server.address
    server_loop.run(server.stop(0))


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


@pytest.fixture
def strata(memory_target: str, tenant: str, capsys: pytest.CaptureFixture[str]) -> Strata:
    """Run ``strata --target … --tenant … ARGS``; returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["--target", memory_target, "--tenant", tenant, *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def new_agent(strata: Strata, *args: str) -> str:
    """Create an agent named "sam" through the CLI (extra ``agents create`` options allowed); its id."""
    code, out, _ = strata("--json", "agents", "create", "--name", "sam", *args)
    assert code == 0
    agent_id: str = json.loads(out)["id"]
    return agent_id
