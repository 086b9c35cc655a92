"""Forgetting with a receipt, through a real MemoryService and RetrievalService: Purge deletes the
target from the store and both index legs, then reads RetrievalService back by id."""

from __future__ import annotations

import json

import grpc
import pytest

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb


async def test_purging_a_passage_removes_it_from_both_legs_with_a_verified_receipt(
    memory: MemoryStub,
) -> None:
    agent = await memory.CreateAgent(
        api.CreateAgentRequest(agent=pb.Agent(name="sam", system="You are Sam."))
    )
    inserted = await memory.ExecuteTool(
        api.ExecuteToolRequest(
            agent_id=agent.id,
            tool_name="archival_memory_insert",
            arguments=json.dumps({"content": "Bob's sister Alice lives in Lisbon."}),
        )
    )
    assert inserted.ok, inserted.text
    passage_id = next(word for word in inserted.text.replace("'", " ").split() if word.startswith("passage-"))
    passage_id = passage_id.strip('.,:;"')

    receipt = await memory.Purge(api.PurgeRequest(passage_id=passage_id))

    assert receipt.target == f"passage/{passage_id}"
    assert receipt.verified, receipt.verification_note
    assert list(receipt.document_ids) == [passage_id]
    counts = {count.store: count.deleted for count in receipt.counts}
    assert counts["passages"] == 1
    assert counts["vector_leg"] == 1
    assert counts["text_leg"] == 1
    found = await memory.ExecuteTool(
        api.ExecuteToolRequest(
            agent_id=agent.id,
            tool_name="archival_memory_search",
            arguments=json.dumps({"query": "where does Alice live"}),
        )
    )
    assert "Lisbon" not in found.text


async def test_purge_without_a_target_is_invalid_argument_and_an_unknown_id_not_found(
    memory: MemoryStub,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as empty:
        await memory.Purge(api.PurgeRequest())
    assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await memory.Purge(api.PurgeRequest(message_id="message-nope"))
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
