"""Sending documents to RetrievalService so that one bad document cannot hold back any other.

Documents are read from the store and built one at a time (a document that cannot be built is set
aside with its reason), cut into requests by encoded size so none exceeds RetrievalService's
receive limit (a document over it on its own is set aside), and a request RetrievalService refuses
is split in halves until each refused document is alone. Transport failures (RetrievalService
unreachable, out of time) are not refusals: they propagate as ``StrataError`` for the caller to
retry everything later.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import grpc
from sqlalchemy.engine import Connection

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.documents import message_document, passage_document
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import archives as archive_rows
from strata_memory.store import messages as message_rows
from strata_memory.store.database import Database
from strata_memory.store.records import MessageRecord, PassageRecord

log = logging.getLogger("strata.memory.outbox")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Refused:
    """A document (or scope) that could not be indexed, and why."""

    document_id: str
    reason: str
    final: bool = False
    """True when retrying cannot help (it cannot be built, or it is larger than any request may be)."""


@dataclass(frozen=True, slots=True)
class Built:
    documents: list[rpb.Document]
    refused: list[Refused]


def documents_as_stored(
    conn: Connection,
    tenant_id: str,
    ids: Sequence[str],
    *,
    context_turns: int = 0,
    context_legs: str = "both",
) -> Built:
    """The documents for these ids as the store holds them now (deleted ones are skipped, each id
    once). A message is indexed with up to ``context_turns`` preceding turns of its conversation,
    read by the legs ``context_legs`` names."""
    passages, messages = stored(conn, tenant_id, ids)
    built: list[rpb.Document] = []
    refused: list[Refused] = []
    records: list[PassageRecord | MessageRecord] = [*passages, *messages]
    context = (
        message_rows.preceding_turns_of(conn, messages, context_turns) if context_turns and messages else {}
    )
    for record in records:
        try:
            if isinstance(record, PassageRecord):
                built.append(passage_document(record))
            else:
                turns = context.get(record.id, ())
                built.append(message_document(record, turns, context_legs=context_legs))
        except Exception as failure:  # a stored value no rule foresaw: set it aside, index the rest
            log.exception("index document %s could not be built", record.id)
            refused.append(Refused(record.id, f"cannot be built: {type(failure).__name__}: {failure}", True))
    return Built(built, refused)


def current_documents(
    conn: Connection, tenant_id: str, ids: Sequence[str], *, context_turns: int = 0
) -> list[rpb.Document]:
    """The documents of ``documents_as_stored`` that could be built."""
    return documents_as_stored(conn, tenant_id, ids, context_turns=context_turns).documents


def stored(
    conn: Connection, tenant_id: str, ids: Sequence[str]
) -> tuple[list[PassageRecord], list[MessageRecord]]:
    """The passages and the messages among ``ids`` that the store holds now (each once)."""
    unique = list(dict.fromkeys(ids))
    passage_ids = [i for i in unique if i.startswith("passage-")]
    message_ids = [i for i in unique if i.startswith("message-")]
    passages = archive_rows.get_passages(conn, tenant_id, passage_ids) if passage_ids else []
    messages = message_rows.get_messages(conn, tenant_id, message_ids) if message_ids else []
    return passages, messages


def byte_batches(
    documents: Sequence[rpb.Document], budget: int, max_documents: int
) -> tuple[list[list[rpb.Document]], list[Refused]]:
    """Consecutive batches of at most ``max_documents`` whose encoded size stays within ``budget``;
    a document larger than the budget on its own is refused (final)."""
    batches: list[list[rpb.Document]] = []
    refused: list[Refused] = []
    current: list[rpb.Document] = []
    size = 0
    for document in documents:
        encoded = document.ByteSize() + 10  # field tag and length prefix inside the request
        if encoded > budget:
            reason = f"the document is {encoded} bytes; requests to RetrievalService hold at most {budget}"
            refused.append(Refused(document.id, reason, True))
            continue
        if current and (size + encoded > budget or len(current) >= max_documents):
            batches.append(current)
            current, size = [], 0
        current.append(document)
        size += encoded
    if current:
        batches.append(current)
    return batches, refused


async def isolate(items: Sequence[T], send: Callable[[list[T]], Awaitable[None]]) -> list[tuple[T, str]]:
    """Send ``items``; if RetrievalService refuses the request, send each half on its own, down to
    single items. Returns the items refused alone, each with the refusal. Transport failures
    propagate (they say nothing about the items)."""
    try:
        await send(list(items))
    except grpc.aio.AioRpcError as refusal:
        if len(items) == 1:
            return [(items[0], f"{refusal.code().name}: {refusal.details()}")]
        log.warning("RetrievalService refused %d items (%s); splitting", len(items), refusal.code().name)
    else:
        return []
    middle = len(items) // 2
    return [*await isolate(items[:middle], send), *await isolate(items[middle:], send)]


async def upsert_isolating(
    db: Database, retrieval: RetrievalConnection, tenant_id: str, documents: Sequence[rpb.Document]
) -> list[Refused]:
    """``upsert_as_stored`` with refusals isolated to single documents."""

    async def send(part: list[rpb.Document]) -> None:
        await upsert_as_stored(db, retrieval, tenant_id, part)

    return [Refused(document.id, reason) for document, reason in await isolate(documents, send)]


async def upsert_as_stored(
    db: Database, retrieval: RetrievalConnection, tenant_id: str, documents: Sequence[rpb.Document]
) -> None:
    """Upsert documents read from the store, then delete from the index those the store no longer
    holds: a deletion delivered while the upsert was on the wire must not be undone by it."""
    await retrieval.upsert(documents)
    sent = [document.id for document in documents]
    kept = await db.read(lambda conn: stored_ids(conn, tenant_id, sent))
    if vanished := [document_id for document_id in sent if document_id not in kept]:
        request = rpb.DeleteDocumentsRequest(ids=rpb.DocumentIds(tenant_id=tenant_id, ids=vanished))
        await retrieval.delete(request)


def stored_ids(conn: Connection, tenant_id: str, ids: Sequence[str]) -> set[str]:
    """Which of these passage and message ids the store still holds."""
    unique = list(dict.fromkeys(ids))
    passage_ids = [i for i in unique if i.startswith("passage-")]
    message_ids = [i for i in unique if i.startswith("message-")]
    held = archive_rows.held_passage_ids(conn, tenant_id, passage_ids) if passage_ids else set()
    return held | (message_rows.held_ids(conn, tenant_id, message_ids) if message_ids else set())
