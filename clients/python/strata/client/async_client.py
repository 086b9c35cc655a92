"""Typed asyncio client for MemoryService; ``sync_client.py`` is generated from this file.

Every RPC is one method taking the request's fields as keyword arguments and returning the
generated response message (``None`` for the ``Empty`` of deletes), with three conveniences: a
block is named by ``block_id`` or by ``agent_id`` + ``label`` (the ``BlockRef`` fields),
``update_mask`` is a list of field paths, and ``execute_tool`` JSON-encodes a mapping of arguments.
``iter_*`` methods walk every page of a list. Failed calls raise a ``StrataClientError`` subclass.
The channel handling lives in ``async_base.py``; archives, passages and search in
``async_archival.py``.

Keep this file transformable by ``scripts/generate_sync_client.py``: no asyncio APIs beyond
``async``/``await``, and nothing but ``grpc.aio`` spellings that have a ``grpc`` twin.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import datetime
from typing import Any

from strata.client.arguments import block_ref, field_mask, moment, request_id_or_new, tool_arguments
from strata.client.async_agent_files import AsyncAgentFileMethods
from strata.client.async_archival import AsyncArchivalMethods
from strata.client.async_purge import AsyncPurgeMethods
from strata.client.paging import PageGuard
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb


class AsyncMemoryClient(AsyncArchivalMethods, AsyncAgentFileMethods, AsyncPurgeMethods):
    """Every MemoryService RPC over a ``grpc.aio`` channel; use as a context manager or ``close()``.

    ``AsyncMemoryClient(target, tenant=None, timeout=30.0, credentials=None, options=())``:
    ``tenant`` is sent as ``x-strata-tenant`` on every call (the server's "default" if ``None``);
    ``timeout`` is each unary call's deadline in seconds; ``credentials`` switch to TLS.
    """

    # Agents -------------------------------------------------------------------------------------

    async def create_agent(
        self, *, agent: pb.Agent | None = None, blocks: Iterable[pb.Block] = ()
    ) -> pb.Agent:
        """Create an agent with these blocks attached (``persona`` and ``human`` if none are given)."""
        return await self._call(self._stub.CreateAgent, api.CreateAgentRequest(agent=agent, blocks=blocks))

    async def get_agent(self, *, agent_id: str) -> pb.Agent:
        return await self._call(self._stub.GetAgent, api.GetAgentRequest(agent_id=agent_id))

    async def list_agents(self, *, page_size: int = 0, page_token: str = "") -> api.ListAgentsResponse:
        request = api.ListAgentsRequest(page_size=page_size, page_token=page_token)
        return await self._call(self._stub.ListAgents, request)

    async def update_agent(self, *, agent: pb.Agent, update_mask: Iterable[str], etag: str = "") -> pb.Agent:
        """Update the fields of ``agent`` named by ``update_mask``; ``agent.id`` names the agent."""
        request = api.UpdateAgentRequest(agent=agent, update_mask=field_mask(update_mask), etag=etag)
        return await self._call(self._stub.UpdateAgent, request)

    async def delete_agent(self, *, agent_id: str, etag: str = "") -> None:
        await self._call(self._stub.DeleteAgent, api.DeleteAgentRequest(agent_id=agent_id, etag=etag))

    async def iter_agents(self, *, page_size: int = 0) -> AsyncIterator[pb.Agent]:
        """Every agent of the tenant, fetching page after page."""
        token, pages = "", PageGuard("ListAgents", self.max_pages)
        while True:
            page = await self.list_agents(page_size=page_size, page_token=token)
            for agent in page.agents:
                yield agent
            if not (token := pages.next(page.next_page_token)):
                return

    # Blocks -------------------------------------------------------------------------------------

    async def create_block(self, *, block: pb.Block, agent_id: str = "") -> pb.Block:
        """Create a block, attached to ``agent_id`` if given."""
        return await self._call(
            self._stub.CreateBlock, api.CreateBlockRequest(block=block, agent_id=agent_id)
        )

    async def get_block(self, *, block_id: str = "", agent_id: str = "", label: str = "") -> pb.Block:
        request = api.GetBlockRequest(block=block_ref(block_id, agent_id, label))
        return await self._call(self._stub.GetBlock, request)

    async def list_blocks(
        self,
        *,
        agent_id: str = "",
        page_size: int = 0,
        page_token: str = "",
        as_of: datetime | None = None,
        receipt_id: str = "",
    ) -> api.ListBlocksResponse:
        """The agent's blocks in attach order, or every block of the tenant without ``agent_id``.

        With ``as_of`` (or a prompt ``receipt_id``): the agent's blocks as they were then."""
        request = api.ListBlocksRequest(
            agent_id=agent_id,
            page_size=page_size,
            page_token=page_token,
            as_of=moment(as_of),
            receipt_id=receipt_id,
        )
        return await self._call(self._stub.ListBlocks, request)

    async def update_block(
        self,
        *,
        block: pb.Block,
        update_mask: Iterable[str],
        block_id: str = "",
        agent_id: str = "",
        label: str = "",
        etag: str = "",
        base_etag: str = "",
        validate_only: bool = False,
    ) -> pb.Block:
        """Update the fields of ``block`` named by ``update_mask`` on the block named by the ref fields.

        ``etag``: only if the block is still at that version (else ABORTED, ETAG_MISMATCH).
        ``base_etag``: the new fields were made from that version; changes made since are merged
        line by line, and a true overlap is ABORTED with reason MERGE_CONFLICT (the hunks in the
        error's ``field_violations`` and, as JSON, ``metadata["hunks"]``). ``validate_only``: check
        and merge, write nothing, return the block as the write would leave it.
        """
        request = api.UpdateBlockRequest(
            ref=block_ref(block_id, agent_id, label),
            block=block,
            update_mask=field_mask(update_mask),
            etag=etag,
            base_etag=base_etag,
            validate_only=validate_only,
        )
        return await self._call(self._stub.UpdateBlock, request)

    async def delete_block(
        self, *, block_id: str = "", agent_id: str = "", label: str = "", etag: str = ""
    ) -> None:
        request = api.DeleteBlockRequest(block=block_ref(block_id, agent_id, label), etag=etag)
        await self._call(self._stub.DeleteBlock, request)

    async def attach_block(self, *, agent_id: str, block_id: str) -> pb.Agent:
        """Share a block with an agent (idempotent)."""
        request = api.AttachBlockRequest(agent_id=agent_id, block_id=block_id)
        return await self._call(self._stub.AttachBlock, request)

    async def detach_block(self, *, agent_id: str, block_id: str, etag: str = "") -> pb.Agent:
        request = api.DetachBlockRequest(agent_id=agent_id, block_id=block_id, etag=etag)
        return await self._call(self._stub.DetachBlock, request)

    async def iter_blocks(self, *, agent_id: str = "", page_size: int = 0) -> AsyncIterator[pb.Block]:
        """Every block of the agent (or of the tenant), fetching page after page."""
        token, pages = "", PageGuard("ListBlocks", self.max_pages)
        while True:
            page = await self.list_blocks(agent_id=agent_id, page_size=page_size, page_token=token)
            for block in page.blocks:
                yield block
            if not (token := pages.next(page.next_page_token)):
                return

    # Block history ------------------------------------------------------------------------------

    async def list_block_versions(
        self,
        *,
        block_id: str = "",
        agent_id: str = "",
        label: str = "",
        page_size: int = 0,
        page_token: str = "",
    ) -> api.ListBlockVersionsResponse:
        """The block's versions, newest first."""
        request = api.ListBlockVersionsRequest(
            block=block_ref(block_id, agent_id, label), page_size=page_size, page_token=page_token
        )
        return await self._call(self._stub.ListBlockVersions, request)

    async def diff_block_versions(
        self,
        *,
        from_version: int,
        to_version: int = 0,
        block_id: str = "",
        agent_id: str = "",
        label: str = "",
    ) -> api.DiffBlockVersionsResponse:
        """A unified diff between two versions (``to_version=0``: the current one)."""
        request = api.DiffBlockVersionsRequest(
            block=block_ref(block_id, agent_id, label), from_version=from_version, to_version=to_version
        )
        return await self._call(self._stub.DiffBlockVersions, request)

    async def restore_block_version(
        self, *, version: int, block_id: str = "", agent_id: str = "", label: str = "", etag: str = ""
    ) -> pb.Block:
        """Write a new version holding the content of ``version``."""
        request = api.RestoreBlockVersionRequest(
            block=block_ref(block_id, agent_id, label), version=version, etag=etag
        )
        return await self._call(self._stub.RestoreBlockVersion, request)

    async def iter_block_versions(
        self, *, block_id: str = "", agent_id: str = "", label: str = "", page_size: int = 0
    ) -> AsyncIterator[pb.BlockVersion]:
        """Every version of the block, newest first, fetching page after page."""
        token, pages = "", PageGuard("ListBlockVersions", self.max_pages)
        while True:
            page = await self.list_block_versions(
                block_id=block_id, agent_id=agent_id, label=label, page_size=page_size, page_token=token
            )
            for version in page.versions:
                yield version
            if not (token := pages.next(page.next_page_token)):
                return

    # Conversations and files --------------------------------------------------------------------

    async def create_conversation(self, *, agent_id: str, conversation_id: str = "") -> pb.Conversation:
        request = api.CreateConversationRequest(agent_id=agent_id, conversation_id=conversation_id)
        return await self._call(self._stub.CreateConversation, request)

    async def list_conversations(
        self, *, agent_id: str, page_size: int = 0, page_token: str = ""
    ) -> api.ListConversationsResponse:
        request = api.ListConversationsRequest(agent_id=agent_id, page_size=page_size, page_token=page_token)
        return await self._call(self._stub.ListConversations, request)

    async def iter_conversations(
        self, *, agent_id: str, page_size: int = 0
    ) -> AsyncIterator[pb.Conversation]:
        """Every conversation of the agent, fetching page after page."""
        token, pages = "", PageGuard("ListConversations", self.max_pages)
        while True:
            page = await self.list_conversations(agent_id=agent_id, page_size=page_size, page_token=token)
            for conversation in page.conversations:
                yield conversation
            if not (token := pages.next(page.next_page_token)):
                return

    async def attach_file(self, *, agent_id: str, file: pb.File) -> pb.File:
        """Attach a document to the agent as a read-only block under ``file.directory``."""
        return await self._call(self._stub.AttachFile, api.AttachFileRequest(agent_id=agent_id, file=file))

    async def update_file(self, *, file_id: str, file: pb.File, update_mask: Iterable[str]) -> pb.File:
        request = api.UpdateFileRequest(file_id=file_id, file=file, update_mask=field_mask(update_mask))
        return await self._call(self._stub.UpdateFile, request)

    async def list_files(
        self, *, agent_id: str, page_size: int = 0, page_token: str = ""
    ) -> api.ListFilesResponse:
        request = api.ListFilesRequest(agent_id=agent_id, page_size=page_size, page_token=page_token)
        return await self._call(self._stub.ListFiles, request)

    async def detach_file(self, *, file_id: str) -> None:
        await self._call(self._stub.DetachFile, api.DetachFileRequest(file_id=file_id))

    # Messages -----------------------------------------------------------------------------------

    async def append_messages(
        self,
        *,
        agent_id: str,
        messages: Iterable[pb.Message],
        conversation_id: str = "",
        wait_searchable: bool = False,
        request_id: str = "",
        prompt_receipt_id: str = "",
    ) -> api.AppendMessagesResponse:
        """Store messages in order (in ``default`` without ``conversation_id``); returns them as stored.

        With ``wait_searchable`` the call returns once they are indexed (bounded by its deadline).
        The call carries ``request_id`` (a new UUID when not given), so the channel retries it on
        UNAVAILABLE and the server stores the messages once; pass your own to retry it yourself later.
        ``prompt_receipt_id`` (``SystemPrompt.receipt.id``) is recorded on every message: the prompt
        the messages were generated under (``get_prompt_receipt`` reads it back).
        """
        request = api.AppendMessagesRequest(
            agent_id=agent_id,
            conversation_id=conversation_id,
            messages=messages,
            wait_searchable=wait_searchable,
            request_id=request_id_or_new(request_id),
            prompt_receipt_id=prompt_receipt_id,
        )
        return await self._call(self._stub.AppendMessages, request)

    async def list_messages(
        self,
        *,
        agent_id: str,
        conversation_id: str = "",
        roles: Iterable[pb.MessageRole.ValueType] = (),
        page_size: int = 0,
        page_token: str = "",
    ) -> api.ListMessagesResponse:
        """Messages oldest first, of one conversation or all, optionally only some roles."""
        request = api.ListMessagesRequest(
            agent_id=agent_id,
            conversation_id=conversation_id,
            roles=roles,
            page_size=page_size,
            page_token=page_token,
        )
        return await self._call(self._stub.ListMessages, request)

    async def iter_messages(
        self,
        *,
        agent_id: str,
        conversation_id: str = "",
        roles: Iterable[pb.MessageRole.ValueType] = (),
        page_size: int = 0,
    ) -> AsyncIterator[pb.Message]:
        """Every matching message, oldest first, fetching page after page."""
        token, roles, pages = "", list(roles), PageGuard("ListMessages", self.max_pages)
        while True:
            page = await self.list_messages(
                agent_id=agent_id,
                conversation_id=conversation_id,
                roles=roles,
                page_size=page_size,
                page_token=token,
            )
            for message in page.messages:
                yield message
            if not (token := pages.next(page.next_page_token)):
                return

    # Rendering and the system prompt ------------------------------------------------------------

    async def render_memory(
        self,
        *,
        agent_id: str,
        mode: pb.RenderMode.ValueType = pb.RENDER_MODE_UNSPECIFIED,
        as_of: datetime | None = None,
        receipt_id: str = "",
    ) -> api.RenderMemoryResponse:
        """Core memory rendered in ``mode`` (the agent's own mode when unspecified); with ``as_of``
        or a prompt ``receipt_id``, core memory (blocks) as it was then."""
        request = api.RenderMemoryRequest(
            agent_id=agent_id, mode=mode, as_of=moment(as_of), receipt_id=receipt_id
        )
        return await self._call(self._stub.RenderMemory, request)

    async def diff_memory(
        self,
        *,
        agent_id: str,
        from_time: datetime | None = None,
        from_receipt_id: str = "",
        to_time: datetime | None = None,
        to_receipt_id: str = "",
        mode: pb.RenderMode.ValueType = pb.RENDER_MODE_UNSPECIFIED,
    ) -> api.DiffMemoryResponse:
        """A unified diff of the agent's whole core memory between two moments (the later one: now,
        unless given)."""
        request = api.DiffMemoryRequest(
            agent_id=agent_id,
            from_time=moment(from_time),
            from_receipt_id=from_receipt_id,
            to_time=moment(to_time),
            to_receipt_id=to_receipt_id,
            mode=mode,
        )
        return await self._call(self._stub.DiffMemory, request)

    async def get_system_prompt(self, *, agent_id: str, conversation_id: str = "") -> pb.SystemPrompt:
        """The stored compiled prompt and whether memory changed since it was compiled."""
        request = api.GetSystemPromptRequest(agent_id=agent_id, conversation_id=conversation_id)
        return await self._call(self._stub.GetSystemPrompt, request)

    async def get_prompt_receipt(self, *, receipt_id: str) -> pb.PromptReceipt:
        """What a compiled prompt was built from: block ids and versions, metadata counts, time."""
        request = api.GetPromptReceiptRequest(receipt_id=receipt_id)
        return await self._call(self._stub.GetPromptReceipt, request)

    async def recompile_system_prompt(
        self, *, agent_id: str, conversation_id: str = "", dry_run: bool = False
    ) -> api.RecompileSystemPromptResponse:
        """Rebuild the prompt from memory; with ``dry_run`` return the text and diff without saving."""
        request = api.RecompileSystemPromptRequest(
            agent_id=agent_id, conversation_id=conversation_id, dry_run=dry_run
        )
        return await self._call(self._stub.RecompileSystemPrompt, request)

    # Memory tools -------------------------------------------------------------------------------

    async def list_tools(self) -> api.ListToolsResponse:
        """OpenAI-style JSON schemas of every memory tool."""
        return await self._call(self._stub.ListTools, api.ListToolsRequest())

    async def execute_tool(
        self,
        *,
        agent_id: str,
        tool_name: str,
        arguments: Mapping[str, Any] | str,
        conversation_id: str = "",
        etag: str = "",
        base_etag: str = "",
    ) -> api.ExecuteToolResponse:
        """Run a memory tool as an LLM called it. A tool's own failure is ``ok=False``, not an exception.

        ``base_etag``: the LLM saw the block at that version; the call applies to that version and
        is merged onto changes made since (a true overlap raises ABORTED, MERGE_CONFLICT).
        """
        request = api.ExecuteToolRequest(
            agent_id=agent_id,
            conversation_id=conversation_id,
            tool_name=tool_name,
            arguments=tool_arguments(arguments),
            etag=etag,
            base_etag=base_etag,
        )
        return await self._call(self._stub.ExecuteTool, request)
