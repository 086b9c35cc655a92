"""Cross-tenant refusal for every id of every RPC, generated from the service descriptors.

Tenant A calls each MemoryService RPC with one id field naming tenant B's object (the others name
A's own): the call fails NOT_FOUND and both tenants' state — everything each can read, and its
documents in RetrievalService — is what it was. RetrievalService is addressed by tenant explicitly:
a call for tenant A naming B's ids finds, counts and deletes nothing of B's.

The id fields come from the descriptors (``*_id`` fields, a ``BlockRef``'s ids, the resource id of an
Update); ``test_every_id_of_every_rpc_has_a_case`` fails when an RPC or id field has no case here,
and an RPC without ids must say in ``NO_ID`` how it stays within the tenant.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest
import pytest_asyncio
from google.protobuf.descriptor import Descriptor, MethodDescriptor
from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.servers import ServicePair
from tests.system.tenant_world import CONVERSATION, A, B, Objects, as_tenant, populate, state

ASYNC = pytest.mark.asyncio(loop_scope="module")
_EPOCH_PLUS = Timestamp(seconds=1)  # a past moment for DiffMemory's from_time

MEMORY = api.DESCRIPTOR.services_by_name["MemoryService"]
RETRIEVAL = rpb.DESCRIPTOR.services_by_name["RetrievalService"]

NOT_IDS = {
    "conversation_id": "names a conversation inside the agent that agent_id names; the agent is the "
    "tenant boundary, and another tenant's conversation id is only a name",
    "request_id": "a client-chosen idempotency key, kept per tenant and method: another tenant's key "
    "names nothing of the caller's and is applied as a new request "
    "(tests/memory/integration/test_idempotent_writes.py::test_request_ids_are_per_tenant_and_per_method)",
}
NO_ID = {
    "CreateAgent": "creates in the caller's tenant (tenant_id in the request is output only)",
    "ListAgents": "lists the caller's tenant: test_listing_agents_shows_the_callers_own_only",
    "ListTools": "the tool catalogue, the same for every tenant",
    "ImportAgentFile": "creates in the caller's tenant; ids inside the file are the file's own names "
    "(tests/memory/integration/test_agent_files.py::test_an_import_lands_in_the_callers_tenant_only)",
}


def id_fields(method: MethodDescriptor) -> list[str]:
    """The request fields of ``method`` that name an object by id (dotted inside a message)."""
    request: Descriptor = method.input_type
    found = [f.name for f in request.fields if f.name.endswith("_id") and f.name not in NOT_IDS]
    for field in request.fields:
        kind = field.message_type
        if kind is not None and kind.name == "BlockRef":
            found += [f"{field.name}.{name}" for name in ("block_id", "agent_id")]
        elif (
            kind is not None
            and method.name.startswith("Update")
            and not found
            and "id" in kind.fields_by_name
        ):
            found.append(f"{field.name}.id")  # the resource names itself (UpdateAgent)
    return found


def _ref(label: str = "notes", **ids: str) -> pb.BlockRef:
    return pb.BlockRef(label=label if "agent_id" in ids else "", **ids)


Build = Callable[[Objects, Objects], Message]
"""(own, foreign) -> the request tenant A sends."""

CASES: dict[tuple[str, str], Build] = {
    ("GetAgent", "agent_id"): lambda a, b: api.GetAgentRequest(agent_id=b.agent),
    ("UpdateAgent", "agent.id"): lambda a, b: api.UpdateAgentRequest(
        agent=pb.Agent(id=b.agent, name="taken"), update_mask=FieldMask(paths=["name"])
    ),
    ("DeleteAgent", "agent_id"): lambda a, b: api.DeleteAgentRequest(agent_id=b.agent),
    ("CreateBlock", "agent_id"): lambda a, b: api.CreateBlockRequest(
        agent_id=b.agent, block=pb.Block(label="planted", value="x")
    ),
    ("GetBlock", "block.block_id"): lambda a, b: api.GetBlockRequest(block=_ref(block_id=b.block)),
    ("GetBlock", "block.agent_id"): lambda a, b: api.GetBlockRequest(block=_ref(agent_id=b.agent)),
    ("ListBlocks", "agent_id"): lambda a, b: api.ListBlocksRequest(agent_id=b.agent),
    ("UpdateBlock", "ref.block_id"): lambda a, b: api.UpdateBlockRequest(
        ref=_ref(block_id=b.block), block=pb.Block(value="taken"), update_mask=FieldMask(paths=["value"])
    ),
    ("UpdateBlock", "ref.agent_id"): lambda a, b: api.UpdateBlockRequest(
        ref=_ref(agent_id=b.agent), block=pb.Block(value="taken"), update_mask=FieldMask(paths=["value"])
    ),
    ("DeleteBlock", "block.block_id"): lambda a, b: api.DeleteBlockRequest(block=_ref(block_id=b.block)),
    ("DeleteBlock", "block.agent_id"): lambda a, b: api.DeleteBlockRequest(block=_ref(agent_id=b.agent)),
    ("AttachBlock", "agent_id"): lambda a, b: api.AttachBlockRequest(agent_id=b.agent, block_id=a.block),
    ("AttachBlock", "block_id"): lambda a, b: api.AttachBlockRequest(agent_id=a.agent, block_id=b.block),
    ("DetachBlock", "agent_id"): lambda a, b: api.DetachBlockRequest(agent_id=b.agent, block_id=b.block),
    ("DetachBlock", "block_id"): lambda a, b: api.DetachBlockRequest(agent_id=a.agent, block_id=b.block),
    ("ListBlockVersions", "block.block_id"): lambda a, b: api.ListBlockVersionsRequest(
        block=_ref(block_id=b.block)
    ),
    ("ListBlockVersions", "block.agent_id"): lambda a, b: api.ListBlockVersionsRequest(
        block=_ref(agent_id=b.agent)
    ),
    ("DiffBlockVersions", "block.block_id"): lambda a, b: api.DiffBlockVersionsRequest(
        block=_ref(block_id=b.block), from_version=1, to_version=2
    ),
    ("DiffBlockVersions", "block.agent_id"): lambda a, b: api.DiffBlockVersionsRequest(
        block=_ref(agent_id=b.agent), from_version=1, to_version=2
    ),
    ("RestoreBlockVersion", "block.block_id"): lambda a, b: api.RestoreBlockVersionRequest(
        block=_ref(block_id=b.block), version=1
    ),
    ("RestoreBlockVersion", "block.agent_id"): lambda a, b: api.RestoreBlockVersionRequest(
        block=_ref(agent_id=b.agent), version=1
    ),
    ("CreateConversation", "agent_id"): lambda a, b: api.CreateConversationRequest(
        agent_id=b.agent, conversation_id="planted"
    ),
    ("ListConversations", "agent_id"): lambda a, b: api.ListConversationsRequest(agent_id=b.agent),
    ("AttachFile", "agent_id"): lambda a, b: api.AttachFileRequest(
        agent_id=b.agent, file=pb.File(directory="docs", name="planted.txt", content="x")
    ),
    ("UpdateFile", "file_id"): lambda a, b: api.UpdateFileRequest(
        file_id=b.file, file=pb.File(content="taken"), update_mask=FieldMask(paths=["content"])
    ),
    ("ListFiles", "agent_id"): lambda a, b: api.ListFilesRequest(agent_id=b.agent),
    ("DetachFile", "file_id"): lambda a, b: api.DetachFileRequest(file_id=b.file),
    ("AppendMessages", "agent_id"): lambda a, b: api.AppendMessagesRequest(
        agent_id=b.agent,
        conversation_id=CONVERSATION,
        messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="planted")],
    ),
    ("AppendMessages", "prompt_receipt_id"): lambda a, b: api.AppendMessagesRequest(
        agent_id=a.agent,
        conversation_id=CONVERSATION,
        messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="planted")],
        prompt_receipt_id=b.receipt,
    ),
    ("ListMessages", "agent_id"): lambda a, b: api.ListMessagesRequest(agent_id=b.agent),
    ("CreateArchive", "agent_id"): lambda a, b: api.CreateArchiveRequest(
        agent_id=b.agent, archive=pb.Archive(name="planted")
    ),
    ("GetArchive", "archive_id"): lambda a, b: api.GetArchiveRequest(archive_id=b.archive),
    ("ListArchives", "agent_id"): lambda a, b: api.ListArchivesRequest(agent_id=b.agent),
    ("DeleteArchive", "archive_id"): lambda a, b: api.DeleteArchiveRequest(archive_id=b.archive),
    ("AttachArchive", "agent_id"): lambda a, b: api.AttachArchiveRequest(
        agent_id=b.agent, archive_id=a.archive
    ),
    ("AttachArchive", "archive_id"): lambda a, b: api.AttachArchiveRequest(
        agent_id=a.agent, archive_id=b.archive
    ),
    ("DetachArchive", "agent_id"): lambda a, b: api.DetachArchiveRequest(
        agent_id=b.agent, archive_id=b.archive
    ),
    ("DetachArchive", "archive_id"): lambda a, b: api.DetachArchiveRequest(
        agent_id=a.agent, archive_id=b.archive
    ),
    ("CreatePassages", "agent_id"): lambda a, b: api.CreatePassagesRequest(
        agent_id=b.agent, passages=[pb.Passage(text="planted")]
    ),
    ("CreatePassages", "archive_id"): lambda a, b: api.CreatePassagesRequest(
        archive_id=b.archive, passages=[pb.Passage(text="planted")]
    ),
    ("ListPassages", "archive_id"): lambda a, b: api.ListPassagesRequest(archive_id=b.archive),
    ("ListPassages", "agent_id"): lambda a, b: api.ListPassagesRequest(agent_id=b.agent),
    ("DeletePassage", "passage_id"): lambda a, b: api.DeletePassageRequest(passage_id=b.passage),
    ("SearchArchival", "agent_id"): lambda a, b: api.SearchArchivalRequest(agent_id=b.agent, query="bees"),
    ("SearchMessages", "agent_id"): lambda a, b: api.SearchMessagesRequest(agent_id=b.agent, query="hello"),
    ("Reindex", "agent_id"): lambda a, b: api.ReindexRequest(agent_id=b.agent),
    ("RenderMemory", "agent_id"): lambda a, b: api.RenderMemoryRequest(agent_id=b.agent),
    ("RenderMemory", "receipt_id"): lambda a, b: api.RenderMemoryRequest(
        agent_id=a.agent, receipt_id=b.receipt
    ),
    ("ListBlocks", "receipt_id"): lambda a, b: api.ListBlocksRequest(agent_id=a.agent, receipt_id=b.receipt),
    ("DiffMemory", "agent_id"): lambda a, b: api.DiffMemoryRequest(agent_id=b.agent, from_time=_EPOCH_PLUS),
    ("DiffMemory", "from_receipt_id"): lambda a, b: api.DiffMemoryRequest(
        agent_id=a.agent, from_receipt_id=b.receipt
    ),
    ("DiffMemory", "to_receipt_id"): lambda a, b: api.DiffMemoryRequest(
        agent_id=a.agent, from_receipt_id=a.receipt, to_receipt_id=b.receipt
    ),
    ("GetSystemPrompt", "agent_id"): lambda a, b: api.GetSystemPromptRequest(agent_id=b.agent),
    ("GetPromptReceipt", "receipt_id"): lambda a, b: api.GetPromptReceiptRequest(receipt_id=b.receipt),
    ("RecompileSystemPrompt", "agent_id"): lambda a, b: api.RecompileSystemPromptRequest(agent_id=b.agent),
    ("ExportAgentFile", "agent_id"): lambda a, b: api.ExportAgentFileRequest(
        agent_id=b.agent, with_messages=True
    ),
    ("Purge", "agent_id"): lambda a, b: api.PurgeRequest(agent_id=b.agent),
    ("Purge", "block_id"): lambda a, b: api.PurgeRequest(block_id=b.block),
    ("Purge", "passage_id"): lambda a, b: api.PurgeRequest(passage_id=b.passage),
    ("Purge", "message_id"): lambda a, b: api.PurgeRequest(message_id=b.message),
    ("ExecuteTool", "agent_id"): lambda a, b: api.ExecuteToolRequest(
        agent_id=b.agent, tool_name="core_memory_append", arguments='{"label": "notes", "content": "taken"}'
    ),
}

RETRIEVAL_CASES: dict[tuple[str, str], Build] = {
    ("DeleteDocuments", "ids.ids"): lambda a, b: rpb.DeleteDocumentsRequest(
        ids=rpb.DocumentIds(tenant_id=a.tenant, ids=[b.passage])
    ),
    ("DeleteDocuments", "filter.agent_ids"): lambda a, b: rpb.DeleteDocumentsRequest(
        filter=rpb.DocumentFilter(tenant_id=a.tenant, agent_ids=[b.agent])
    ),
    ("DeleteDocuments", "filter.archive_ids"): lambda a, b: rpb.DeleteDocumentsRequest(
        filter=rpb.DocumentFilter(tenant_id=a.tenant, archive_ids=[b.archive])
    ),
    ("Search", "filter.agent_ids"): lambda a, b: rpb.SearchRequest(
        query="hello",
        mode=rpb.SEARCH_MODE_HYBRID,
        top_k=10,
        filter=rpb.DocumentFilter(tenant_id=a.tenant, agent_ids=[b.agent]),
    ),
    ("Search", "filter.archive_ids"): lambda a, b: rpb.SearchRequest(
        query="bees",
        mode=rpb.SEARCH_MODE_HYBRID,
        top_k=10,
        filter=rpb.DocumentFilter(tenant_id=a.tenant, archive_ids=[b.archive]),
    ),
    ("ListDocumentIds", "filter.agent_ids"): lambda a, b: rpb.ListDocumentIdsRequest(
        filter=rpb.DocumentFilter(tenant_id=a.tenant, agent_ids=[b.agent])
    ),
    ("ListDocumentIds", "filter.archive_ids"): lambda a, b: rpb.ListDocumentIdsRequest(
        filter=rpb.DocumentFilter(tenant_id=a.tenant, archive_ids=[b.archive])
    ),
    ("Stats", "filter.agent_ids"): lambda a, b: rpb.StatsRequest(
        filter=rpb.DocumentFilter(tenant_id=a.tenant, agent_ids=[b.agent])
    ),
    ("Stats", "filter.archive_ids"): lambda a, b: rpb.StatsRequest(
        filter=rpb.DocumentFilter(tenant_id=a.tenant, archive_ids=[b.archive])
    ),
    ("FindDocuments", "ids.ids"): lambda a, b: rpb.FindDocumentsRequest(
        ids=rpb.DocumentIds(tenant_id=a.tenant, ids=[b.passage, b.message])
    ),
}
RETRIEVAL_EXEMPT = {
    "filter.conversation_ids": "conversation ids are names inside an agent (see NOT_IDS); the agent and "
    "archive filters are the ones that name another tenant's objects",
    "documents.id": "an upsert for tenant A with B's document id is A's own document "
    "(test_same_id_in_two_tenants_are_two_documents)",
}


def retrieval_id_fields(method: MethodDescriptor) -> list[str]:
    """Fields of ``method``'s request, one message deep, that carry document, agent, archive or
    conversation ids (the tenant is named explicitly in RetrievalService)."""
    return [
        f"{field.name}.{inner.name}"
        for field in method.input_type.fields
        if field.message_type is not None
        for inner in field.message_type.fields
        if inner.name in {"id", "ids"} or inner.name.endswith("_ids")
    ]


class World:
    def __init__(
        self, pair: ServicePair, memory: MemoryStub, retrieval: RetrievalStub, a: Objects, b: Objects
    ) -> None:
        self.pair, self.memory, self.retrieval, self.a, self.b = pair, memory, retrieval, a, b

    async def both(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return await state(self.memory, self.retrieval, self.a), await state(
            self.memory, self.retrieval, self.b
        )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(
    tmp_path_factory: pytest.TempPathFactory, system_embedder: OnnxSentenceEmbedder
) -> AsyncIterator[World]:
    pair = ServicePair(tmp_path_factory.mktemp("tenants"), system_embedder)
    await pair.start_retrieval()
    await pair.start_memory()
    assert pair.memory is not None
    async with (
        grpc.aio.insecure_channel(pair.memory.address) as memory_channel,
        grpc.aio.insecure_channel(pair.retrieval_address) as retrieval_channel,
    ):
        memory: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(memory_channel)
        retrieval: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(retrieval_channel)
        a, b = await populate(memory, A), await populate(memory, B)
        yield World(pair, memory, retrieval, a, b)
    await pair.stop_memory()
    await pair.stop_retrieval()


def test_every_id_of_every_rpc_has_a_case() -> None:
    generated = {(m.name, field) for m in MEMORY.methods for field in id_fields(m)}
    assert generated == set(CASES)
    without = {m.name for m in MEMORY.methods if not id_fields(m)}
    assert without == set(NO_ID)
    retrieval = {(m.name, field) for m in RETRIEVAL.methods for field in retrieval_id_fields(m)}
    assert retrieval == set(RETRIEVAL_CASES) | {
        (m.name, f) for m in RETRIEVAL.methods for f in retrieval_id_fields(m) if f in RETRIEVAL_EXEMPT
    }


@ASYNC
@pytest.mark.parametrize(("rpc", "field"), sorted(CASES))
async def test_another_tenants_id_is_not_found_and_changes_nothing(
    world: World, rpc: str, field: str
) -> None:
    before = await world.both()
    request = CASES[rpc, field](world.a, world.b)
    method = getattr(world.memory, rpc)
    streaming = MEMORY.methods_by_name[rpc].server_streaming

    async def call() -> None:
        if streaming:
            async for _ in method(request, metadata=as_tenant(A), timeout=30):
                pass
        else:
            await method(request, metadata=as_tenant(A), timeout=30)

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call()
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND, caught.value.details()
    assert await world.both() == before


@ASYNC
@pytest.mark.parametrize(("rpc", "field"), sorted(RETRIEVAL_CASES))
async def test_retrieval_calls_for_one_tenant_never_reach_anothers_documents(
    world: World, rpc: str, field: str
) -> None:
    before = await world.both()
    reply = await getattr(world.retrieval, rpc)(RETRIEVAL_CASES[rpc, field](world.a, world.b), timeout=30)
    if rpc == "DeleteDocuments":
        assert reply.deleted_count == 0
    elif rpc == "Search":
        assert list(reply.hits) == []
    elif rpc == "ListDocumentIds":
        assert list(reply.ids) == []
    elif rpc == "FindDocuments":
        assert (list(reply.vector_ids), list(reply.text_ids)) == ([], [])
    else:
        assert reply.document_count == 0
    assert await world.both() == before


@ASYNC
async def test_listing_agents_shows_the_callers_own_only(world: World) -> None:
    for own in (world.a, world.b):
        listed = await world.memory.ListAgents(api.ListAgentsRequest(), metadata=as_tenant(own.tenant))
        assert [agent.id for agent in listed.agents] == [own.agent]
