"""A real MemoryService for the MemFS tests, real git, and helpers to drive ``strata memfs``.

The server runs for the whole session on an event loop in a background thread, so the blocking
CLI (in-process ``main``) and a subprocess can both reach it; each test gets its own tenant.
Git runs with a fixed identity and no user or system configuration, in temp folders only.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from strata.cli.main import main
from strata.client import MemoryClient
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import start_memory_server
from tests.hermetic import memory_settings
from tests.servers import LoopThread

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Memfs Test",
    "GIT_AUTHOR_EMAIL": "memfs-test@example.invalid",
    "GIT_COMMITTER_NAME": "Memfs Test",
    "GIT_COMMITTER_EMAIL": "memfs-test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


@pytest.fixture(scope="session")
def memfs_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of a MemoryService with a temp SQLite file, shared by the MemFS tests."""
    loop = LoopThread("memfs-server")
    database = tmp_path_factory.mktemp("memfs-server") / "memory.sqlite3"
    settings = memory_settings(database, log_json=False)
    server = loop.run(start_memory_server(settings))
    yield server.address
    loop.run(server.stop(0))
    loop.close()


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every git call in these tests commits as the test identity, ignoring the machine's config;
    MemFS's confirmed servers are kept in a temp configuration folder."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@dataclass
class Memfs:
    """One test's tenant on the shared server: a client, and the CLI run in-process."""

    target: str
    tenant: str
    client: MemoryClient
    capsys: pytest.CaptureFixture[str]

    def __call__(self, *args: str) -> tuple[int, str, str]:
        """``strata --target … --tenant … memfs ARGS`` -> (exit code, stdout, stderr)."""
        self.capsys.readouterr()
        code = main(["--target", self.target, "--tenant", self.tenant, "memfs", *args])
        out, err = self.capsys.readouterr()
        return code, out, err

    def ok(self, *args: str) -> str:
        code, out, err = self(*args)
        assert code == 0, f"strata memfs {' '.join(args)} -> {code}\n{out}\n{err}"
        return out

    def agent(self, *blocks: pb.Block) -> str:
        return self.client.create_agent(agent=pb.Agent(name="sam"), blocks=blocks).id

    def block(self, agent_id: str, label: str) -> pb.Block:
        return self.client.get_block(agent_id=agent_id, label=label)

    def set_value(self, agent_id: str, label: str, value: str) -> pb.Block:
        block = pb.Block(value=value)
        return self.client.update_block(block=block, update_mask=["value"], agent_id=agent_id, label=label)


@pytest.fixture
def memfs(memfs_target: str, capsys: pytest.CaptureFixture[str]) -> Iterator[Memfs]:
    tenant = f"memfs-{uuid.uuid4().hex[:12]}"
    with MemoryClient(memfs_target, tenant=tenant, timeout=10) as client:
        yield Memfs(memfs_target, tenant, client, capsys)


def block(label: str, value: str = "", *, description: str = "", **fields: Any) -> pb.Block:
    return pb.Block(label=label, value=value, description=description or f"about {label}", **fields)
