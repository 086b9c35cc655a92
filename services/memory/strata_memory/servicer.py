"""The gRPC face of MemoryService: parse the request, call an operation, convert the result."""

from __future__ import annotations

import time
from typing import Any

import grpc
from google.protobuf import empty_pb2

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory import conversions as conv
from strata_memory.agent_file_servicer import AgentFileHandlers
from strata_memory.archival_servicer import ArchivalHandlers
from strata_memory.domain.model import RenderMode
from strata_memory.domain.tools import RETRIEVAL_TOOLS, tool_schemas
from strata_memory.operations.agents import AGENT_FIELDS
from strata_memory.operations.blocks import BLOCK_FIELDS, BlockLocator
from strata_memory.operations.files import FILE_FIELDS
from strata_memory.operations.memory_operations import MemoryOperations
from strata_memory.operations.memory_time import MemoryTime, Moment
from strata_memory.operations.pagination import next_token, page_from
from strata_memory.operations.prompts import PromptView
from strata_memory.operations.tools import ToolCall
from strata_memory.purge_servicer import PurgeHandlers
from strata_memory.request_checks import checked_requests
from strata_serving.errors import InvalidArgument
from strata_serving.tenancy import tenant_of
from strata_serving.timestamps import to_micros
from strata_serving.tracing import annotate

Context = grpc.aio.ServicerContext[Any, Any]
RECEIPT_ATTRIBUTE = "strata.prompt_receipt_id"
"""The span attribute naming the prompt receipt a call returned or was given."""


@checked_requests(api.DESCRIPTOR.services_by_name["MemoryService"])  # no NUL, no unknown enum value
class MemoryServicer(
    ArchivalHandlers, AgentFileHandlers, PurgeHandlers, memory_service_pb2_grpc.MemoryServiceServicer
):
    def __init__(self, ops: MemoryOperations) -> None:
        self._ops = ops
        self._history = MemoryTime(ops.prompts.database, ops.prompts.renders)

    # Agents -------------------------------------------------------------------------------------

    async def CreateAgent(self, request: api.CreateAgentRequest, context: Context) -> pb.Agent:
        tenant = tenant_of(context)
        agent = conv.agent_from_proto(request.agent, tenant)
        blocks = [conv.block_from_proto(b, field=f"blocks[{i}]") for i, b in enumerate(request.blocks)]
        return conv.agent_to_proto(await self._ops.agents.create(agent, blocks))

    async def GetAgent(self, request: api.GetAgentRequest, context: Context) -> pb.Agent:
        agent_id = conv.required(request.agent_id, "agent_id")
        return conv.agent_to_proto(await self._ops.agents.get(tenant_of(context), agent_id))

    async def ListAgents(self, request: api.ListAgentsRequest, context: Context) -> api.ListAgentsResponse:
        tenant = tenant_of(context)
        scope = ("ListAgents", tenant)
        page = page_from(request.page_size, request.page_token, scope=scope)
        agents = await self._ops.agents.listing(tenant, page)
        return api.ListAgentsResponse(
            agents=[conv.agent_to_proto(a) for a in agents],
            next_page_token=next_token(page, len(agents), scope=scope),
        )

    async def UpdateAgent(self, request: api.UpdateAgentRequest, context: Context) -> pb.Agent:
        tenant = tenant_of(context)
        conv.required(request.agent.id, "agent.id")
        paths = _mask(request.update_mask.paths, AGENT_FIELDS)
        changes = conv.agent_from_proto(request.agent, tenant)
        return conv.agent_to_proto(await self._ops.agents.update(tenant, changes, paths, request.etag))

    async def DeleteAgent(self, request: api.DeleteAgentRequest, context: Context) -> empty_pb2.Empty:
        await self._ops.agents.delete(
            tenant_of(context), conv.required(request.agent_id, "agent_id"), request.etag
        )
        return empty_pb2.Empty()

    # Blocks -------------------------------------------------------------------------------------

    async def CreateBlock(self, request: api.CreateBlockRequest, context: Context) -> pb.Block:
        tenant = tenant_of(context)
        block = conv.block_from_proto(request.block)
        record = await self._ops.blocks.create(
            tenant, block, agent_id=request.agent_id, actor=_actor(context)
        )
        return conv.block_to_proto(record)

    async def GetBlock(self, request: api.GetBlockRequest, context: Context) -> pb.Block:
        return await self._ops.blocks.reply(
            tenant_of(context), _locator(request.block, "block"), conv.block_to_proto
        )

    async def ListBlocks(self, request: api.ListBlocksRequest, context: Context) -> api.ListBlocksResponse:
        tenant = tenant_of(context)
        scope = ("ListBlocks", tenant, request.agent_id)
        page = page_from(request.page_size, request.page_token, scope=scope)
        moment = _moment(request, "as_of", "receipt_id")
        if moment is not None:
            agent_id = conv.required(request.agent_id, "agent_id")
            found = await self._history.blocks(tenant, agent_id, moment)
            records = found[page.offset : page.offset + page.size]
        else:
            records = await self._ops.blocks.listing(tenant, request.agent_id, page)
        return api.ListBlocksResponse(
            blocks=[conv.block_to_proto(r) for r in records],
            next_page_token=next_token(page, len(records), scope=scope),
        )

    async def UpdateBlock(self, request: api.UpdateBlockRequest, context: Context) -> pb.Block:
        paths = _mask(request.update_mask.paths, BLOCK_FIELDS)
        if "limit" in paths and not request.block.HasField("limit"):
            raise InvalidArgument.field("block.limit", "is named in update_mask but not set")
        new = conv.block_from_proto(request.block) if "limit" in paths else None
        changes: dict[str, object] = {}
        for path in paths:
            changes[path] = new.limit if path == "limit" and new else _block_field(request.block, path)
        record = await self._ops.blocks.update(
            tenant_of(context),
            _locator(request.ref, "ref"),
            changes,
            request.etag,
            actor=_actor(context),
            base_etag=request.base_etag,
            validate_only=request.validate_only,
        )
        return conv.block_to_proto(record)

    async def DeleteBlock(self, request: api.DeleteBlockRequest, context: Context) -> empty_pb2.Empty:
        await self._ops.blocks.delete(tenant_of(context), _locator(request.block, "block"), request.etag)
        return empty_pb2.Empty()

    async def AttachBlock(self, request: api.AttachBlockRequest, context: Context) -> pb.Agent:
        agent_id, block_id = (
            conv.required(request.agent_id, "agent_id"),
            conv.required(request.block_id, "block_id"),
        )
        return conv.agent_to_proto(await self._ops.blocks.attach(tenant_of(context), agent_id, block_id))

    async def DetachBlock(self, request: api.DetachBlockRequest, context: Context) -> pb.Agent:
        agent_id, block_id = (
            conv.required(request.agent_id, "agent_id"),
            conv.required(request.block_id, "block_id"),
        )
        detached = await self._ops.blocks.detach(tenant_of(context), agent_id, block_id, request.etag)
        return conv.agent_to_proto(detached)

    # Block history ------------------------------------------------------------------------------

    async def ListBlockVersions(
        self, request: api.ListBlockVersionsRequest, context: Context
    ) -> api.ListBlockVersionsResponse:
        tenant = tenant_of(context)
        locator = _locator(request.block, "block")
        scope = ("ListBlockVersions", tenant, locator)
        page = page_from(request.page_size, request.page_token, scope=scope)
        versions = await self._ops.blocks.versions(tenant, locator, page)
        return api.ListBlockVersionsResponse(
            versions=[conv.version_to_proto(v) for v in versions],
            next_page_token=next_token(page, len(versions), scope=scope),
        )

    async def DiffBlockVersions(
        self, request: api.DiffBlockVersionsRequest, context: Context
    ) -> api.DiffBlockVersionsResponse:
        if request.from_version <= 0:
            raise InvalidArgument.field("from_version", "must be a version number (1 or more)")
        if request.to_version < 0:
            raise InvalidArgument.field("to_version", "must be a version number, or 0 for the current one")
        diff = await self._ops.blocks.diff(
            tenant_of(context), _locator(request.block, "block"), request.from_version, request.to_version
        )
        return api.DiffBlockVersionsResponse(diff=diff)

    async def RestoreBlockVersion(
        self, request: api.RestoreBlockVersionRequest, context: Context
    ) -> pb.Block:
        if request.version <= 0:
            raise InvalidArgument.field("version", "must be a version number (1 or more)")
        record = await self._ops.blocks.restore(
            tenant_of(context),
            _locator(request.block, "block"),
            request.version,
            request.etag,
            actor=_actor(context),
        )
        return conv.block_to_proto(record)

    # Conversations ------------------------------------------------------------------------------

    async def CreateConversation(
        self, request: api.CreateConversationRequest, context: Context
    ) -> pb.Conversation:
        tenant = tenant_of(context)
        agent_id = conv.required(request.agent_id, "agent_id")
        created = await self._ops.agents.create_conversation(tenant, agent_id, request.conversation_id)
        return conv.conversation_to_proto(created, tenant)

    async def ListConversations(
        self, request: api.ListConversationsRequest, context: Context
    ) -> api.ListConversationsResponse:
        tenant = tenant_of(context)
        agent_id = conv.required(request.agent_id, "agent_id")
        scope = ("ListConversations", tenant, agent_id)
        page = page_from(request.page_size, request.page_token, scope=scope)
        found = await self._ops.agents.list_conversations(tenant, agent_id, page)
        return api.ListConversationsResponse(
            conversations=[conv.conversation_to_proto(c, tenant) for c in found],
            next_page_token=next_token(page, len(found), scope=scope),
        )

    # Files --------------------------------------------------------------------------------------

    async def AttachFile(self, request: api.AttachFileRequest, context: Context) -> pb.File:
        agent_id = conv.required(request.agent_id, "agent_id")
        file = conv.file_from_proto(request.file, agent_id)
        return conv.file_to_proto(await self._ops.files.attach(tenant_of(context), file))

    async def UpdateFile(self, request: api.UpdateFileRequest, context: Context) -> pb.File:
        file_id = conv.required(request.file_id, "file_id")
        paths = _mask(request.update_mask.paths, FILE_FIELDS)
        incoming = conv.file_from_proto(request.file, "")
        changes = {path: getattr(incoming, path) for path in paths}
        return conv.file_to_proto(await self._ops.files.update(tenant_of(context), file_id, changes))

    async def ListFiles(self, request: api.ListFilesRequest, context: Context) -> api.ListFilesResponse:
        tenant = tenant_of(context)
        agent_id = conv.required(request.agent_id, "agent_id")
        scope = ("ListFiles", tenant, agent_id)
        page = page_from(request.page_size, request.page_token, scope=scope)
        found = await self._ops.files.listing(tenant, agent_id, page)
        return api.ListFilesResponse(
            files=[conv.file_to_proto(f) for f in found],
            next_page_token=next_token(page, len(found), scope=scope),
        )

    async def DetachFile(self, request: api.DetachFileRequest, context: Context) -> empty_pb2.Empty:
        await self._ops.files.detach(tenant_of(context), conv.required(request.file_id, "file_id"))
        return empty_pb2.Empty()

    # Messages -----------------------------------------------------------------------------------

    async def AppendMessages(
        self, request: api.AppendMessagesRequest, context: Context
    ) -> api.AppendMessagesResponse:
        agent_id = conv.required(request.agent_id, "agent_id")
        messages = [conv.message_from_proto(m, i) for i, m in enumerate(request.messages)]
        written = await self._ops.messages.append(
            tenant_of(context),
            agent_id,
            conv.conversation_or_default(request.conversation_id),
            messages,
            request_id=request.request_id,
            prompt_receipt_id=request.prompt_receipt_id,
        )
        if request.prompt_receipt_id:
            annotate(RECEIPT_ATTRIBUTE, request.prompt_receipt_id)
        await self._maybe_wait(written, request.wait_searchable, context)
        return api.AppendMessagesResponse(messages=[conv.message_to_proto(m) for m in written.items])

    async def ListMessages(
        self, request: api.ListMessagesRequest, context: Context
    ) -> api.ListMessagesResponse:
        tenant = tenant_of(context)
        agent_id = conv.required(request.agent_id, "agent_id")
        roles = [conv.choice(conv.ROLES, r, "roles") for r in request.roles]
        scope = ("ListMessages", tenant, agent_id, request.conversation_id, sorted(roles))
        page = page_from(request.page_size, request.page_token, scope=scope)
        found, total = await self._ops.messages.listing(
            tenant, agent_id, conversation_id=request.conversation_id, roles=roles, page=page
        )
        return api.ListMessagesResponse(
            messages=[conv.message_to_proto(m) for m in found],
            next_page_token=next_token(page, len(found), scope=scope, total=total),
            total_size=total,
        )

    # Rendering and the system prompt -----------------------------------------------------------

    async def RenderMemory(
        self, request: api.RenderMemoryRequest, context: Context
    ) -> api.RenderMemoryResponse:
        agent_id = conv.required(request.agent_id, "agent_id")
        mode = conv.choice(conv.RENDER_MODES, request.mode, "mode", default=None) if request.mode else None
        moment = _moment(request, "as_of", "receipt_id")
        if moment is None:
            return await self._ops.prompts.render_reply(tenant_of(context), agent_id, mode, _render_response)
        text, used = await self._history.render(tenant_of(context), agent_id, moment, mode)
        return _render_response(text, used)

    async def DiffMemory(self, request: api.DiffMemoryRequest, context: Context) -> api.DiffMemoryResponse:
        agent_id = conv.required(request.agent_id, "agent_id")
        mode = conv.choice(conv.RENDER_MODES, request.mode, "mode", default=None) if request.mode else None
        old = _moment(request, "from_time", "from_receipt_id")
        if old is None:
            raise InvalidArgument.field("from_time", "name the earlier moment: from_time or from_receipt_id")
        new = _moment(request, "to_time", "to_receipt_id") or Moment(at_us=time.time_ns() // 1000)
        diff = await self._history.diff(tenant_of(context), agent_id, old, new, mode)
        return api.DiffMemoryResponse(diff=diff)

    async def GetSystemPrompt(self, request: api.GetSystemPromptRequest, context: Context) -> pb.SystemPrompt:
        agent_id = conv.required(request.agent_id, "agent_id")
        conversation = conv.conversation_or_default(request.conversation_id)
        reply = await self._ops.prompts.get_reply(
            tenant_of(context), agent_id, conversation, conv.prompt_to_proto
        )
        if reply.HasField("receipt"):
            annotate(RECEIPT_ATTRIBUTE, reply.receipt.id)
        return reply

    async def GetPromptReceipt(
        self, request: api.GetPromptReceiptRequest, context: Context
    ) -> pb.PromptReceipt:
        receipt_id = conv.required(request.receipt_id, "receipt_id")
        return conv.receipt_to_proto(await self._ops.prompts.receipt(tenant_of(context), receipt_id))

    async def RecompileSystemPrompt(
        self, request: api.RecompileSystemPromptRequest, context: Context
    ) -> api.RecompileSystemPromptResponse:
        agent_id = conv.required(request.agent_id, "agent_id")
        conversation = conv.conversation_or_default(request.conversation_id)
        done = await self._ops.prompts.recompile(
            tenant_of(context), agent_id, conversation, dry_run=request.dry_run
        )
        view = PromptView(done.prompt, stale=False)
        if done.prompt.receipt is not None:
            annotate(RECEIPT_ATTRIBUTE, done.prompt.receipt.id)
        return api.RecompileSystemPromptResponse(
            prompt=conv.prompt_to_proto(view), diff=done.diff, saved=done.saved
        )

    # Tools --------------------------------------------------------------------------------------

    async def ListTools(self, request: api.ListToolsRequest, context: Context) -> api.ListToolsResponse:
        return api.ListToolsResponse(tools=[conv.tool_to_proto(s, RETRIEVAL_TOOLS) for s in tool_schemas()])

    async def ExecuteTool(self, request: api.ExecuteToolRequest, context: Context) -> api.ExecuteToolResponse:
        call = ToolCall(
            tenant_id=tenant_of(context),
            agent_id=conv.required(request.agent_id, "agent_id"),
            conversation_id=conv.conversation_or_default(request.conversation_id),
            name=conv.required(request.tool_name, "tool_name"),
            arguments=request.arguments,
            etag=request.etag,
            base_etag=request.base_etag,
        )
        run = await self._ops.tools.execute(call)
        return api.ExecuteToolResponse(
            ok=run.ok,
            text=run.text,
            reason=run.reason,
            envelope=run.envelope,
            block=conv.block_to_proto(run.block) if run.block else None,
            prompt_recompiled=run.prompt_recompiled,
        )


_RENDER_MODE_ENUM = {v: k for k, v in conv.RENDER_MODES.items()}


def _render_response(text: str, used: RenderMode) -> api.RenderMemoryResponse:
    return api.RenderMemoryResponse(text=text, mode=_RENDER_MODE_ENUM[used])


def _moment(request: Any, time_field: str, receipt_field: str) -> Moment | None:
    """The past moment a request names (a time or a receipt id), None when it names neither."""
    receipt_id = getattr(request, receipt_field)
    has_time = request.HasField(time_field)
    if has_time and receipt_id:
        raise InvalidArgument.field(receipt_field, f"send {time_field} or {receipt_field}, not both")
    if has_time:
        return Moment(at_us=to_micros(getattr(request, time_field), time_field))
    return Moment(receipt_id=receipt_id) if receipt_id else None


def _mask(paths: Any, allowed: tuple[str, ...]) -> list[str]:
    wanted = list(paths)
    unknown = [p for p in wanted if p not in allowed]
    if unknown or not wanted:
        raise InvalidArgument.field(
            "update_mask", f"paths must be one or more of {', '.join(allowed)} (got {unknown or 'none'})"
        )
    return wanted


def _locator(ref: pb.BlockRef, field: str) -> BlockLocator:
    if ref.block_id:
        return BlockLocator(block_id=ref.block_id)
    if ref.agent_id and ref.label:
        return BlockLocator(agent_id=ref.agent_id, label=ref.label)
    raise InvalidArgument.field(field, "name a block by block_id, or by agent_id and label")


def _block_field(block: pb.Block, path: str) -> object:
    value = getattr(block, path)
    return dict(value) if path == "metadata" else value


def _actor(context: Context) -> str:
    return f"tenant:{tenant_of(context)}"
