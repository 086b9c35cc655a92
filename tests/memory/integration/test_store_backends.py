"""The same inputs give the same results on SQLite and PostgreSQL, alone and under concurrent writers.

Each test runs on both backends (``store_url``); the concurrent ones also run several MemoryService
instances over one store, as replicas do.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import field_mask_pb2
from sqlalchemy import create_engine, select

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from strata_memory.store import schema
from strata_serving.status import error_info_from
from tests.memory.integration.conftest import Stub, block_value, new_agent, run_tool


@pytest.fixture
async def replicas(store_url: str) -> AsyncIterator[list[Stub]]:
    """Three MemoryService instances over one store, and a stub for each."""
    servers: list[MemoryServer] = []
    channels: list[grpc.aio.Channel] = []
    try:
        for _ in range(3):
            settings = MemorySettings(address="127.0.0.1:0", database_url=store_url)
            servers.append(await start_memory_server(settings))
            channels.append(grpc.aio.insecure_channel(servers[-1].address))
        yield [memory_service_pb2_grpc.MemoryServiceStub(channel) for channel in channels]
    finally:
        for channel in channels:
            await channel.close(None)
        for server in servers:
            await server.stop(0)


async def outcome(call: object) -> str:
    """'OK', or the status code name and ErrorInfo reason of a failed call."""
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as error:
        info = error_info_from(error.trailing_metadata())
        return f"{error.code().name}/{info.reason if info else ''}"
    return "OK"


async def test_a_conversation_id_as_long_as_the_api_accepts_is_stored(stub: Stub) -> None:
    agent = await new_agent(stub)
    conversation = "c" * 200  # the longest id a label allows
    created = await stub.CreateConversation(
        api.CreateConversationRequest(agent_id=agent.id, conversation_id=conversation)
    )
    assert created.id == conversation
    await stub.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            conversation_id=conversation,
            messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="hello")],
        )
    )
    listed = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent.id, conversation_id=conversation))
    assert [m.content for m in listed.messages] == ["hello"]
    prompt = await stub.GetSystemPrompt(
        api.GetSystemPromptRequest(agent_id=agent.id, conversation_id=conversation)
    )
    assert f"CONVERSATION_ID: {conversation}" in prompt.text


async def test_text_with_a_nul_character_is_refused_alike_on_every_backend(stub: Stub) -> None:
    """One rule for both (PostgreSQL cannot hold NUL): refused with the field named, nothing written."""
    agent = await new_agent(stub)
    text = "before\x00after"
    calls = {
        "block value": stub.CreateBlock(
            api.CreateBlockRequest(agent_id=agent.id, block=pb.Block(label="notes", value=text))
        ),
        "agent name": stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name=text))),
        "message": stub.AppendMessages(
            api.AppendMessagesRequest(
                agent_id=agent.id, messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content=text)]
            )
        ),
        "passage": stub.CreatePassages(
            api.CreatePassagesRequest(agent_id=agent.id, passages=[pb.Passage(text=text)])
        ),
    }
    results = {name: await outcome(call) for name, call in calls.items()}
    assert set(results.values()) == {"INVALID_ARGUMENT/NUL_CHARACTER"}, results
    arguments = json.dumps({"label": "human", "content": text})
    run = await run_tool(stub, agent.id, "core_memory_append", arguments)
    assert (run.ok, run.reason) == (False, "NUL_CHARACTER")
    listed = await stub.ListBlocks(api.ListBlocksRequest(agent_id=agent.id))
    assert "notes" not in [block.label for block in listed.blocks]
    assert "\x00" not in await block_value(stub, agent.id, "human")


async def test_concurrent_creates_of_one_label_make_one_block_and_typed_errors(replicas: list[Stub]) -> None:
    agent = await new_agent(replicas[0])
    creates = [
        replicas[i % len(replicas)].CreateBlock(
            api.CreateBlockRequest(agent_id=agent.id, block=pb.Block(label="plans", value=f"v{i}"))
        )
        for i in range(16)
    ]
    results = await asyncio.gather(*(outcome(call) for call in creates))
    assert sorted(set(results)) == ["ALREADY_EXISTS/BLOCK_EXISTS", "OK"], results
    assert results.count("OK") == 1
    listed = await replicas[1].ListBlocks(api.ListBlocksRequest(agent_id=agent.id))
    assert [block.label for block in listed.blocks].count("plans") == 1


@pytest.mark.parametrize("with_etags", [False, True], ids=["no-etag", "etag"])
async def test_32_concurrent_tool_edits_over_three_servers_keep_every_acknowledged_write(
    replicas: list[Stub], with_etags: bool
) -> None:
    agent = await new_agent(replicas[0])

    async def append(i: int) -> bool:
        stub = replicas[i % len(replicas)]
        content = json.dumps({"label": "human", "content": f"line {i}"})
        while True:
            etag = ""
            if with_etags:
                ref = pb.BlockRef(agent_id=agent.id, label="human")
                etag = (await stub.GetBlock(api.GetBlockRequest(block=ref))).etag
            try:
                run = await run_tool(stub, agent.id, "core_memory_append", content, etag=etag)
            except grpc.aio.AioRpcError as error:
                if with_etags and error.code() == grpc.StatusCode.ABORTED:
                    continue  # another writer got there first: re-read and retry
                raise
            return run.ok

    acknowledged = await asyncio.gather(*(append(i) for i in range(32)))
    assert all(acknowledged)
    lines = [line for line in (await block_value(replicas[2], agent.id, "human")).split("\n") if line]
    assert sorted(lines) == sorted(f"line {i}" for i in range(32))
    history = await replicas[1].ListBlockVersions(
        api.ListBlockVersionsRequest(block=pb.BlockRef(agent_id=agent.id, label="human"), page_size=100)
    )
    assert [v.version for v in history.versions] == list(range(33, 0, -1))


async def test_blocks_created_at_once_on_one_agent_keep_distinct_places_in_its_order(
    replicas: list[Stub], store_url: str
) -> None:
    agent = await new_agent(replicas[0])
    await asyncio.gather(
        *(
            replicas[i % len(replicas)].CreateBlock(
                api.CreateBlockRequest(agent_id=agent.id, block=pb.Block(label=f"topic{i}", value="v"))
            )
            for i in range(12)
        )
    )
    engine = create_engine(store_url)
    try:
        with engine.connect() as conn:
            places = conn.execute(
                select(schema.agent_blocks.c.position).where(schema.agent_blocks.c.agent_id == agent.id)
            ).scalars()
            positions = list(places)
    finally:
        engine.dispose()
    assert len(positions) == 14  # persona, human and the twelve
    assert len(set(positions)) == 14, sorted(positions)


async def test_edits_of_different_blocks_at_once_leave_the_stored_prompt_current(
    replicas: list[Stub],
) -> None:
    agent = await new_agent(replicas[0])  # recompiles on every edit (the default policy)

    async def tool_edit(i: int) -> None:
        content = json.dumps({"label": "human", "content": f"human {i}"})
        await run_tool(replicas[i % 3], agent.id, "core_memory_append", content)

    async def api_edit(i: int) -> None:
        await replicas[(i + 1) % 3].UpdateBlock(
            api.UpdateBlockRequest(
                ref=pb.BlockRef(agent_id=agent.id, label="persona"),
                block=pb.Block(value=f"persona {i}"),
                update_mask=field_mask_pb2.FieldMask(paths=["value"]),
            )
        )

    await asyncio.gather(*(edit(i) for i in range(24) for edit in (tool_edit, api_edit)))
    for stub in replicas:
        prompt = await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent.id))
        assert not prompt.stale
        assert all(f"human {i}" in prompt.text for i in range(24))
