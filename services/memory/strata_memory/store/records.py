"""What the store hands back: immutable records of stored rows, with ids, tenants and times."""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from strata_memory.domain.model import Block, RecompilePolicy, RenderMode, ToolResultStyle
from strata_memory.domain.receipts import PromptReceipt

DEFAULT_CONVERSATION = "default"


def now_us() -> int:
    """Current time as integer microseconds since the epoch (how the store keeps time)."""
    return time.time_ns() // 1000


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_datetime(us: int) -> datetime:
    """Integer microseconds since the epoch as an aware UTC ``datetime``, exactly: integer arithmetic
    (``us / 1e6`` as a float rounds 9999-12-31T23:59:59.999999 up into year 10000, and ends there)."""
    return EPOCH + timedelta(microseconds=us)


def etag_of(object_id: str, version: int) -> str:
    """The etag of one exact state of one object: opaque, derived from its id and version counter.

    Ids are server-made UUIDs, new for every object (a block deleted and re-created under the same
    label gets a new one), so an etag is never valid for another object nor for a later lifetime of
    the same label. 128 bits of SHA-256, URL-safe base64 (22 characters); clients only compare it.
    """
    digest = hashlib.sha256(f"{object_id}\x00{version}".encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


@dataclass(frozen=True, slots=True)
class AgentRecord:
    id: str
    tenant_id: str
    name: str
    system: str
    render_mode: RenderMode
    recompile_policy: RecompilePolicy
    timezone: str
    tool_result_style: ToolResultStyle
    version: int
    created_us: int
    updated_us: int
    block_labels: tuple[str, ...] = ()

    @property
    def etag(self) -> str:
        return etag_of(self.id, self.version)


@dataclass(frozen=True, slots=True)
class BlockRecord:
    """A stored block: the domain value plus its tenant and times."""

    block: Block
    tenant_id: str
    created_us: int
    updated_us: int

    @property
    def etag(self) -> str:
        return etag_of(self.block.id, self.block.version)


@dataclass(frozen=True, slots=True)
class BlockVersionRecord:
    block_id: str
    version: int
    label: str
    value: str
    limit: int
    description: str
    read_only: bool
    metadata: Mapping[str, str]
    source: str
    actor: str
    changed_us: int


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    agent_id: str
    id: str
    created_us: int


@dataclass(frozen=True, slots=True)
class FileRecord:
    id: str
    tenant_id: str
    agent_id: str
    directory: str
    name: str
    content: str
    description: str
    limit: int
    is_open: bool
    created_us: int
    updated_us: int


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class MessageRecord:
    id: str
    tenant_id: str
    agent_id: str
    conversation_id: str
    role: str
    content: str
    name: str = ""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_call_id: str = ""
    sequence: int = 0
    created_us: int = 0
    prompt_receipt_id: str = ""
    """The receipt of the system prompt the message was generated under, when the caller named it."""


@dataclass(frozen=True, slots=True)
class PromptRecord:
    agent_id: str
    conversation_id: str
    text: str
    fingerprint: str
    compiled_us: int
    receipt: PromptReceipt | None = None
    """What the text was built from; None for prompts stored before receipts were recorded."""


@dataclass(frozen=True, slots=True)
class Page:
    """Where a list starts (offset) and how many rows it returns."""

    offset: int = 0
    size: int = 50


@dataclass(frozen=True, slots=True)
class ArchiveRecord:
    id: str
    tenant_id: str
    name: str
    description: str
    created_us: int
    agent_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PassageRecord:
    id: str
    tenant_id: str
    archive_id: str
    text: str
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    created_us: int = 0


@dataclass(frozen=True, slots=True)
class IndexJob:
    """One pending change to RetrievalService's indexes (the outbox row), with the lease it was
    claimed under (none: ``""`` and 0), which its settlement must still find on the row."""

    id: int
    tenant_id: str
    action: str
    document_id: str
    attempts: int
    lease_owner: str = ""
    lease_until_us: int = 0
