"""Purge of every target kind through real servers, on both store backends and both index engines.

Each test builds the same memory (:func:`tests.system.purge_world.build`), reads every store table and
both index legs before the purge, purges one target and checks that

* the receipt's count for each store equals the rows of that table the purge removed (read from the
  tables, not from the receipt) and, for each index leg, the purged documents it held before;
* no row of any table still holds the target's words, and neither leg finds the purged documents by
  id (``FindDocuments``) or by text (each leg searched on its own);
* the receipt is verified, and names exactly the purged documents.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from sqlalchemy import create_engine, func, select

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.store import schema
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.store_backends import empty_tables, postgres_schema
from tests.system.purge_world import (
    NOTES,
    SECRET,
    SHARED,
    Stack,
    build,
    purge_and_check,
    read_tables,
    receipt_counts,
    rows_holding,
    running_stack,
    until_held,
)

__all__ = ["postgres_schema"]
COMBINATIONS = [("sqlite", "embedded"), ("postgresql", "embedded"), ("postgresql", "server")]


@pytest.fixture(params=COMBINATIONS, ids=["-".join(c) for c in COMBINATIONS])
async def stack(
    request: pytest.FixtureRequest, tmp_path: Path, system_embedder: OnnxSentenceEmbedder
) -> AsyncIterator[Stack]:
    backend, engine = request.param
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path}/memory.sqlite3"
    else:
        url = request.getfixturevalue("postgres_schema")
        empty_tables(url)
    async with running_stack(tmp_path, system_embedder, url, engine) as running:
        yield running


def versions_of(url: str, block_id: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            versions = schema.block_versions
            counted = select(func.count()).select_from(versions).where(versions.c.block_id == block_id)
            return int(conn.execute(counted).scalar_one())
    finally:
        engine.dispose()


async def test_purging_an_agent_forgets_everything_of_it_but_the_block_another_agent_holds(
    stack: Stack,
) -> None:
    world = await build(stack.memory)
    documents = [*world.passages, *world.messages]
    assert versions_of(stack.url, world.notes) == 3

    receipt = await purge_and_check(stack, api.PurgeRequest(agent_id=world.agent), documents, [SECRET, NOTES])

    counts = receipt_counts(receipt)
    assert receipt.target == f"agent/{world.agent}"
    assert (counts["agents"], counts["blocks"], counts["block_versions"]) == (1, 1, 3)
    assert (counts["passages"], counts["messages"], counts["files"], counts["conversations"]) == (2, 4, 1, 2)
    assert versions_of(stack.url, world.notes) == 0
    assert versions_of(stack.url, world.team) == 2  # kim holds it: it and its history stay
    team = await stack.memory.GetBlock(api.GetBlockRequest(block=pb.BlockRef(block_id=world.team)))
    assert SHARED in team.value
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await stack.memory.GetAgent(api.GetAgentRequest(agent_id=world.agent))
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND


async def test_purging_a_shared_block_removes_it_its_history_and_every_prompt_that_rendered_it(
    stack: Stack,
) -> None:
    world = await build(stack.memory)
    old = await stack.memory.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=world.other))
    assert SHARED in old.text
    assert old.receipt.id
    await stack.memory.UpdateBlock(  # both holders recompile every conversation: one snapshot each
        api.UpdateBlockRequest(
            ref=pb.BlockRef(block_id=world.team),
            block=pb.Block(value=f"{SHARED} team v3"),
            update_mask=FieldMask(paths=["value"]),
        )
    )
    assert "prompt_snapshots" in rows_holding(read_tables(stack.url), SHARED)

    receipt = await purge_and_check(stack, api.PurgeRequest(block_id=world.team), [], [SHARED])

    counts = receipt_counts(receipt)
    assert (counts["blocks"], counts["block_versions"], counts["block_attachments"]) == (1, 3, 2)
    assert counts["prompt_snapshots"] == 2
    assert counts["prompt_receipts"] >= 2
    assert counts["system_prompts"] == 3
    assert versions_of(stack.url, world.team) == 0
    for agent_id, conversation in ((world.agent, "default"), (world.agent, "walks"), (world.other, "")):
        prompt = await stack.memory.GetSystemPrompt(
            api.GetSystemPromptRequest(agent_id=agent_id, conversation_id=conversation)
        )
        assert SHARED not in prompt.text
    with pytest.raises(grpc.aio.AioRpcError) as forgotten:
        await stack.memory.GetPromptReceipt(api.GetPromptReceiptRequest(receipt_id=old.receipt.id))
    assert forgotten.value.code() == grpc.StatusCode.NOT_FOUND
    listed = await stack.memory.ListBlocks(api.ListBlocksRequest(agent_id=world.other))
    assert world.team not in [block.id for block in listed.blocks]


async def test_purging_a_block_reaches_an_agent_that_held_it_before(stack: Stack) -> None:
    world = await build(stack.memory)
    await stack.memory.DetachBlock(api.DetachBlockRequest(agent_id=world.agent, block_id=world.notes))
    await stack.memory.AttachBlock(api.AttachBlockRequest(agent_id=world.other, block_id=world.notes))

    receipt = await purge_and_check(stack, api.PurgeRequest(block_id=world.notes), [], [NOTES])

    assert receipt_counts(receipt)["block_versions"] == 3
    prompt = await stack.memory.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=world.agent))
    assert NOTES not in prompt.text


async def test_purging_a_passage(stack: Stack) -> None:
    world = await build(stack.memory)
    passage = world.passages[0]

    receipt = await purge_and_check(
        stack, api.PurgeRequest(passage_id=passage), [passage], ["lantern", "attic"]
    )

    assert receipt_counts(receipt)["passages"] == 1
    await until_held(stack.retrieval, world.passages[1:], held_by_both=True)


async def test_purging_a_message(stack: Stack) -> None:
    world = await build(stack.memory)
    message = world.messages[0]

    receipt = await purge_and_check(stack, api.PurgeRequest(message_id=message), [message], ["stove"])

    assert receipt_counts(receipt)["messages"] == 1
    agent = await stack.memory.GetAgent(api.GetAgentRequest(agent_id=world.agent))
    listed = await stack.memory.ListMessages(api.ListMessagesRequest(agent_id=world.agent))
    assert message not in [m.id for m in listed.messages]
    assert len(listed.messages) == 3
    assert agent.id == world.agent


async def test_purging_a_conversation(stack: Stack) -> None:
    world = await build(stack.memory)
    target = api.PurgeRequest(conversation=api.ConversationRef(agent_id=world.agent, conversation_id="walks"))

    receipt = await purge_and_check(stack, target, world.conversation_messages, ["river"])

    counts = receipt_counts(receipt)
    assert receipt.target == f"conversation/{world.agent}/walks"
    assert (counts["messages"], counts["conversations"], counts["system_prompts"]) == (2, 1, 1)
    listed = await stack.memory.ListConversations(api.ListConversationsRequest(agent_id=world.agent))
    assert "walks" not in [c.id for c in listed.conversations]
