"""Fault-matrix rows for a hostile tenant (issue 14): a poison message, a cancelled Reindex, a flood.

Each scenario starts RetrievalService (real embedder) and MemoryService with API keys on, writes as
two tenants, and counts writes attempted, acknowledged and searchable afterwards (what RetrievalService
holds for the tenants, asked with the service key). ``test_hostile_matrix.py`` asserts on the rows;
``scripts/fault_matrix.py`` prints them.
"""

from __future__ import annotations

import time
from pathlib import Path

import grpc

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.security.conftest import AUTH_MEMORY, AUTH_RETRIEVAL, new_tenant, searchable
from tests.security.faults import Row
from tests.servers import ServicePair


def _notes(row: Row, text: str) -> None:
    row.notes = f"{row.notes}; {text}" if row.notes else text


def _expect_all_present(row: Row, what: str) -> None:
    if row.present < row.acknowledged:
        row.problems.append(f"{row.acknowledged - row.present} {what} not searchable")


async def poison_message(root: Path, embedder: OnnxSentenceEmbedder) -> Row:
    """A tenant stores tool-call arguments nested 3,000 deep and an escaped lone surrogate; another
    tenant then writes with wait_searchable."""
    row = Row("poison messages (JSON 3,000 deep, lone surrogate) from one tenant")
    async with (
        ServicePair(root, embedder, dict(AUTH_RETRIEVAL), dict(AUTH_MEMORY)) as stack,
        grpc.aio.insecure_channel(stack.memory_address) as channel,
    ):
        hostile, hostile_key, hostile_agent = await new_tenant(channel, "hostile")
        quiet, quiet_key, quiet_agent = await new_tenant(channel, "quiet")
        calls = [
            pb.Message(
                role=pb.MESSAGE_ROLE_ASSISTANT,
                tool_calls=[pb.ToolCall(id="c", name="send_message", arguments=arguments)],
            )
            for arguments in ("[" * 3000, '{"m": "otters \\ud800"}')
        ]
        row.attempted += len(calls)
        await hostile.AppendMessages(
            api.AppendMessagesRequest(agent_id=hostile_agent, messages=calls), metadata=hostile_key
        )
        row.acknowledged += len(calls)
        started = time.monotonic()
        row.attempted += 1
        try:
            await quiet.AppendMessages(
                api.AppendMessagesRequest(
                    agent_id=quiet_agent,
                    messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="a quiet remark")],
                    wait_searchable=True,
                ),
                metadata=quiet_key,
                timeout=30,
            )
            row.acknowledged += 1
            _notes(row, f"other tenant's wait_searchable answered in {time.monotonic() - started:.1f} s")
        except grpc.aio.AioRpcError as error:
            row.refused(error.code())
            row.problems.append(f"the other tenant's wait_searchable failed: {error.code().name}")
        row.present = await searchable(stack, "hostile") + await searchable(stack, "quiet")
        _expect_all_present(row, "acknowledged messages")
    return row


async def cancelled_reindex(root: Path, embedder: OnnxSentenceEmbedder, *, messages: int = 300) -> Row:
    """A tenant's Reindex is cancelled after four progress messages."""
    row = Row("Reindex cancelled mid-stream")
    async with (
        ServicePair(root, embedder, dict(AUTH_RETRIEVAL), dict(AUTH_MEMORY)) as stack,
        grpc.aio.insecure_channel(stack.memory_address) as channel,
    ):
        stub, key, agent_id = await new_tenant(channel, "tenant")
        written = [pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"note {i}") for i in range(messages)]
        row.attempted = messages
        await stub.AppendMessages(
            api.AppendMessagesRequest(agent_id=agent_id, messages=written, wait_searchable=True),
            metadata=key,
            timeout=600,
        )
        row.acknowledged = messages
        call = stub.Reindex(api.ReindexRequest(batch_size=20), metadata=key)
        seen = 0
        async for progress in call:
            seen += 1
            if seen == 4:
                _notes(row, f"cancelled at {progress.documents_done}/{progress.documents_total}")
                call.cancel()
                break
        row.present = await searchable(stack, "tenant")
        _expect_all_present(row, "stored messages")
    return row


async def tenant_flood(root: Path, embedder: OnnxSentenceEmbedder, *, noisy: int = 1_000) -> Row:
    """A tenant appends ``noisy`` messages; another tenant then writes one with wait_searchable."""
    row = Row(f"tenant flood ({noisy:,} messages) beside a quiet tenant")
    async with (
        ServicePair(root, embedder, dict(AUTH_RETRIEVAL), dict(AUTH_MEMORY)) as stack,
        grpc.aio.insecure_channel(stack.memory_address) as channel,
    ):
        loud, loud_key, loud_agent = await new_tenant(channel, "noisy")
        quiet, quiet_key, quiet_agent = await new_tenant(channel, "quiet")
        for start in range(0, noisy, 1_000):
            batch = [
                pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"noisy note {i}")
                for i in range(start, min(noisy, start + 1_000))
            ]
            row.attempted += len(batch)
            await loud.AppendMessages(
                api.AppendMessagesRequest(agent_id=loud_agent, messages=batch), metadata=loud_key
            )
            row.acknowledged += len(batch)
        row.attempted += 1
        started = time.monotonic()
        await quiet.AppendMessages(
            api.AppendMessagesRequest(
                agent_id=quiet_agent,
                messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="a quiet remark")],
                wait_searchable=True,
            ),
            metadata=quiet_key,
            timeout=600,
        )
        row.acknowledged += 1
        waited = time.monotonic() - started
        backlog_left = noisy - await searchable(stack, "noisy")
        _notes(row, f"quiet write searchable in {waited:.1f} s with {backlog_left} noisy jobs still queued")
        if backlog_left == 0:
            row.problems.append("the quiet write waited for the whole backlog")
        await loud.AppendMessages(  # wait for the backlog, then count what is searchable
            api.AppendMessagesRequest(
                agent_id=loud_agent,
                messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="last")],
                wait_searchable=True,
            ),
            metadata=loud_key,
            timeout=1_200,
        )
        row.present = await searchable(stack, "noisy") - 1 + await searchable(stack, "quiet")
        _expect_all_present(row, "acknowledged messages")
    return row
