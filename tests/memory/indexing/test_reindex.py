"""Reindex (``indexing/reindex.py``) against a real RetrievalService: what it sends, what it drops,
how it reports progress, and that its scope holds (an agent, a tenant, every tenant).

MemoryService runs in-process with RetrievalService unreachable, so the writes stay in its outbox
and RetrievalService's index holds only what the Reindex under test sent (and the "ghost" documents
a test upserts there directly: documents the store does not hold).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing import retrieval_connection
from strata_memory.indexing.reindex import Progress, Reindexer, ReindexScope
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.store import index_jobs, schema
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_serving.errors import NotFound, ResourceExhausted
from tests.hermetic import memory_settings
from tests.retrieval.conftest import embedder, model_cache
from tests.retrieval.service_fixtures import Service, running_service

__all__ = ["embedder", "model_cache"]  # fixtures
A, B = "tenant-a", "tenant-b"
MAX_TEXT = 120  # RetrievalService refuses longer texts here


@dataclass
class Stack:
    memory: MemoryServer
    stub: memory_service_pb2_grpc.MemoryServiceAsyncStub  # a .pyi-only name: annotations are not evaluated
    retrieval: Service
    client: RetrievalConnection

    def reindexer(self, **options: Any) -> Reindexer:
        return Reindexer(self.memory.database, self.client, **options)

    async def agent(self, tenant: str, passages: list[str], messages: list[str]) -> str:
        metadata = (("x-strata-tenant", tenant),)
        agent = await self.stub.CreateAgent(
            api.CreateAgentRequest(agent=pb.Agent(name="sam")), metadata=metadata
        )
        if passages:
            request = api.CreatePassagesRequest(
                agent_id=agent.id, passages=[pb.Passage(text=t) for t in passages]
            )
            await self.stub.CreatePassages(request, metadata=metadata)
        if messages:
            sent = [pb.Message(role=pb.MESSAGE_ROLE_USER, content=t) for t in messages]
            await self.stub.AppendMessages(
                api.AppendMessagesRequest(agent_id=agent.id, messages=sent), metadata=metadata
            )
        return str(agent.id)

    async def indexed(
        self, tenant: str, *, agent_ids: Sequence[str] = (), archive_ids: Sequence[str] = ()
    ) -> set[str]:
        flt = rpb.DocumentFilter(tenant_id=tenant, agent_ids=agent_ids, archive_ids=archive_ids)
        return {document_id async for page in self.client.list_ids(flt) for document_id in page}

    async def ghost(self, document_id: str, tenant: str, **scope: str) -> None:
        document = rpb.Document(
            id=document_id,
            text=f"only the index holds {document_id}",
            kind=rpb.DOCUMENT_KIND_MESSAGE if "agent_id" in scope else rpb.DOCUMENT_KIND_PASSAGE,
            scope=rpb.Scope(tenant_id=tenant, **scope),
        )
        await self.retrieval.stub.UpsertDocuments(rpb.UpsertDocumentsRequest(documents=[document]))


@pytest.fixture
async def stack(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> AsyncIterator[Stack]:
    async with running_service(tmp_path / "retrieval", embedder, max_text_chars=MAX_TEXT) as retrieval:
        memory = await start_memory_server(memory_settings(tmp_path / "m.sqlite3"))
        client = RetrievalConnection(retrieval.app.address)
        try:
            async with grpc.aio.insecure_channel(memory.address) as channel:
                yield Stack(memory, memory_service_pb2_grpc.MemoryServiceStub(channel), retrieval, client)
        finally:
            await client.close()
            await memory.stop(0)


async def progress(reindexer: Reindexer, scope: ReindexScope, batch_size: int) -> list[tuple[int, int]]:
    return [(p.total, p.done) async for p in reindexer.run(scope, batch_size=batch_size)]


async def document_ids(stack: Stack, tenant: str, agent_id: str) -> set[str]:
    metadata = (("x-strata-tenant", tenant),)
    passages = await stack.stub.ListPassages(api.ListPassagesRequest(agent_id=agent_id), metadata=metadata)
    messages = await stack.stub.ListMessages(api.ListMessagesRequest(agent_id=agent_id), metadata=metadata)
    return {p.id for p in passages.passages} | {m.id for m in messages.messages}


async def test_a_tenants_reindex_sends_its_documents_in_batches_with_progress(stack: Stack) -> None:
    agent = await stack.agent(A, ["Ada rows.", "Ada keeps bees.", "Ada bakes."], ["hello", "bye"])
    await stack.agent(B, ["Bo climbs."], ["hi"])
    steps = await progress(stack.reindexer(), ReindexScope(A), batch_size=2)
    assert steps == [(5, 0), (5, 2), (5, 4), (5, 5)]
    assert await stack.indexed(A) == await document_ids(stack, A, agent)
    assert await stack.indexed(B) == set()


async def test_reindex_drops_what_the_store_no_longer_holds_within_its_scope_only(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval_connection, "ID_PAGE", 2)  # the index's ids are read a page at a time
    one = await stack.agent(A, ["Ada rows.", "Ada keeps bees."], ["hello"])
    other = await stack.agent(A, ["Al sails."], ["hey"])
    await stack.agent(B, ["Bo climbs."], [])
    metadata = (("x-strata-tenant", A),)
    archives = await stack.stub.ListArchives(api.ListArchivesRequest(agent_id=one), metadata=metadata)
    (archive,) = [a.id for a in archives.archives]
    for i in range(3):
        await stack.ghost(f"message-ghost-{i}", A, agent_id=one)
    await stack.ghost("passage-ghost-archive", A, archive_id=archive)
    await stack.ghost("message-ghost-other", A, agent_id=other)
    await stack.ghost("passage-ghost-b", B, archive_id="archive-b")

    assert (await progress(stack.reindexer(), ReindexScope(A, one), batch_size=10))[-1] == (3, 3)
    assert await stack.indexed(A, agent_ids=[one]) | await stack.indexed(A, archive_ids=[archive]) == (
        await document_ids(stack, A, one)
    )
    assert "message-ghost-other" in await stack.indexed(A)  # another agent's scope: left alone
    assert await stack.indexed(B) == {"passage-ghost-b"}

    assert (await progress(stack.reindexer(), ReindexScope(A), batch_size=10))[-1] == (5, 5)
    expected = await document_ids(stack, A, one) | await document_ids(stack, A, other)
    assert await stack.indexed(A) == expected
    assert await stack.indexed(B) == {"passage-ghost-b"}


async def test_every_tenant_at_once(stack: Stack) -> None:
    a = await stack.agent(A, ["Ada rows."], ["hello"])
    b = await stack.agent(B, ["Bo climbs.", "Bo brews."], [])
    await stack.ghost("passage-ghost-b", B, archive_id="archive-b")
    steps = await progress(stack.reindexer(), ReindexScope(None), batch_size=1)
    assert steps == [(4, 0), (4, 1), (4, 2), (4, 3), (4, 4)]
    assert await stack.indexed(A) == await document_ids(stack, A, a)
    assert await stack.indexed(B) == await document_ids(stack, B, b)


async def test_a_refused_document_is_handed_to_the_outbox(stack: Stack) -> None:
    agent = await stack.agent(A, ["short one", "x" * (MAX_TEXT + 50)], [])
    stored = await document_ids(stack, A, agent)
    before = await stack.memory.database.read(upsert_jobs)
    await progress(stack.reindexer(), ReindexScope(A), batch_size=10)
    (refused,) = stored - await stack.indexed(A)
    after = await stack.memory.database.read(upsert_jobs)
    assert after - before == Counter([refused])  # one more upsert job, for the refused document only


def upsert_jobs(conn: Connection) -> Counter[str]:
    jobs = schema.index_jobs
    query = select(jobs.c.document_id).where(jobs.c.action == index_jobs.UPSERT)
    return Counter(conn.execute(query).scalars())


async def test_one_reindex_stream_per_tenant_at_a_time(stack: Stack) -> None:
    await stack.agent(A, ["Ada rows."], [])
    reindexer = stack.reindexer(streams_per_tenant=1)
    running = cast(AsyncGenerator[Progress, None], reindexer.run(ReindexScope(A), batch_size=1))
    assert await anext(running) == Progress(1, 0)
    with pytest.raises(ResourceExhausted) as refused:
        await anext(reindexer.run(ReindexScope(A), batch_size=1))
    # the client reads which RPC is limited (by its name), the limit, and what to do
    assert refused.value.reason == "TENANT_CONCURRENCY_LIMIT"
    assert str(refused.value.message) == (
        "tenant 'tenant-a' already has 1 Reindex streams in flight (limit 1); retry with backoff"
    )
    assert await anext(reindexer.run(ReindexScope(B), batch_size=1)) == Progress(0, 0)  # another tenant runs
    await running.aclose()
    assert await progress(reindexer, ReindexScope(A), batch_size=1) == [
        (1, 0),
        (1, 1),
    ]  # the slot is free again


async def test_an_unknown_agent_is_not_found(stack: Stack) -> None:
    with pytest.raises(NotFound):
        await progress(stack.reindexer(), ReindexScope(A, "agent-missing"), batch_size=1)


async def test_messages_are_indexed_under_their_conversation_and_role(stack: Stack) -> None:
    """conversation_search filters by conversation and role inside RetrievalService (operations/search.py):
    what the index holds under each conversation and role is what the store holds there."""
    metadata = (("x-strata-tenant", A),)
    agent = await stack.stub.CreateAgent(
        api.CreateAgentRequest(agent=pb.Agent(name="sam")), metadata=metadata
    )
    await stack.stub.CreateConversation(
        api.CreateConversationRequest(agent_id=agent.id, conversation_id="trip"), metadata=metadata
    )
    roles = {"user": pb.MESSAGE_ROLE_USER, "assistant": pb.MESSAGE_ROLE_ASSISTANT}
    for conversation, (question, answer) in {
        "default": ("hello", "hi"),
        "trip": ("where to?", "the coast"),
    }.items():
        sent = [
            pb.Message(role=roles["user"], content=question),
            pb.Message(role=roles["assistant"], content=answer),
        ]
        await stack.stub.AppendMessages(
            api.AppendMessagesRequest(agent_id=agent.id, conversation_id=conversation, messages=sent),
            metadata=metadata,
        )
    await progress(stack.reindexer(), ReindexScope(A), batch_size=10)
    for conversation in ("default", "trip"):
        for name, role in roles.items():
            request = api.ListMessagesRequest(agent_id=agent.id, conversation_id=conversation, roles=[role])
            stored = {m.id for m in (await stack.stub.ListMessages(request, metadata=metadata)).messages}
            flt = rpb.DocumentFilter(tenant_id=A, conversation_ids=[conversation], roles=[name])
            indexed = {document_id async for page in stack.client.list_ids(flt) for document_id in page}
            assert len(stored) == 1
            assert indexed == stored, (conversation, name)
