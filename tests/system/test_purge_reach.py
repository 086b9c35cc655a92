"""Purge at the edges, through real servers: another tenant's ids, RetrievalService down during the
purge (the outbox finishes the index part later), and two MemoryService replicas on one PostgreSQL
database (one builds, the other purges), over both index engines."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.main import start_memory_server
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.store_backends import empty_tables, postgres_schema
from tests.system.purge_world import (
    NOTES,
    SECRET,
    Stack,
    World,
    build,
    held,
    metadata,
    purge_and_check,
    read_tables,
    receipt_counts,
    rows_holding,
    running_stack,
    until_held,
)

__all__ = ["postgres_schema"]


@pytest.fixture
async def stack(tmp_path: Path, system_embedder: OnnxSentenceEmbedder) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path, system_embedder, f"sqlite:///{tmp_path}/memory.sqlite3", "embedded"
    ) as s:
        yield s


def every_target(world: World) -> list[api.PurgeRequest]:
    return [
        api.PurgeRequest(agent_id=world.agent),
        api.PurgeRequest(block_id=world.notes),
        api.PurgeRequest(passage_id=world.passages[0]),
        api.PurgeRequest(message_id=world.messages[0]),
        api.PurgeRequest(conversation=api.ConversationRef(agent_id=world.agent, conversation_id="walks")),
    ]


async def test_the_outbox_leaves_the_purges_delete_jobs_alone_while_the_purge_counts_the_legs(
    tmp_path: Path, system_embedder: OnnxSentenceEmbedder
) -> None:
    """The fault: the first read-back by id is slow (longer than the outbox's idle poll)."""
    url = f"sqlite:///{tmp_path}/memory.sqlite3"
    async with running_stack(tmp_path, system_embedder, url, "embedded", outbox_idle_poll_seconds=0.05) as s:
        world = await build(s.memory)
        documents = [*world.passages, *world.messages]
        await until_held(s.retrieval, documents, held_by_both=True)
        assert s.pair.memory is not None
        connection = s.pair.memory.retrieval
        find = connection.find

        async def slow_find(tenant_id: str, ids: Sequence[str]) -> tuple[list[str], list[str]]:
            await asyncio.sleep(1.0)
            return await find(tenant_id, ids)

        connection.find = slow_find  # type: ignore[method-assign]
        receipt = await s.memory.Purge(api.PurgeRequest(agent_id=world.agent), timeout=60)

    counts = receipt_counts(receipt)
    assert (counts["vector_leg"], counts["text_leg"]) == (len(documents), len(documents))
    assert receipt.verified, receipt.verification_note


async def test_purging_the_default_conversation_leaves_the_agent_able_to_talk(stack: Stack) -> None:
    world = await build(stack.memory)
    default = api.ConversationRef(agent_id=world.agent, conversation_id="default")

    receipt = await stack.memory.Purge(api.PurgeRequest(conversation=default), timeout=60)

    said = set(world.messages) - set(world.conversation_messages)
    assert set(receipt.document_ids) == said
    assert receipt_counts(receipt)["conversations"] == 0  # every agent has one: kept, empty
    listed = await stack.memory.ListMessages(api.ListMessagesRequest(agent_id=world.agent))
    assert {m.id for m in listed.messages} == set(world.conversation_messages)
    appended = await stack.memory.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=world.agent, messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="Hi")]
        )
    )
    assert appended.messages[0].conversation_id == "default"
    await stack.memory.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=world.agent))


async def test_an_upsert_in_flight_during_the_purge_does_not_bring_the_document_back(
    tmp_path: Path, system_embedder: OnnxSentenceEmbedder
) -> None:
    """The fault: the outbox's upsert of a new message waits 1 s before it is sent (a slow network),
    and the purge comes meanwhile. Once Purge returns, no read may find the message again."""
    url = f"sqlite:///{tmp_path}/memory.sqlite3"
    async with running_stack(tmp_path, system_embedder, url, "embedded", outbox_idle_poll_seconds=0.05) as s:
        agent = await s.memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="sam")))
        assert s.pair.memory is not None
        connection = s.pair.memory.retrieval
        upsert, sending = connection.upsert, asyncio.Event()

        async def slow_upsert(documents: Sequence[rpb.Document]) -> None:
            sending.set()
            await asyncio.sleep(1.0)
            await upsert(documents)

        connection.upsert = slow_upsert  # type: ignore[method-assign]
        said = pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"My {SECRET} PIN is 1234.")
        appended = await s.memory.AppendMessages(
            api.AppendMessagesRequest(agent_id=agent.id, messages=[said])
        )
        message_id = appended.messages[0].id
        await asyncio.wait_for(sending.wait(), 10)

        receipt = await s.memory.Purge(api.PurgeRequest(message_id=message_id), timeout=60)

        assert receipt.verified, receipt.verification_note
        for _ in range(30):  # 1.5 s: past the held upsert
            assert await held(s.retrieval, [message_id]) == (set(), set())
            await asyncio.sleep(0.05)


async def test_purging_an_agent_reaches_the_prompts_of_an_agent_that_held_its_block_before(
    stack: Stack,
) -> None:
    """kim compiles its prompt only when asked (explicit policy): its stored prompt keeps the
    block's value after the block is detached from it and only sam holds it."""
    world = await build(stack.memory)
    explicit = pb.Agent(id=world.other, recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT)
    mask = FieldMask(paths=["recompile_policy"])
    await stack.memory.UpdateAgent(api.UpdateAgentRequest(agent=explicit, update_mask=mask))
    await stack.memory.AttachBlock(api.AttachBlockRequest(agent_id=world.other, block_id=world.notes))
    await stack.memory.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=world.other))
    await stack.memory.DetachBlock(api.DetachBlockRequest(agent_id=world.other, block_id=world.notes))
    prompt = await stack.memory.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=world.other))
    assert NOTES in prompt.text

    await purge_and_check(
        stack, api.PurgeRequest(agent_id=world.agent), [*world.passages, *world.messages], [SECRET, NOTES]
    )

    prompt = await stack.memory.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=world.other))
    assert NOTES not in prompt.text


async def test_another_tenants_ids_are_not_found_and_nothing_is_deleted(stack: Stack) -> None:
    world = await build(stack.memory, tenant="tenant-a")
    before = read_tables(stack.url)
    for request in every_target(world):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stack.memory.Purge(request, metadata=metadata("tenant-b"))
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND, request
    assert read_tables(stack.url) == before
    ids = [*world.passages, *world.messages]
    assert await held(stack.retrieval, ids, tenant="tenant-a") == (set(ids), set(ids))


async def test_with_retrieval_down_the_store_part_stands_and_the_outbox_deletes_later(stack: Stack) -> None:
    world = await build(stack.memory)
    documents = [*world.passages, *world.messages]
    await until_held(stack.retrieval, documents, held_by_both=True)
    await stack.pair.stop_retrieval()

    receipt = await stack.memory.Purge(api.PurgeRequest(agent_id=world.agent), timeout=60)

    assert not receipt.verified
    assert "delete jobs stay queued" in receipt.verification_note
    counts = receipt_counts(receipt)
    assert (counts["agents"], counts["messages"], counts["passages"]) == (1, 4, 2)
    assert (counts["vector_leg"], counts["text_leg"]) == (0, 0)  # not read: unknown, not claimed
    after = read_tables(stack.url)
    assert rows_holding(after, SECRET) == rows_holding(after, NOTES) == {}
    queued = sorted(row[3] for row in after["index_jobs"])
    assert queued == sorted([*documents, world.agent])

    await stack.pair.start_retrieval()
    await until_held(stack.retrieval, documents, held_by_both=False)
    assert await held(stack.retrieval, documents) == (set(), set())


@pytest.mark.parametrize("engine", ["embedded", "server"])
async def test_one_replica_purges_what_another_built_on_one_postgresql(
    tmp_path: Path, system_embedder: OnnxSentenceEmbedder, postgres_schema: str, engine: str
) -> None:
    empty_tables(postgres_schema)
    async with running_stack(tmp_path, system_embedder, postgres_schema, engine) as first:
        second = await start_memory_server(first.pair.memory_config(database_url=postgres_schema))
        try:
            async with grpc.aio.insecure_channel(second.address) as channel:
                world = await build(first.memory)
                purging = Stack(
                    first.pair, first.url, memory_service_pb2_grpc.MemoryServiceStub(channel), first.retrieval
                )
                documents = [*world.passages, *world.messages]
                await purge_and_check(
                    purging, api.PurgeRequest(agent_id=world.agent), documents, [SECRET, NOTES]
                )
                with pytest.raises(grpc.aio.AioRpcError) as gone:
                    await first.memory.GetAgent(api.GetAgentRequest(agent_id=world.agent))
                assert gone.value.code() == grpc.StatusCode.NOT_FOUND
        finally:
            await second.stop(0)
