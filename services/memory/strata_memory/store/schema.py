"""The tables of MemoryService's store. Timestamps are integer microseconds since the epoch (UTC).

Migrations under ``migrations/versions`` create and evolve these tables; this module is what the code
reads and writes through, and a test checks that the migrated database matches it.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

metadata = MetaData()

agents = Table(
    "agents",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(128), nullable=False, index=True),
    Column("name", Text, nullable=False),
    Column("system", Text, nullable=False),
    Column("render_mode", String(32), nullable=False),
    Column("recompile_policy", String(32), nullable=False),
    Column("timezone", String(64), nullable=False),
    Column("tool_result_style", String(32), nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("next_sequence", BigInteger, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Column("updated_us", BigInteger, nullable=False),
    # How many messages the agent has, kept by the statement that numbers them (<memory_metadata>).
    Column("message_count", BigInteger, nullable=False, server_default="0"),
)

blocks = Table(
    "blocks",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(128), nullable=False, index=True),
    Column("label", Text, nullable=False),
    Column("value", Text, nullable=False),
    Column("char_limit", Integer, nullable=False),
    Column("description", Text, nullable=False),
    Column("read_only", Boolean, nullable=False),
    Column("metadata", JSON, nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Column("updated_us", BigInteger, nullable=False),
)

agent_blocks = Table(
    "agent_blocks",
    metadata,
    Column("agent_id", String(64), ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True),
    Column("block_id", String(64), ForeignKey("blocks.id", ondelete="CASCADE"), primary_key=True),
    Column("label", Text, nullable=False),
    Column("position", BigInteger, nullable=False),
    UniqueConstraint("agent_id", "label", name="uq_agent_blocks_label"),
    Index("ix_agent_blocks_block_id", "block_id"),
    Index("ix_agent_blocks_position", "agent_id", "position"),
)

block_versions = Table(
    "block_versions",
    metadata,
    Column("block_id", String(64), ForeignKey("blocks.id", ondelete="CASCADE"), primary_key=True),
    Column("version", BigInteger, primary_key=True),
    Column("label", Text, nullable=False),
    Column("value", Text, nullable=False),
    Column("char_limit", Integer, nullable=False),
    Column("description", Text, nullable=False),
    Column("read_only", Boolean, nullable=False),
    Column("metadata", JSON, nullable=False),
    Column("source", String(128), nullable=False),
    Column("actor", String(128), nullable=False),
    Column("changed_us", BigInteger, nullable=False),
)

conversations = Table(
    "conversations",
    metadata,
    Column("agent_id", String(64), ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True),
    Column("id", String(200), primary_key=True),
    Column("created_us", BigInteger, nullable=False),
)

system_prompts = Table(
    "system_prompts",
    metadata,
    Column("agent_id", String(64), primary_key=True),
    Column("conversation_id", String(200), primary_key=True),
    Column("text", Text, nullable=False),
    Column("fingerprint", String(64), nullable=False),
    Column("compiled_us", BigInteger, nullable=False),
    Column("snapshot_id", String(64), nullable=True),
    # Set: the text is assembled from that snapshot on read (``text`` and ``fingerprint`` are empty).
    Column("receipt_id", String(64), nullable=True),  # this row's own text's receipt (prompt_receipts)
)

prompt_snapshots = Table(
    "prompt_snapshots",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("agent_id", String(64), nullable=False, index=True),
    Column("system", Text, nullable=False),
    Column("memory", Text, nullable=False),
    Column("timezone", String(64), nullable=False),
    Column("message_count", BigInteger, nullable=False),
    Column("passage_count", BigInteger, nullable=False),
    Column("tags", JSON, nullable=False),
    Column("compiled_us", BigInteger, nullable=False),
    Column("receipt_id", String(64), nullable=True),  # NULL for snapshots compiled before receipts
    # When a memory change's recompile was deferred to the next read of the prompt (0: none; CreateBlock).
    Column("due_us", BigInteger, nullable=False, server_default="0"),
)

# When each block was attached to and detached from each agent (NULL: still attached), for reads of
# memory as it was at a past moment. attached_us = 0: attached before this history was kept.
block_attachments = Table(
    "block_attachments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("agent_id", String(64), nullable=False),
    Column("block_id", String(64), nullable=False),
    Column("position", Integer, nullable=False),
    Column("attached_us", BigInteger, nullable=False),
    Column("detached_us", BigInteger, nullable=True),
    Index("ix_block_attachments_agent", "agent_id", "attached_us"),
    Index("ix_block_attachments_block", "block_id"),
)

# What each compiled prompt was built from (domain/receipts.py), recorded once per id, never changed.
prompt_receipts = Table(
    "prompt_receipts",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(128), nullable=False),
    Column("agent_id", String(64), ForeignKey("agents.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("compiled_us", BigInteger, nullable=False),
    Column("render_mode", String(32), nullable=False),
    Column("blocks", JSON, nullable=False),  # [[block_id, label, version], ...] in render order
    Column("message_count", BigInteger, nullable=False),
    Column("passage_count", BigInteger, nullable=False),
    Column("file_count", BigInteger, nullable=False),
    Column("tags", JSON, nullable=False),
    Column("system_sha256", String(64), nullable=False),
)

files = Table(
    "files",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(128), nullable=False),
    Column("agent_id", String(64), ForeignKey("agents.id", ondelete="CASCADE"), nullable=False),
    Column("directory", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("description", Text, nullable=False),
    Column("char_limit", Integer, nullable=False),
    Column("is_open", Boolean, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Column("updated_us", BigInteger, nullable=False),
    UniqueConstraint("agent_id", "directory", "name", name="uq_files_name"),
)

messages = Table(
    "messages",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(128), nullable=False),
    Column("agent_id", String(64), ForeignKey("agents.id", ondelete="CASCADE"), nullable=False),
    Column("conversation_id", String(200), nullable=False),
    Column("role", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("tool_calls", JSON, nullable=False),
    Column("tool_call_id", Text, nullable=False),
    Column("sequence", BigInteger, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Column("prompt_receipt_id", String(64), nullable=True),  # the prompt the message was answered under
    UniqueConstraint("agent_id", "sequence", name="uq_messages_sequence"),
    Index("ix_messages_conversation", "agent_id", "conversation_id", "sequence"),
)

archives = Table(
    "archives",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(128), nullable=False, index=True),
    Column("name", Text, nullable=False),
    Column("description", Text, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    # How many passages the archive holds, kept in the transactions that add or delete them.
    Column("passage_count", BigInteger, nullable=False, server_default="0"),
)

archive_agents = Table(
    "archive_agents",
    metadata,
    Column("archive_id", String(64), ForeignKey("archives.id", ondelete="CASCADE"), primary_key=True),
    Column("agent_id", String(64), ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True),
    Column("is_default", Boolean, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Index("ix_archive_agents_agent_id", "agent_id"),
)

passages = Table(
    "passages",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant_id", String(128), nullable=False),
    Column("archive_id", String(64), ForeignKey("archives.id", ondelete="CASCADE"), nullable=False),
    Column("text", Text, nullable=False),
    Column("tags", JSON, nullable=False),
    Column("metadata", JSON, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Index("ix_passages_archive", "archive_id", "created_us"),
)

passage_tags = Table(
    "passage_tags",
    metadata,
    Column("passage_id", String(64), ForeignKey("passages.id", ondelete="CASCADE"), primary_key=True),
    Column("tag", Text, primary_key=True),
    Column("archive_id", String(64), nullable=False, index=True),
)

# Each archive's distinct passage tags, with how many of its passages carry each: <memory_metadata> lists
# an agent's tags from these rows, not from every passage's.
archive_tags = Table(
    "archive_tags",
    metadata,
    Column("archive_id", String(64), ForeignKey("archives.id", ondelete="CASCADE"), primary_key=True),
    Column("tag", Text, primary_key=True),
    Column("passages", BigInteger, nullable=False),
)

index_jobs = Table(
    "index_jobs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("tenant_id", String(128), nullable=False),
    Column("action", String(16), nullable=False),
    Column("document_id", String(64), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_us", BigInteger, nullable=False),
    Column("last_error", Text, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    # Set when the job was parked: out of the delivery loop until an operator retries it.
    Column("parked_us", BigInteger, nullable=True),
    # The worker delivering the job, until lease_until_us (another worker may take it over after).
    Column("lease_owner", String(64), nullable=False, server_default=""),
    Column("lease_until_us", BigInteger, nullable=False, server_default="0"),
    Index("ix_index_jobs_tenant_id", "tenant_id", "id"),
    Index("ix_index_jobs_document", "tenant_id", "document_id", "id"),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("tenant_id", String(128), nullable=False, index=True),
    Column("secret_sha256", String(64), nullable=False),
    Column("display_name", Text, nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Column("revoked_us", BigInteger, nullable=True),
)

# Writes sent with a request_id (AIP-155), kept for a day: what each stored, so a retry returns it.
write_requests = Table(
    "write_requests",
    metadata,
    Column("tenant_id", String(128), primary_key=True),
    Column("method", String(64), primary_key=True),
    Column("request_id", String(36), primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("resource_ids", JSON, nullable=False),
    Column("created_us", BigInteger, nullable=False, index=True),
)

# What an Agent File import kept verbatim for one agent (docs/agent-files.md): the agent's, its blocks'
# and its messages' unmapped fields, the file's top level and its ids, so export gives back the file.
agent_file_residues = Table(
    "agent_file_residues",
    metadata,
    Column("agent_id", String(64), ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True),
    Column("tenant_id", String(128), nullable=False),
    # Agents imported from one file share it; position is the agent's place in the file.
    Column("import_id", String(64), nullable=False, index=True),
    Column("position", Integer, nullable=False),
    Column("agent", JSON, nullable=False),
    Column("blocks", JSON, nullable=False),
    Column("messages", JSON, nullable=False),
    Column("document", JSON, nullable=False),
    Column("ids", JSON, nullable=False),
    Column("created_us", BigInteger, nullable=False),
)

# A tenant's own quota limits (AdminService.UpdateTenantQuotas); a quota without a row has the default.
tenant_quotas = Table(
    "tenant_quotas",
    metadata,
    Column("tenant_id", String(128), primary_key=True),
    Column("quota", String(64), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

# What each tenant (scope '') or each of its agents (scope = the agent's id) holds, kept by triggers
# (migration 0013), with the tenant's own limits for it (-1: the default), checked against the quotas
# before a write commits (store/quotas.py).
tenant_usage = Table(
    "tenant_usage",
    metadata,
    Column("tenant_id", String(128), primary_key=True),
    Column("resource", String(32), primary_key=True),
    Column("scope", String(64), primary_key=True),
    Column("count", BigInteger, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("own_count", BigInteger, nullable=False),
    Column("own_bytes", BigInteger, nullable=False),
    Column("checked", SmallInteger, nullable=False),
    Index(
        "ix_tenant_usage_unchecked",
        "checked",
        sqlite_where=text("checked = 0"),
        postgresql_where=text("checked = 0"),
    ),
    Index("ix_tenant_usage_scope", "scope"),
)
