"""Archival memory (archives, passages), search and reindexing methods of the async client.

``sync_archival.py`` is generated from this file by ``scripts/generate_sync_client.py``. Searches
go through RetrievalService, so they fail with UNAVAILABLE when it is down.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from functools import cached_property

from google.protobuf import timestamp_pb2

from strata.client.arguments import request_id_or_new
from strata.client.async_base import AsyncClientBase
from strata.client.paging import PageGuard
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb


class AsyncArchivalMethods(AsyncClientBase):
    """MemoryService stub; archives, passages, ``search_archival``, ``search_messages``, ``reindex``."""

    @cached_property
    def _stub(self) -> memory_service_pb2_grpc.MemoryServiceAsyncStub:
        return memory_service_pb2_grpc.MemoryServiceStub(self._channel)

    async def create_archive(self, *, archive: pb.Archive, agent_id: str = "") -> pb.Archive:
        """Create an archive, attached to ``agent_id`` if given."""
        request = api.CreateArchiveRequest(archive=archive, agent_id=agent_id)
        return await self._call(self._stub.CreateArchive, request)

    async def get_archive(self, *, archive_id: str) -> pb.Archive:
        return await self._call(self._stub.GetArchive, api.GetArchiveRequest(archive_id=archive_id))

    async def list_archives(
        self, *, agent_id: str = "", page_size: int = 0, page_token: str = ""
    ) -> api.ListArchivesResponse:
        """The agent's archives, or every archive of the tenant without ``agent_id``."""
        request = api.ListArchivesRequest(agent_id=agent_id, page_size=page_size, page_token=page_token)
        return await self._call(self._stub.ListArchives, request)

    async def delete_archive(self, *, archive_id: str) -> None:
        """Delete the archive and its passages."""
        await self._call(self._stub.DeleteArchive, api.DeleteArchiveRequest(archive_id=archive_id))

    async def attach_archive(self, *, agent_id: str, archive_id: str) -> pb.Archive:
        """Share an archive with an agent (idempotent)."""
        request = api.AttachArchiveRequest(agent_id=agent_id, archive_id=archive_id)
        return await self._call(self._stub.AttachArchive, request)

    async def detach_archive(self, *, agent_id: str, archive_id: str) -> pb.Archive:
        request = api.DetachArchiveRequest(agent_id=agent_id, archive_id=archive_id)
        return await self._call(self._stub.DetachArchive, request)

    async def iter_archives(self, *, agent_id: str = "", page_size: int = 0) -> AsyncIterator[pb.Archive]:
        """Every archive of the agent (or of the tenant), fetching page after page."""
        token, pages = "", PageGuard("ListArchives", self.max_pages)
        while True:
            page = await self.list_archives(agent_id=agent_id, page_size=page_size, page_token=token)
            for archive in page.archives:
                yield archive
            if not (token := pages.next(page.next_page_token)):
                return

    async def create_passages(
        self,
        *,
        passages: Iterable[pb.Passage],
        agent_id: str = "",
        archive_id: str = "",
        wait_searchable: bool = False,
        request_id: str = "",
    ) -> api.CreatePassagesResponse:
        """Insert passages into ``archive_id``, or into the agent's default archive.

        ``request_id`` as in ``append_messages``: a new UUID when not given, and retries store once."""
        request = api.CreatePassagesRequest(
            agent_id=agent_id,
            archive_id=archive_id,
            passages=passages,
            wait_searchable=wait_searchable,
            request_id=request_id_or_new(request_id),
        )
        return await self._call(self._stub.CreatePassages, request)

    async def list_passages(
        self, *, archive_id: str = "", agent_id: str = "", page_size: int = 0, page_token: str = ""
    ) -> api.ListPassagesResponse:
        """Passages oldest first, of one archive or of every archive attached to the agent."""
        request = api.ListPassagesRequest(
            archive_id=archive_id, agent_id=agent_id, page_size=page_size, page_token=page_token
        )
        return await self._call(self._stub.ListPassages, request)

    async def delete_passage(self, *, passage_id: str) -> None:
        await self._call(self._stub.DeletePassage, api.DeletePassageRequest(passage_id=passage_id))

    async def iter_passages(
        self, *, archive_id: str = "", agent_id: str = "", page_size: int = 0
    ) -> AsyncIterator[pb.Passage]:
        """Every passage of the archive (or the agent's archives), fetching page after page."""
        token, pages = "", PageGuard("ListPassages", self.max_pages)
        while True:
            page = await self.list_passages(
                archive_id=archive_id, agent_id=agent_id, page_size=page_size, page_token=token
            )
            for passage in page.passages:
                yield passage
            if not (token := pages.next(page.next_page_token)):
                return

    async def search_archival(
        self,
        *,
        agent_id: str,
        query: str,
        mode: api.SearchMode.ValueType = api.SEARCH_MODE_UNSPECIFIED,
        tags: Iterable[str] = (),
        tag_match: api.TagMatch.ValueType = api.TAG_MATCH_UNSPECIFIED,
        top_k: int = 0,
        start_time: timestamp_pb2.Timestamp | None = None,
        end_time: timestamp_pb2.Timestamp | None = None,
    ) -> api.SearchArchivalResponse:
        """Passages the agent can reach, best first (hybrid unless ``mode`` says otherwise)."""
        request = api.SearchArchivalRequest(
            agent_id=agent_id,
            query=query,
            mode=mode,
            tags=tags,
            tag_match=tag_match,
            top_k=top_k,
            start_time=start_time,
            end_time=end_time,
        )
        return await self._call(self._stub.SearchArchival, request)

    async def search_messages(
        self,
        *,
        agent_id: str,
        query: str,
        mode: api.SearchMode.ValueType = api.SEARCH_MODE_UNSPECIFIED,
        roles: Iterable[pb.MessageRole.ValueType] = (),
        conversation_id: str = "",
        limit: int = 0,
        start_time: timestamp_pb2.Timestamp | None = None,
        end_time: timestamp_pb2.Timestamp | None = None,
    ) -> api.SearchMessagesResponse:
        """The agent's messages matching ``query``, best first."""
        request = api.SearchMessagesRequest(
            agent_id=agent_id,
            query=query,
            mode=mode,
            roles=roles,
            conversation_id=conversation_id,
            limit=limit,
            start_time=start_time,
            end_time=end_time,
        )
        return await self._call(self._stub.SearchMessages, request)

    async def reindex(
        self,
        *,
        agent_id: str = "",
        batch_size: int = 0,
        all_tenants: bool = False,
        deadline: float | None = None,
    ) -> AsyncIterator[api.ReindexProgress]:
        """Rebuild RetrievalService's indexes, yielding progress; ``deadline`` (seconds) bounds it all."""
        request = api.ReindexRequest(agent_id=agent_id, batch_size=batch_size, all_tenants=all_tenants)
        async for progress in self._stream(self._stub.Reindex, request, deadline):
            yield progress
