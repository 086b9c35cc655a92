"""Quotas per tenant through a real MemoryService, on SQLite and PostgreSQL (issue 26 item 1).

The quotas are the rows of docs/security.md's quotas table (parsed, not typed here): its defaults must
be the code's, and each quota is probed: the operator sets the tenant's own limit low through
AdminService, the tenant fills it, and the next write is RESOURCE_EXHAUSTED with reason QUOTA_EXCEEDED
naming the quota and its limit, while another tenant writes on. Deleting frees room; concurrent writes
cannot pass a limit together.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from pydantic import SecretStr

from strata.admin.v1 import admin_pb2, admin_pb2_grpc
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.limits import QUOTA_DEFAULTS
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from strata_serving.status import error_info_from
from tests.hermetic import unreachable_address
from tests.memory.integration.conftest import Stub

if TYPE_CHECKING:
    AdminStub = admin_pb2_grpc.AdminServiceAsyncStub
else:
    AdminStub = admin_pb2_grpc.AdminServiceStub

SECURITY_MD = Path(__file__).resolve().parents[3] / "docs" / "security.md"
MARKER = "<!-- quotas-table:"
_ROW = re.compile(
    r"^\| `(?P<name>[a-z_]+)` \| (?P<what>.+) \| (?P<value>[\d,]+(?: GiB)?) \| (?P<over>.+) \|$"
)
ADMIN_KEY = "qZ7-" + secrets.token_urlsafe(32)
QUIET, NOISY = "quiet-tenant", "noisy-tenant"


def documented_quotas() -> dict[str, int]:
    text = SECURITY_MD.read_text(encoding="utf-8")
    assert MARKER in text, "docs/security.md lost its quotas table marker"
    quotas: dict[str, int] = {}
    for line in text.split(MARKER, 1)[1].splitlines()[1:]:
        if not line.startswith("|"):
            if quotas:
                break
            continue
        found = _ROW.match(line)
        if found is None:
            assert line.startswith(("| quota", "|---")), f"unparsed row in the quotas table: {line}"
            continue
        assert "`RESOURCE_EXHAUSTED` (`QUOTA_EXCEEDED`)" in found["over"], line
        number, _, unit = found["value"].partition(" ")
        quotas[found["name"]] = int(number.replace(",", "")) * (1024**3 if unit == "GiB" else 1)
    return quotas


DOCUMENTED = documented_quotas()


def test_the_documented_defaults_are_the_codes() -> None:
    assert DOCUMENTED == QUOTA_DEFAULTS


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[MemoryServer]:
    settings = MemorySettings(
        address="127.0.0.1:0",
        database_url=store_url,
        retrieval_address=unreachable_address(),
        admin_api_key=SecretStr(ADMIN_KEY),
    )
    running = await start_memory_server(settings)
    yield running
    await running.stop(0)


@dataclass
class Clients:
    memory: Stub
    admin: AdminStub

    async def limit(self, tenant: str, **limits: int) -> admin_pb2.TenantQuotas:
        reply: admin_pb2.TenantQuotas = await self.admin.UpdateTenantQuotas(
            admin_pb2.UpdateTenantQuotasRequest(tenant_id=tenant, limits=limits),
            metadata=(("authorization", f"Bearer {ADMIN_KEY}"),),
        )
        return reply

    async def quotas(self, tenant: str) -> dict[str, admin_pb2.Quota]:
        reply = await self.admin.GetTenantQuotas(
            admin_pb2.GetTenantQuotasRequest(tenant_id=tenant),
            metadata=(("authorization", f"Bearer {ADMIN_KEY}"),),
        )
        return {quota.name: quota for quota in reply.quotas}


@pytest.fixture
async def clients(server: MemoryServer) -> AsyncIterator[Clients]:
    async with grpc.aio.insecure_channel(server.address) as channel:
        yield Clients(
            memory_service_pb2_grpc.MemoryServiceStub(channel), admin_pb2_grpc.AdminServiceStub(channel)
        )


def _as(tenant: str) -> tuple[tuple[str, str], ...]:
    return (("x-strata-tenant", tenant),)


@dataclass
class World:
    """One tenant's agent (and archive), and a way to add one more of what a quota counts."""

    stub: Stub
    tenant: str
    agent_id: str = ""
    archive_id: str = ""
    made: int = 0

    async def setup(self) -> World:
        agent = await self.stub.CreateAgent(
            api.CreateAgentRequest(agent=pb.Agent(name="a")), metadata=_as(self.tenant)
        )
        self.agent_id = agent.id
        archive = await self.stub.CreateArchive(
            api.CreateArchiveRequest(archive=pb.Archive(name="notes"), agent_id=agent.id),
            metadata=_as(self.tenant),
        )
        self.archive_id = archive.id
        return self

    async def add(self, quota: str) -> Any:
        self.made += 1
        n, meta = self.made, _as(self.tenant)
        adders: dict[str, Callable[[], Awaitable[Any]]] = {
            "agents": lambda: self.stub.CreateAgent(
                api.CreateAgentRequest(agent=pb.Agent(name=f"a{n}")), metadata=meta
            ),
            "blocks": lambda: self.stub.CreateBlock(
                api.CreateBlockRequest(block=pb.Block(label=f"b{n}", value="v")), metadata=meta
            ),
            "blocks_per_agent": lambda: self.stub.CreateBlock(
                api.CreateBlockRequest(block=pb.Block(label=f"b{n}", value="v"), agent_id=self.agent_id),
                metadata=meta,
            ),
            "archives": lambda: self.stub.CreateArchive(
                api.CreateArchiveRequest(archive=pb.Archive(name=f"r{n}")), metadata=meta
            ),
            "conversations_per_agent": lambda: self.stub.CreateConversation(
                api.CreateConversationRequest(agent_id=self.agent_id, conversation_id=f"c{n}"), metadata=meta
            ),
            "passages": lambda: self._passage("p"),
            "passage_bytes": lambda: self._passage("p" * 100),
            "messages": lambda: self._message("m"),
            "message_bytes": lambda: self._message("m" * 100),
        }
        return await adders[quota]()

    async def held(self, quota: str) -> int:
        """The agent's blocks or conversations now."""
        meta = _as(self.tenant)
        if quota == "blocks_per_agent":
            blocks = await self.stub.ListBlocks(api.ListBlocksRequest(agent_id=self.agent_id), metadata=meta)
            return len(blocks.blocks)
        talks = await self.stub.ListConversations(
            api.ListConversationsRequest(agent_id=self.agent_id), metadata=meta
        )
        return len(talks.conversations)

    async def _passage(self, text: str) -> Any:
        return await self.stub.CreatePassages(
            api.CreatePassagesRequest(archive_id=self.archive_id, passages=[pb.Passage(text=text)]),
            metadata=_as(self.tenant),
        )

    async def _message(self, content: str) -> Any:
        return await self.stub.AppendMessages(
            api.AppendMessagesRequest(
                agent_id=self.agent_id,
                messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content=content)],
            ),
            metadata=_as(self.tenant),
        )


def _room(quota: str, usage: int) -> tuple[int, int]:
    """A low limit for the probe and how many more adds it leaves (bytes quotas: 100-byte adds)."""
    if quota.endswith("_bytes"):
        return usage + 300, 3
    return usage + 3, 3


@pytest.mark.parametrize("quota", sorted(DOCUMENTED))
async def test_a_write_past_a_tenants_quota_is_refused_naming_it(clients: Clients, quota: str) -> None:
    noisy = await World(clients.memory, NOISY).setup()
    quiet = await World(clients.memory, QUIET).setup()
    usage = (await clients.quotas(NOISY))[quota].usage
    if quota.endswith("_per_agent"):
        usage = await noisy.held(quota)
    limit, room = _room(quota, usage)
    granted = await clients.limit(NOISY, **{quota: limit})
    assert {q.name: (q.limit, q.overridden) for q in granted.quotas}[quota] == (limit, True)
    for _ in range(room):
        await noisy.add(quota)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await noisy.add(quota)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    info = error_info_from(refused.value.trailing_metadata())
    assert info is not None
    assert info.reason == "QUOTA_EXCEEDED"
    assert (info.metadata["quota"], info.metadata["limit"], info.metadata["tenant"]) == (
        quota,
        str(limit),
        NOISY,
    )
    await quiet.add(quota)  # another tenant's defaults are untouched
    if not quota.endswith("_per_agent"):
        assert (await clients.quotas(NOISY))[quota].usage == limit


async def test_deleting_frees_room_and_clearing_restores_the_default(clients: Clients) -> None:
    world = await World(clients.memory, NOISY).setup()
    await clients.limit(NOISY, agents=2)
    extra = await world.add("agents")
    with pytest.raises(grpc.aio.AioRpcError):
        await world.add("agents")
    await clients.memory.DeleteAgent(api.DeleteAgentRequest(agent_id=extra.id), metadata=_as(NOISY))
    assert (await clients.quotas(NOISY))["agents"].usage == 1
    await world.add("agents")
    cleared = await clients.limit(NOISY, agents=-1)
    assert {q.name: (q.limit, q.overridden) for q in cleared.quotas}["agents"] == (
        QUOTA_DEFAULTS["agents"],
        False,
    )
    await world.add("agents")


async def test_concurrent_writes_cannot_pass_a_limit_together(clients: Clients) -> None:
    world = await World(clients.memory, NOISY).setup()
    await clients.limit(NOISY, agents=6)
    outcomes = await asyncio.gather(*(world.add("agents") for _ in range(12)), return_exceptions=True)
    refused = [o for o in outcomes if isinstance(o, grpc.aio.AioRpcError)]
    assert all(o.code() == grpc.StatusCode.RESOURCE_EXHAUSTED for o in refused), refused
    assert len(outcomes) - len(refused) == 5
    assert (await clients.quotas(NOISY))["agents"].usage == 6


async def test_an_unknown_quota_name_is_invalid(clients: Clients) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await clients.limit(NOISY, blocks_per_tenant=5)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
