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

import pytest

from strata.cli.main import main
from strata.client import AsyncMemoryClient, MemoryClient
from tests.servers import LoopThread, ServicePair

Strata = Callable[..., tuple[int, str, str]]
"""Runs the CLI in-process: ``strata(*args)`` -> (exit code, stdout, stderr)."""


@pytest.fixture(scope="session")
def server_loop() -> Iterator[LoopThread]:
    loop = LoopThread()
    yield loop
    loop.close()


@pytest.fixture(scope="session")
def shared_pair(server_loop: LoopThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServicePair]:
    """The shared pair; each service is started by the first test that needs it."""
    root = tmp_path_factory.mktemp("services")
    pair = ServicePair(
        root,
        retrieval_settings={"model_cache_dir": root / "models", "workers": 2, "grace_seconds": 0},
        memory_settings={"outbox_max_backoff_seconds": 0.5, "log_json": False},
        quick_retries=False,
    )
    yield pair
    server_loop.run(pair.stop())


@pytest.fixture(scope="session")
def retrieval_target(server_loop: LoopThread, shared_pair: ServicePair) -> str:
    """The address of the shared RetrievalService."""
    server_loop.run(shared_pair.start_retrieval())
    return shared_pair.retrieval_address


@pytest.fixture(scope="session")
def memory_target(server_loop: LoopThread, shared_pair: ServicePair, retrieval_target: str) -> str:
    """The address of the shared MemoryService, which indexes into the shared RetrievalService."""
    server_loop.run(shared_pair.start_memory())
    return shared_pair.memory_address


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
