"""Proto ↔ domain conversions for MemoryService, in one place (round-trip tested)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp

from strata.memory.v1 import resources_pb2 as pb
from strata_memory.domain.model import (
    DEFAULT_BLOCK_LIMIT,
    DEFAULT_FILE_LIMIT,
    Block,
    RecompilePolicy,
    RenderMode,
    ToolResultStyle,
)
from strata_memory.domain.receipts import PromptReceipt
from strata_memory.operations.prompts import PromptView
from strata_memory.operations.search import Hit
from strata_memory.store.records import (
    DEFAULT_CONVERSATION,
    AgentRecord,
    ArchiveRecord,
    BlockRecord,
    BlockVersionRecord,
    ConversationRecord,
    FileRecord,
    MessageRecord,
    PassageRecord,
    ToolCallRecord,
)
from strata_serving.errors import InvalidArgument
from strata_serving.timestamps import to_micros

K = TypeVar("K")
V = TypeVar("V")

RENDER_MODES = {
    pb.RENDER_MODE_STANDARD: RenderMode.STANDARD,
    pb.RENDER_MODE_LINE_NUMBERED: RenderMode.LINE_NUMBERED,
    pb.RENDER_MODE_GIT: RenderMode.GIT,
}
RECOMPILE_POLICIES = {
    pb.RECOMPILE_POLICY_ON_EDIT: RecompilePolicy.ON_EDIT,
    pb.RECOMPILE_POLICY_EXPLICIT: RecompilePolicy.EXPLICIT,
}
RESULT_STYLES = {
    pb.TOOL_RESULT_STYLE_FULL_VALUE: ToolResultStyle.FULL_VALUE,
    pb.TOOL_RESULT_STYLE_SNIPPET: ToolResultStyle.SNIPPET,
}
ROLES = {
    pb.MESSAGE_ROLE_SYSTEM: "system",
    pb.MESSAGE_ROLE_USER: "user",
    pb.MESSAGE_ROLE_ASSISTANT: "assistant",
    pb.MESSAGE_ROLE_TOOL: "tool",
}


def _inverse(table: dict[K, V]) -> dict[V, K]:
    return {v: k for k, v in table.items()}


def choice(table: dict[K, V], value: K, field: str, *, default: V | None = None) -> V:
    """Map a wire enum to the domain; UNSPECIFIED (0) takes ``default`` or is refused."""
    if value in table:
        return table[value]
    if value == 0 and default is not None:
        return default
    names = ", ".join(str(k) for k in table)
    raise InvalidArgument.field(field, f"must be one of the enum values {names} (got {value})")


def timestamp(us: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromMicroseconds(us)
    return stamp


def agent_to_proto(agent: AgentRecord) -> pb.Agent:
    return pb.Agent(
        id=agent.id,
        tenant_id=agent.tenant_id,
        name=agent.name,
        system=agent.system,
        render_mode=_inverse(RENDER_MODES)[agent.render_mode],
        recompile_policy=_inverse(RECOMPILE_POLICIES)[agent.recompile_policy],
        timezone=agent.timezone,
        tool_result_style=_inverse(RESULT_STYLES)[agent.tool_result_style],
        block_labels=list(agent.block_labels),
        create_time=timestamp(agent.created_us),
        update_time=timestamp(agent.updated_us),
        etag=agent.etag,
    )


def agent_from_proto(agent: pb.Agent, tenant_id: str) -> AgentRecord:
    """A new or changed agent from the wire; unset enums take their documented defaults."""
    return AgentRecord(
        id=agent.id,
        tenant_id=tenant_id,
        name=agent.name,
        system=agent.system,
        render_mode=choice(RENDER_MODES, agent.render_mode, "agent.render_mode", default=RenderMode.STANDARD),
        recompile_policy=choice(
            RECOMPILE_POLICIES,
            agent.recompile_policy,
            "agent.recompile_policy",
            default=RecompilePolicy.ON_EDIT,
        ),
        timezone=agent.timezone or "UTC",
        tool_result_style=choice(
            RESULT_STYLES,
            agent.tool_result_style,
            "agent.tool_result_style",
            default=ToolResultStyle.FULL_VALUE,
        ),
        version=0,
        created_us=0,
        updated_us=0,
    )


def block_to_proto(record: BlockRecord) -> pb.Block:
    block = record.block
    return pb.Block(
        id=block.id,
        tenant_id=record.tenant_id,
        label=block.label,
        value=block.value,
        limit=block.limit,
        description=block.description,
        read_only=block.read_only,
        metadata=dict(block.metadata),
        chars_current=block.chars_current,
        version=block.version,
        etag=record.etag,
        create_time=timestamp(record.created_us),
        update_time=timestamp(record.updated_us),
    )


def block_from_proto(block: pb.Block, *, field: str = "block") -> Block:
    """A block from the wire; an absent limit is the default (100000), an explicit one is kept."""
    limit = block.limit if block.HasField("limit") else DEFAULT_BLOCK_LIMIT
    if block.HasField("limit") and block.limit <= 0:
        raise InvalidArgument.field(f"{field}.limit", f"must be positive (got {block.limit})")
    return Block(
        label=block.label,
        value=block.value,
        limit=limit,
        description=block.description,
        read_only=block.read_only,
        metadata=dict(block.metadata),
    )


def version_to_proto(version: BlockVersionRecord) -> pb.BlockVersion:
    return pb.BlockVersion(
        block_id=version.block_id,
        version=version.version,
        label=version.label,
        value=version.value,
        limit=version.limit,
        description=version.description,
        read_only=version.read_only,
        source=version.source,
        actor=version.actor,
        change_time=timestamp(version.changed_us),
    )


def conversation_to_proto(conversation: ConversationRecord, tenant_id: str) -> pb.Conversation:
    return pb.Conversation(
        id=conversation.id,
        agent_id=conversation.agent_id,
        tenant_id=tenant_id,
        create_time=timestamp(conversation.created_us),
    )


def file_to_proto(file: FileRecord) -> pb.File:
    return pb.File(
        id=file.id,
        tenant_id=file.tenant_id,
        agent_id=file.agent_id,
        directory=file.directory,
        name=file.name,
        content=file.content,
        description=file.description,
        limit=file.limit,
        is_open=file.is_open,
        create_time=timestamp(file.created_us),
        update_time=timestamp(file.updated_us),
    )


def file_from_proto(file: pb.File, agent_id: str) -> FileRecord:
    if file.HasField("limit") and file.limit <= 0:
        raise InvalidArgument.field("file.limit", f"must be positive (got {file.limit})")
    return FileRecord(
        id="",
        tenant_id="",
        agent_id=agent_id,
        directory=file.directory,
        name=file.name,
        content=file.content,
        description=file.description,
        limit=file.limit if file.HasField("limit") else DEFAULT_FILE_LIMIT,
        is_open=file.is_open,
        created_us=0,
        updated_us=0,
    )


def message_to_proto(message: MessageRecord) -> pb.Message:
    return pb.Message(
        id=message.id,
        tenant_id=message.tenant_id,
        agent_id=message.agent_id,
        conversation_id=message.conversation_id,
        role=_inverse(ROLES)[message.role],
        content=message.content,
        name=message.name,
        tool_calls=[pb.ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in message.tool_calls],
        tool_call_id=message.tool_call_id,
        sequence=message.sequence,
        create_time=timestamp(message.created_us),
        prompt_receipt_id=message.prompt_receipt_id,
    )


def message_from_proto(message: pb.Message, index: int) -> MessageRecord:
    role = choice(ROLES, message.role, f"messages[{index}].role")
    return MessageRecord(
        id="",
        tenant_id="",
        agent_id="",
        conversation_id="",
        role=role,
        content=message.content.replace("\r\n", "\n"),
        name=message.name,
        tool_calls=tuple(ToolCallRecord(c.id, c.name, c.arguments) for c in message.tool_calls),
        tool_call_id=message.tool_call_id,
        created_us=to_micros(message.create_time, "create_time") if message.HasField("create_time") else 0,
    )


def prompt_to_proto(view: PromptView) -> pb.SystemPrompt:
    prompt = view.prompt
    return pb.SystemPrompt(
        agent_id=prompt.agent_id,
        conversation_id=prompt.conversation_id,
        text=prompt.text,
        compile_time=timestamp(prompt.compiled_us),
        stale=view.stale,
        receipt=receipt_to_proto(prompt.receipt) if prompt.receipt else None,
    )


def receipt_to_proto(receipt: PromptReceipt) -> pb.PromptReceipt:
    return pb.PromptReceipt(
        id=receipt.id,
        agent_id=receipt.agent_id,
        compile_time=timestamp(receipt.compiled_us),
        render_mode=_inverse(RENDER_MODES)[RenderMode(receipt.render_mode)],
        blocks=[
            pb.PromptReceiptBlock(block_id=b.block_id, label=b.label, version=b.version)
            for b in receipt.blocks
        ],
        message_count=receipt.message_count,
        passage_count=receipt.passage_count,
        file_count=receipt.file_count,
        archival_tags=list(receipt.tags),
        system_sha256=receipt.system_sha256,
    )


def required(value: str, field: str) -> str:
    """A request field that must be set (INVALID_ARGUMENT naming it otherwise)."""
    if not value:
        raise InvalidArgument.field(field, "is required")
    return value


def conversation_or_default(conversation_id: str) -> str:
    return conversation_id or DEFAULT_CONVERSATION


def tool_to_proto(schema: Mapping[str, Any], retrieval_tools: Collection[str]) -> pb.Tool:
    function = schema["function"]
    return pb.Tool(
        name=function["name"],
        description=function["description"],
        json_schema=json.dumps(schema, ensure_ascii=False),
        needs_retrieval=function["name"] in retrieval_tools,
    )


def archive_to_proto(archive: ArchiveRecord) -> pb.Archive:
    return pb.Archive(
        id=archive.id,
        tenant_id=archive.tenant_id,
        name=archive.name,
        description=archive.description,
        agent_ids=list(archive.agent_ids),
        create_time=timestamp(archive.created_us),
    )


def passage_to_proto(passage: PassageRecord) -> pb.Passage:
    return pb.Passage(
        id=passage.id,
        tenant_id=passage.tenant_id,
        archive_id=passage.archive_id,
        text=passage.text,
        tags=list(passage.tags),
        metadata=dict(passage.metadata),
        create_time=timestamp(passage.created_us),
    )


def passage_from_proto(passage: pb.Passage) -> PassageRecord:
    return PassageRecord(
        id="",
        tenant_id="",
        archive_id="",
        text=passage.text,
        tags=tuple(passage.tags),
        metadata=dict(passage.metadata),
        created_us=to_micros(passage.create_time, "create_time") if passage.HasField("create_time") else 0,
    )


def relevance_to_proto(hit: Hit[Any]) -> pb.Relevance:
    relevance = pb.Relevance(rrf_score=hit.rrf_score, search_mode=hit.search_mode, score=hit.score)
    if hit.vector_rank is not None:
        relevance.vector_rank = hit.vector_rank
    if hit.fts_rank is not None:
        relevance.fts_rank = hit.fts_rank
    if hit.vector_score is not None:
        relevance.vector_score = hit.vector_score
    if hit.fts_score is not None:
        relevance.fts_score = hit.fts_score
    return relevance
