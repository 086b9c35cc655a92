"""An on_edit agent's conversations share its compiled prompt (issue 26 item 4), through a real
MemoryService on SQLite and PostgreSQL.

A new conversation joins the agent's snapshot instead of storing a copy of the compiled memory: with a
block of 50,000 characters and 40 conversations the store holds no conversation prompt text at all, an
edit of the block sends no statement that repoints conversations (the first edit after 600
conversations of a 400,000-character block held every other write 3.2 s), and each conversation's
prompt read still names its conversation and shows the edit.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from sqlalchemy import func, select

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from strata_memory.store import schema
from tests.hermetic import unreachable_address
from tests.memory.integration.conftest import Stub
from tests.memory.store.sent import recorded

BIG = ("a long memory line\n" * 2_700)[:50_000]


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[MemoryServer]:
    settings = MemorySettings(
        address="127.0.0.1:0",
        database_url=store_url,
        retrieval_address=unreachable_address(),
        outbox_idle_poll_seconds=60,
        store_probe_seconds=60,
    )
    running = await start_memory_server(settings)
    yield running
    await running.stop(0)


@pytest.fixture
async def stub(server: MemoryServer) -> AsyncIterator[Stub]:
    async with grpc.aio.insecure_channel(server.address) as channel:
        yield memory_service_pb2_grpc.MemoryServiceStub(channel)


def _prompt_text_stored(server: MemoryServer, agent_id: str) -> int:
    prompts = schema.system_prompts
    with server.database.reading() as conn:
        query = select(func.coalesce(func.sum(func.length(prompts.c.text)), 0)).where(
            prompts.c.agent_id == agent_id
        )
        return int(conn.execute(query).scalar_one())


async def test_conversations_share_the_agents_prompt_and_an_edit_repoints_none(
    server: MemoryServer, stub: Stub
) -> None:
    agent = await stub.CreateAgent(
        api.CreateAgentRequest(
            agent=pb.Agent(name="big"), blocks=[pb.Block(label="big", value=BIG, limit=100_000)]
        )
    )
    for i in range(40):
        await stub.CreateConversation(
            api.CreateConversationRequest(agent_id=agent.id, conversation_id=f"c{i}")
        )
    assert _prompt_text_stored(server, agent.id) == 0
    engines = (server.database._writer,)
    with recorded(engines, lambda s: " ".join(s.split()[:3])) as sent:
        await stub.UpdateBlock(
            api.UpdateBlockRequest(
                ref=pb.BlockRef(agent_id=agent.id, label="big"),
                block=pb.Block(value=BIG[:-10] + "edited!\n"),
                update_mask=FieldMask(paths=["value"]),
            )
        )
    assert [s for s in sent if re.match(r"INSERT INTO system_prompts", s)] == []
    for conversation in ("c0", "c39", ""):
        prompt = await stub.GetSystemPrompt(
            api.GetSystemPromptRequest(agent_id=agent.id, conversation_id=conversation)
        )
        assert "edited!" in prompt.text
        assert f"CONVERSATION_ID: {conversation or 'default'}" in prompt.text
        assert not prompt.stale
