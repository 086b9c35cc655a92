"""What the purge suites build and read: one tenant's memory with a secret word in every kind of
content, a full read of every store table (to count what a purge deleted, independently of the
receipt), and reads of each index leg by id and by text.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.field_mask_pb2 import FieldMask
from sqlalchemy import create_engine, select

from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.store import schema
from strata_retrieval.embedding.protocol import Embedder
from tests.retrieval.service_fixtures import ENGINES
from tests.servers import ServicePair

TENANT = "default"
SECRET = "zorblaxian"
"""A word no other text holds: its presence anywhere after a purge is a copy the purge missed."""
NOTES = "velmorine"
"""The word in every version of ``sam``'s own block ``notes``."""
SHARED = "quintarion"
"""The word in the block two agents hold (it outlives a purge of only one of them)."""
BY_KEY = {"agents", "archives", "blocks"}
"""Tables whose rows a purge may update in place (counts, versions): a row counts as deleted only when
its key is gone. Every other table's row counts as deleted when that exact row is gone."""
TABLE_STORES = {
    "agents",
    "blocks",
    "block_versions",
    "block_attachments",
    "conversations",
    "messages",
    "archives",
    "passages",
    "files",
    "system_prompts",
    "prompt_snapshots",
    "prompt_receipts",
    "agent_file_residues",
    "write_requests",
    "index_jobs",
}


@dataclass(frozen=True)
class World:
    """One agent ``sam`` holding its own block ``notes`` (three versions, :data:`NOTES` in each), the
    block ``team`` shared with agent ``kim`` (two versions, :data:`SHARED`), a file, two passages and
    two conversations of messages (:data:`SECRET` in each but the replies), and compiled prompts."""

    agent: str
    other: str
    notes: str
    team: str
    passages: tuple[str, ...]
    messages: tuple[str, ...]
    conversation_messages: tuple[str, ...]
    """The messages of conversation ``walks`` (the rest are in ``default``)."""


def metadata(tenant: str) -> tuple[tuple[str, str]]:
    return (("x-strata-tenant", tenant),)


async def build(memory: MemoryStub, tenant: str = TENANT) -> World:
    md = metadata(tenant)
    sam = await memory.CreateAgent(
        api.CreateAgentRequest(
            agent=pb.Agent(name="sam", system="You are Sam."),
            blocks=[pb.Block(label="notes", value=f"{NOTES} v1", limit=2000)],
        ),
        metadata=md,
    )
    kim = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="kim")), metadata=md)
    for version in (2, 3):
        await memory.UpdateBlock(
            api.UpdateBlockRequest(
                ref=pb.BlockRef(agent_id=sam.id, label="notes"),
                block=pb.Block(value=f"{NOTES} notes v{version}"),
                update_mask=FieldMask(paths=["value"]),
            ),
            metadata=md,
        )
    notes = await memory.GetBlock(
        api.GetBlockRequest(block=pb.BlockRef(agent_id=sam.id, label="notes")), metadata=md
    )
    team = await memory.CreateBlock(
        api.CreateBlockRequest(block=pb.Block(label="team", value=f"{SHARED} v1"), agent_id=sam.id),
        metadata=md,
    )
    await memory.AttachBlock(api.AttachBlockRequest(agent_id=kim.id, block_id=team.id), metadata=md)
    await memory.UpdateBlock(
        api.UpdateBlockRequest(
            ref=pb.BlockRef(block_id=team.id),
            block=pb.Block(value=f"{SHARED} team v2"),
            update_mask=FieldMask(paths=["value"]),
        ),
        metadata=md,
    )
    await memory.AttachFile(
        api.AttachFileRequest(
            agent_id=sam.id, file=pb.File(directory="docs", name="a.txt", content=f"{SECRET} file")
        ),
        metadata=md,
    )
    passages = await memory.CreatePassages(
        api.CreatePassagesRequest(
            agent_id=sam.id,
            passages=[
                pb.Passage(text=f"The {SECRET} lantern hangs in the attic.", tags=["attic"]),
                pb.Passage(text=f"Sam's {SECRET} code is 4471.", tags=["codes"]),
            ],
            wait_searchable=True,
        ),
        metadata=md,
        timeout=60,
    )
    said = await _talk(memory, md, sam.id, "default", f"My {SECRET} cat sleeps on the stove.")
    walked = await _talk(memory, md, sam.id, "walks", f"The {SECRET} path runs along the river.")
    for agent_id in (sam.id, kim.id):
        await memory.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent_id), metadata=md)
    await memory.RecompileSystemPrompt(
        api.RecompileSystemPromptRequest(agent_id=sam.id, conversation_id="walks"), metadata=md
    )
    return World(
        agent=sam.id,
        other=kim.id,
        notes=notes.id,
        team=team.id,
        passages=tuple(p.id for p in passages.passages),
        messages=said + walked,
        conversation_messages=walked,
    )


async def _talk(memory: MemoryStub, md: Any, agent_id: str, conversation: str, text: str) -> tuple[str, ...]:
    if conversation != "default":
        await memory.CreateConversation(
            api.CreateConversationRequest(agent_id=agent_id, conversation_id=conversation), metadata=md
        )
    appended = await memory.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent_id,
            conversation_id=conversation,
            messages=[
                pb.Message(role=pb.MESSAGE_ROLE_USER, content=text),
                pb.Message(role=pb.MESSAGE_ROLE_ASSISTANT, content="Noted."),
            ],
            wait_searchable=True,
        ),
        metadata=md,
        timeout=60,
    )
    return tuple(m.id for m in appended.messages)


def read_tables(url: str) -> dict[str, set[tuple[Any, ...]]]:
    """Every row of every store table, as tuples of its columns' text (JSON columns as text too)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {
                table.name: {tuple(str(v) for v in row) for row in conn.execute(select(table))}
                for table in schema.metadata.sorted_tables
            }
    finally:
        engine.dispose()


def deleted_rows(
    before: dict[str, set[tuple[Any, ...]]], after: dict[str, set[tuple[Any, ...]]], *, prompts_by_key: bool
) -> dict[str, int]:
    """Per receipt store held in a table, how many of ``before``'s rows are gone in ``after``.

    ``prompts_by_key``: a compiled prompt recompiled in place (its counts moved) is not deleted; a
    block purge deletes every prompt that rendered the block and recompiles its holders' anew, so
    there a changed prompt row counts as deleted."""
    gone: dict[str, int] = {}
    for name in TABLE_STORES:
        table = schema.metadata.tables[name]
        if name in BY_KEY or (prompts_by_key and name == "system_prompts"):
            key = [i for i, column in enumerate(table.columns) if column.primary_key]
            keys_after = {tuple(row[i] for i in key) for row in after[name]}
            gone[name] = sum(tuple(row[i] for i in key) not in keys_after for row in before[name])
        else:
            gone[name] = len(before[name] - after[name])
    return gone


def rows_holding(tables: dict[str, set[tuple[Any, ...]]], word: str) -> dict[str, int]:
    """Per table, how many rows hold ``word`` in any column (only tables with such rows)."""
    found = {name: sum(any(word in value for value in row) for row in rows) for name, rows in tables.items()}
    return {name: count for name, count in found.items() if count}


async def held(
    retrieval: RetrievalStub, ids: Sequence[str], tenant: str = TENANT
) -> tuple[set[str], set[str]]:
    """The ids each leg holds (vector, text), read by key."""
    found = await retrieval.FindDocuments(
        rpb.FindDocumentsRequest(ids=rpb.DocumentIds(tenant_id=tenant, ids=list(ids)))
    )
    return set(found.vector_ids), set(found.text_ids)


async def texts_found(retrieval: RetrievalStub, query: str, tenant: str = TENANT) -> dict[str, list[str]]:
    """What each leg answers to ``query`` on its own: the texts of its hits."""
    answers = {}
    for leg, mode in (("vector", rpb.SEARCH_MODE_VECTOR), ("text", rpb.SEARCH_MODE_FTS)):
        response = await retrieval.Search(
            rpb.SearchRequest(query=query, mode=mode, filter=rpb.DocumentFilter(tenant_id=tenant), top_k=50)
        )
        answers[leg] = [hit.document.text for hit in response.hits]
    return answers


async def until_held(
    retrieval: RetrievalStub, ids: Sequence[str], *, held_by_both: bool, within: float = 60.0
) -> None:
    """Wait until both legs hold every id (``held_by_both``) or neither holds any."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        vector, text = await held(retrieval, ids)
        if held_by_both and vector == text == set(ids):
            return
        if not held_by_both and not vector and not text:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"after {within:.0f} s the legs hold {sorted(vector)} and {sorted(text)}")
        await asyncio.sleep(0.2)


def receipt_counts(receipt: api.PurgeReceipt) -> dict[str, int]:
    return {count.store: int(count.deleted) for count in receipt.counts}


@dataclass
class Stack:
    """Both services running for a purge test, and where the store is."""

    pair: ServicePair
    url: str
    memory: MemoryStub
    retrieval: RetrievalStub


@asynccontextmanager
async def running_stack(
    root: Path, embedder: Embedder, url: str, engine: str, **memory_settings: Any
) -> AsyncIterator[Stack]:
    pair = ServicePair(root, embedder, retrieval_settings=dict(ENGINES[engine]))
    pair.memory_settings = {"database_url": url, **memory_settings}
    await pair.start()
    try:
        async with (
            grpc.aio.insecure_channel(pair.memory_address) as memory_channel,
            grpc.aio.insecure_channel(pair.retrieval_address) as retrieval_channel,
        ):
            yield Stack(
                pair,
                url,
                memory_service_pb2_grpc.MemoryServiceStub(memory_channel),
                retrieval_pb2_grpc.RetrievalServiceStub(retrieval_channel),
            )
    finally:
        await pair.stop()


async def purge_and_check(
    stack: Stack, request: api.PurgeRequest, documents: Sequence[str], words: Sequence[str]
) -> api.PurgeReceipt:
    """Purge, then check the receipt against the tables and legs read before and after (see above)."""
    await until_held(stack.retrieval, documents, held_by_both=True)
    before = read_tables(stack.url)
    vector_before, text_before = await held(stack.retrieval, documents)
    receipt = await stack.memory.Purge(request, timeout=60)
    after = read_tables(stack.url)

    counts = receipt_counts(receipt)
    gone = deleted_rows(before, after, prompts_by_key=not request.block_id)
    assert {store: counts[store] for store in gone} == gone
    assert counts["vector_leg"] == len(vector_before) == len(documents)
    assert counts["text_leg"] == len(text_before) == len(documents)
    assert list(receipt.document_ids) == sorted(documents)
    assert receipt.verified, receipt.verification_note
    assert list(receipt.remaining_ids) == []
    assert await held(stack.retrieval, documents) == (set(), set())
    for word in words:
        assert rows_holding(after, word) == {}, word
        found = await texts_found(stack.retrieval, word)
        assert [t for leg in found.values() for t in leg if word in t] == [], word
    return receipt
