"""Two tenants with one of everything, through both real services, and a full read of each one's
state — what the cross-tenant matrix (test_tenant_matrix.py) compares before and after every call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.message import Message

from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb

A, B = "tenant-a", "tenant-b"
CONVERSATION = "c1"


def as_tenant(tenant: str) -> tuple[tuple[str, str]]:
    return (("x-strata-tenant", tenant),)


@dataclass(frozen=True)
class Objects:
    """The ids of one tenant's objects: an agent with two blocks (``notes`` at version 2), a file,
    an archive with a passage, a message in conversation ``c1`` and its recompiled prompt's receipt."""

    tenant: str
    agent: str
    block: str
    spare_block: str
    file: str
    archive: str
    passage: str
    receipt: str
    message: str


async def populate(memory: MemoryStub, tenant: str) -> Objects:
    md = as_tenant(tenant)
    agent = await memory.CreateAgent(
        api.CreateAgentRequest(
            agent=pb.Agent(name=f"agent of {tenant}"),
            blocks=[pb.Block(label="notes", value=f"{tenant} v1"), pb.Block(label="spare", value="s")],
        ),
        metadata=md,
    )
    notes = await memory.UpdateBlock(
        api.UpdateBlockRequest(
            ref=pb.BlockRef(agent_id=agent.id, label="notes"),
            block=pb.Block(value=f"{tenant} v2"),
            update_mask=FieldMask(paths=["value"]),
        ),
        metadata=md,
    )
    spare = await memory.GetBlock(
        api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="spare")), metadata=md
    )
    file = await memory.AttachFile(
        api.AttachFileRequest(
            agent_id=agent.id, file=pb.File(directory="docs", name="a.txt", content=f"{tenant} file")
        ),
        metadata=md,
    )
    archive = await memory.CreateArchive(
        api.CreateArchiveRequest(archive=pb.Archive(name=f"{tenant} facts"), agent_id=agent.id), metadata=md
    )
    passages = await memory.CreatePassages(
        api.CreatePassagesRequest(
            archive_id=archive.id, passages=[pb.Passage(text=f"{tenant} keeps bees")], wait_searchable=True
        ),
        metadata=md,
        timeout=60,
    )
    await memory.CreateConversation(
        api.CreateConversationRequest(agent_id=agent.id, conversation_id=CONVERSATION), metadata=md
    )
    said = await memory.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            conversation_id=CONVERSATION,
            messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"{tenant} says hello")],
            wait_searchable=True,
        ),
        metadata=md,
        timeout=60,
    )
    recompiled = await memory.RecompileSystemPrompt(
        api.RecompileSystemPromptRequest(agent_id=agent.id), metadata=md
    )
    receipt = recompiled.prompt.receipt.id
    return Objects(
        tenant,
        agent.id,
        notes.id,
        spare.id,
        file.id,
        archive.id,
        passages.passages[0].id,
        receipt,
        said.messages[0].id,
    )


def _text(message: Message) -> str:
    return str(message)


async def state(memory: MemoryStub, retrieval: RetrievalStub, own: Objects) -> dict[str, Any]:
    """Everything ``own.tenant`` can read of its objects, and its documents in RetrievalService."""
    md = as_tenant(own.tenant)
    agent = own.agent
    blocks = await memory.ListBlocks(api.ListBlocksRequest(agent_id=agent, page_size=100), metadata=md)
    versions = {
        block.label: _text(
            await memory.ListBlockVersions(
                api.ListBlockVersionsRequest(block=pb.BlockRef(block_id=block.id), page_size=100), metadata=md
            )
        )
        for block in blocks.blocks
    }
    searched = await retrieval.Search(
        rpb.SearchRequest(
            query="", mode=rpb.SEARCH_MODE_HYBRID, filter=rpb.DocumentFilter(tenant_id=own.tenant), top_k=100
        )
    )
    reads: dict[str, Message] = {
        "agents": await memory.ListAgents(api.ListAgentsRequest(page_size=100), metadata=md),
        "agent": await memory.GetAgent(api.GetAgentRequest(agent_id=agent), metadata=md),
        "blocks": blocks,
        "files": await memory.ListFiles(api.ListFilesRequest(agent_id=agent, page_size=100), metadata=md),
        "archives": await memory.ListArchives(
            api.ListArchivesRequest(agent_id=agent, page_size=100), metadata=md
        ),
        "passages": await memory.ListPassages(
            api.ListPassagesRequest(agent_id=agent, page_size=100), metadata=md
        ),
        "messages": await memory.ListMessages(
            api.ListMessagesRequest(agent_id=agent, page_size=100), metadata=md
        ),
        "conversations": await memory.ListConversations(
            api.ListConversationsRequest(agent_id=agent, page_size=100), metadata=md
        ),
        "prompt": await memory.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent), metadata=md),
        "receipt": await memory.GetPromptReceipt(
            api.GetPromptReceiptRequest(receipt_id=own.receipt), metadata=md
        ),
    }
    return {name: _text(message) for name, message in reads.items()} | {
        "versions": versions,
        "index": sorted((hit.document.id, hit.document.text) for hit in searched.hits),
    }
