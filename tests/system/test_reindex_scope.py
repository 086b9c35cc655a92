"""A tenant's Reindex rebuilds that tenant's index and nothing else.

Two tenants write through MemoryService; tenant B's index also holds a document only
RetrievalService knows (upserted there directly), which any rebuild of B would delete. Tenant A's
Reindex — whole tenant, or one agent — must count and send A's documents only and leave B's index
exactly as it was.
"""

from __future__ import annotations

import grpc
import pytest

from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from tests.servers import ServicePair

A, B = "tenant-a", "tenant-b"
GHOST = rpb.Document(
    id="ghost-of-b",
    text="A note only the index of tenant b holds.",
    kind=rpb.DOCUMENT_KIND_PASSAGE,
    scope=rpb.Scope(tenant_id=B, archive_id="archive-ghost"),
)


def as_tenant(tenant: str) -> tuple[tuple[str, str]]:
    return (("x-strata-tenant", tenant),)


async def write(memory: MemoryStub, tenant: str, texts: list[str]) -> str:
    """An agent of ``tenant`` with one passage and one message per text, searchable; its id."""
    agent = await memory.CreateAgent(
        api.CreateAgentRequest(agent=pb.Agent(name="sam")), metadata=as_tenant(tenant)
    )
    await memory.CreatePassages(
        api.CreatePassagesRequest(
            agent_id=agent.id, passages=[pb.Passage(text=text) for text in texts], wait_searchable=True
        ),
        metadata=as_tenant(tenant),
        timeout=30,
    )
    await memory.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content=text) for text in texts],
            wait_searchable=True,
        ),
        metadata=as_tenant(tenant),
        timeout=30,
    )
    return agent.id


async def index_of(retrieval: RetrievalStub, tenant: str) -> list[tuple[str, str]]:
    """Every indexed (id, text) of ``tenant``, sorted."""
    found = await retrieval.Search(
        rpb.SearchRequest(
            query="", mode=rpb.SEARCH_MODE_HYBRID, filter=rpb.DocumentFilter(tenant_id=tenant), top_k=100
        )
    )
    return sorted((hit.document.id, hit.document.text) for hit in found.hits)


@pytest.mark.parametrize("one_agent", [False, True], ids=["whole-tenant", "one-agent"])
async def test_a_tenants_reindex_leaves_other_tenants_untouched(
    pair: ServicePair, memory: MemoryStub, one_agent: bool
) -> None:
    agent_a = await write(memory, A, ["Ada rows on the Thames.", "Ada keeps bees."])
    await write(memory, B, ["Bo climbs in Fontainebleau.", "Bo brews cider.", "Bo sings bass."])
    async with grpc.aio.insecure_channel(pair.retrieval_address) as channel:
        retrieval: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        await retrieval.UpsertDocuments(rpb.UpsertDocumentsRequest(documents=[GHOST]))
        a_before, b_before = await index_of(retrieval, A), await index_of(retrieval, B)
        assert (len(a_before), len(b_before)) == (4, 7)

        request = api.ReindexRequest(agent_id=agent_a if one_agent else "")
        progress = [step async for step in memory.Reindex(request, metadata=as_tenant(A), timeout=60)]

        assert progress[-1].done
        assert progress[-1].documents_done == progress[-1].documents_total == 4  # A's alone
        assert await index_of(retrieval, A) == a_before
        assert await index_of(retrieval, B) == b_before  # the ghost too: B was not cleared
