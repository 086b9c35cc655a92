"""MemoryService handlers for external context: archives, passages, search, reindexing.

Mixed into :class:`strata_memory.servicer.MemoryServicer`; same rules: parse, delegate, convert.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import grpc
from google.protobuf import empty_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_memory import conversions as conv
from strata_memory.domain.model import SearchMode
from strata_memory.indexing.reindex import ReindexScope
from strata_memory.limits import MAX_REINDEX_BATCH, MAX_SEARCH_RESULTS
from strata_memory.operations.archival import Written
from strata_memory.operations.memory_operations import MemoryOperations
from strata_memory.operations.pagination import next_token, page_from
from strata_memory.operations.search import SearchWindow
from strata_memory.store.records import ArchiveRecord
from strata_serving import timestamps
from strata_serving.auth import recheck_credentials, require_operator
from strata_serving.errors import InvalidArgument
from strata_serving.tenancy import tenant_of

Context = grpc.aio.ServicerContext[Any, Any]
SEARCH_MODES = {api.SearchMode.Value(f"SEARCH_MODE_{mode.name}"): mode for mode in SearchMode}
DEFAULT_REINDEX_BATCH = 256


class ArchivalHandlers:
    _ops: MemoryOperations

    async def CreateArchive(self, request: api.CreateArchiveRequest, context: Context) -> pb.Archive:
        tenant = tenant_of(context)
        wanted = ArchiveRecord("", tenant, request.archive.name, request.archive.description, 0)
        return conv.archive_to_proto(await self._ops.archives.create(wanted, request.agent_id))

    async def GetArchive(self, request: api.GetArchiveRequest, context: Context) -> pb.Archive:
        archive_id = conv.required(request.archive_id, "archive_id")
        return conv.archive_to_proto(await self._ops.archives.get(tenant_of(context), archive_id))

    async def ListArchives(
        self, request: api.ListArchivesRequest, context: Context
    ) -> api.ListArchivesResponse:
        tenant = tenant_of(context)
        scope = ("ListArchives", tenant, request.agent_id)
        page = page_from(request.page_size, request.page_token, scope=scope)
        found = await self._ops.archives.listing(tenant, request.agent_id, page)
        return api.ListArchivesResponse(
            archives=[conv.archive_to_proto(a) for a in found],
            next_page_token=next_token(page, len(found), scope=scope),
        )

    async def DeleteArchive(self, request: api.DeleteArchiveRequest, context: Context) -> empty_pb2.Empty:
        await self._ops.archives.delete(tenant_of(context), conv.required(request.archive_id, "archive_id"))
        return empty_pb2.Empty()

    async def AttachArchive(self, request: api.AttachArchiveRequest, context: Context) -> pb.Archive:
        return await self._link(request.agent_id, request.archive_id, context, attach=True)

    async def DetachArchive(self, request: api.DetachArchiveRequest, context: Context) -> pb.Archive:
        return await self._link(request.agent_id, request.archive_id, context, attach=False)

    async def _link(self, agent_id: str, archive_id: str, context: Context, *, attach: bool) -> pb.Archive:
        agent_id, archive_id = conv.required(agent_id, "agent_id"), conv.required(archive_id, "archive_id")
        archive = await self._ops.archives.attach(tenant_of(context), agent_id, archive_id, attach=attach)
        return conv.archive_to_proto(archive)

    async def CreatePassages(
        self, request: api.CreatePassagesRequest, context: Context
    ) -> api.CreatePassagesResponse:
        passages = [conv.passage_from_proto(p) for p in request.passages]
        written = await self._ops.archives.insert(
            tenant_of(context),
            agent_id=request.agent_id,
            archive_id=request.archive_id,
            passages=passages,
            request_id=request.request_id,
        )
        await self._maybe_wait(written, request.wait_searchable, context)
        return api.CreatePassagesResponse(passages=[conv.passage_to_proto(p) for p in written.items])

    async def ListPassages(
        self, request: api.ListPassagesRequest, context: Context
    ) -> api.ListPassagesResponse:
        tenant = tenant_of(context)
        if not request.archive_id and not request.agent_id:
            raise InvalidArgument.field("archive_id", "name an archive_id or an agent_id")
        scope = ("ListPassages", tenant, request.archive_id, request.agent_id)
        page = page_from(request.page_size, request.page_token, scope=scope)
        found, total = await self._ops.archives.passages(
            tenant, archive_id=request.archive_id, agent_id=request.agent_id, page=page
        )
        return api.ListPassagesResponse(
            passages=[conv.passage_to_proto(p) for p in found],
            next_page_token=next_token(page, len(found), scope=scope, total=total),
            total_size=total,
        )

    async def DeletePassage(self, request: api.DeletePassageRequest, context: Context) -> empty_pb2.Empty:
        await self._ops.archives.delete_passage(
            tenant_of(context), conv.required(request.passage_id, "passage_id")
        )
        return empty_pb2.Empty()

    async def SearchArchival(
        self, request: api.SearchArchivalRequest, context: Context
    ) -> api.SearchArchivalResponse:
        agent_id = conv.required(request.agent_id, "agent_id")
        window = _window(request.query, request.mode, request.top_k, request, "top_k")
        hits = await self._ops.search.archival(
            tenant_of(context),
            agent_id,
            window,
            tags=list(request.tags),
            match_all=request.tag_match == api.TAG_MATCH_ALL,
        )
        return api.SearchArchivalResponse(
            hits=[
                api.ArchivalHit(passage=conv.passage_to_proto(h.item), relevance=conv.relevance_to_proto(h))
                for h in hits
            ]
        )

    async def SearchMessages(
        self, request: api.SearchMessagesRequest, context: Context
    ) -> api.SearchMessagesResponse:
        agent_id = conv.required(request.agent_id, "agent_id")
        window = _window(request.query, request.mode, request.limit, request, "limit")
        roles = [conv.choice(conv.ROLES, r, "roles") for r in request.roles]
        hits = await self._ops.search.recall(
            tenant_of(context), agent_id, window, roles=roles, conversation_id=request.conversation_id
        )
        return api.SearchMessagesResponse(
            hits=[
                api.MessageHit(message=conv.message_to_proto(h.item), relevance=conv.relevance_to_proto(h))
                for h in hits
            ]
        )

    async def Reindex(
        self, request: api.ReindexRequest, context: Context
    ) -> AsyncIterator[api.ReindexProgress]:
        if request.batch_size < 0 or request.batch_size > MAX_REINDEX_BATCH:
            raise InvalidArgument.field(
                "batch_size", f"must be between 1 and {MAX_REINDEX_BATCH} (0 for the default)"
            )
        if request.all_tenants:
            require_operator("all_tenants")
        tenant = None if request.all_tenants else tenant_of(context)
        if request.all_tenants and request.agent_id:
            raise InvalidArgument.field("all_tenants", "cannot be combined with agent_id")
        scope = ReindexScope(tenant, request.agent_id)
        total = 0
        async for progress in self._ops.reindexer.run(
            scope, batch_size=request.batch_size or DEFAULT_REINDEX_BATCH
        ):
            total = progress.total
            await recheck_credentials()  # a key revoked while the stream runs ends it
            yield api.ReindexProgress(documents_total=progress.total, documents_done=progress.done)
        yield api.ReindexProgress(documents_total=total, documents_done=total, done=True)

    async def _maybe_wait(self, written: Written[Any], wait: bool, context: Context) -> None:
        """With ``wait_searchable``: return once the write's index jobs are delivered, within the deadline."""
        if not wait:
            return
        if not await self._ops.index_queue.wait_delivered(
            written.job_ids, wait_budget(context.time_remaining())
        ):
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                "stored, but not searchable within the call's deadline yet; indexing goes on",
            )


def wait_budget(remaining: float | None) -> float | None:
    """How long a ``wait_searchable`` call waits for indexing when ``remaining`` seconds are left of
    its deadline (None: no deadline, no bound). A quarter of the time, at most 1 s, is kept to answer:
    the caller then hears "stored, not yet searchable" from the server, not a bare DEADLINE_EXCEEDED
    from its own timer that could as well mean the write never happened."""
    if remaining is None:
        return None
    return max(0.0, remaining - min(1.0, remaining / 4))


def _window(query: str, mode: api.SearchMode.ValueType, count: int, request: Any, field: str) -> SearchWindow:
    if count < 0 or count > MAX_SEARCH_RESULTS:
        raise InvalidArgument.field(
            field, f"must be between 1 and {MAX_SEARCH_RESULTS} (0 for the default of 5)"
        )
    chosen = conv.choice(SEARCH_MODES, mode, "mode", default=SearchMode.HYBRID)
    start = _moment(request, "start_time")
    end = _moment(request, "end_time")
    if start and end and start > end:
        raise InvalidArgument.field("start_time", "is after end_time")
    return SearchWindow(query=query, mode=chosen, limit=count or 5, start=start, end=end)


def _moment(request: Any, field: str) -> datetime | None:
    if not request.HasField(field):
        return None
    stamp: Timestamp = getattr(request, field)
    return timestamps.to_datetime(stamp, field)
