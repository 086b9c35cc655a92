"""Every fixed limit MemoryService enforces where data enters, in one place.

The configurable ones (request bytes, searches per tenant, the channel to RetrievalService) are
settings in :mod:`strata_memory.settings`; the byte budgets derived from them are computed here so
that no two places can disagree. ``docs/security.md`` lists all of them in one table, and
``tests/security/test_limits_table.py`` reads that table and checks each row against a running
server (just under the limit passes, just over gets the documented status).

Each violation is INVALID_ARGUMENT naming the field (a tool call gets a tool error naming the
argument instead, which the LLM can read and fix).
"""

from __future__ import annotations

from collections.abc import Sequence

from strata_serving.errors import InvalidArgument

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
MAX_MESSAGES_PER_APPEND = 1000
MAX_PASSAGES_PER_CALL = 1000
MAX_PASSAGE_CHARS = 100_000
MAX_PASSAGE_TAGS = 32
"""Distinct tags on one passage."""
MAX_TAG_CHARS = 100
"""Characters in one tag, on a passage or in a search filter (a longer tag could match nothing)."""
MAX_FILTER_TAGS = 64
"""Tags in one search filter (SearchArchival, archival_memory_search)."""
MAX_QUERY_CHARS = 10_000
"""Characters in one search query; RetrievalService accepts the same (strata_retrieval.limits)."""
MAX_SEARCH_RESULTS = 100
MAX_REINDEX_BATCH = 512
"""RetrievalService's default ``max_batch_documents``."""

DEFAULT_RETRIEVAL_MESSAGE_BYTES = 64 * 1024 * 1024
"""RetrievalService's default request limit (``STRATA_RETRIEVAL_MAX_MESSAGE_BYTES``)."""
RESPONSE_BYTES_UNBOUNDED = -1
"""MemoryService's send limit: responses are never refused for their size. Input is bounded by the
request limit, so what a tenant stored (an agent whose blocks total more than one request, a page
of long passages) can always be read back; clients must accept large responses (the Python client
does)."""


def channel_options(max_message_bytes: int) -> list[tuple[str, int]]:
    """gRPC options of MemoryService's channel to RetrievalService, both ways from one setting
    (``STRATA_MEMORY_RETRIEVAL_MAX_MESSAGE_BYTES``, which should equal RetrievalService's
    ``STRATA_RETRIEVAL_MAX_MESSAGE_BYTES``)."""
    return [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
    ]


def outbox_batch_bytes(max_message_bytes: int) -> int:
    """The most serialized document bytes one delivery to RetrievalService may carry: its request
    limit less an eighth for the envelope, so a batch the outbox builds is never refused for size."""
    return max_message_bytes - max_message_bytes // 8


MAX_AGENT_FILE_DEPTH = 64
"""Nesting of arrays and objects in an Agent File (the document is level 1; Letta's own files nest
under 12), enforced by ``domain.agent_files.reading``."""


def agent_file_bytes(max_message_bytes: int) -> int:
    """The largest Agent File ImportAgentFile accepts: the request limit (``STRATA_MEMORY_MAX_MESSAGE_BYTES``)
    less an eighth for the envelope, so a file over it is refused as INVALID_ARGUMENT naming the
    file, not cut off by the transport (7 MiB with the default 8 MiB)."""
    return max_message_bytes - max_message_bytes // 8


def check_tag_filter(tags: Sequence[str], field: str = "tags") -> None:
    """A search's tag filter: at most ``MAX_FILTER_TAGS`` tags of 1 to ``MAX_TAG_CHARS`` characters."""
    if len(tags) > MAX_FILTER_TAGS:
        raise InvalidArgument.field(field, f"has {len(tags)} tags; at most {MAX_FILTER_TAGS}")
    for i, tag in enumerate(tags):
        if not tag:
            raise InvalidArgument.field(f"{field}[{i}]", "must not be empty")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidArgument.field(
                f"{field}[{i}]", f"has {len(tag)} characters; at most {MAX_TAG_CHARS}"
            )


# Admission (strata_serving.fair_admission): each pool is (capacity, share per tenant, queue per
# tenant); each listed method has its largest request in bytes and its pool.
SEARCH_REQUEST_BYTES = 128 * 1024
"""Largest SearchArchival / SearchMessages request, refused (RESOURCE_EXHAUSTED) before it is parsed.
A valid one is under 70 KB: a query of ``MAX_QUERY_CHARS`` and ``MAX_FILTER_TAGS`` tags of
``MAX_TAG_CHARS``, at up to 4 bytes a character."""
READ_REQUEST_BYTES = 64 * 1024
"""Largest request of a method that names resources and reads them (Get…, List…, Diff…, Render…)."""
ADMISSION_POOLS: dict[str, tuple[int, int, int]] = {
    "searches": (2, 1, 8),
    "writes": (4, 1, 64),
    "bulk": (2, 1, 0),
}
"""Defaults of the settings ``admission_searches``, ``admission_writes``, ``admission_bulk``: searches
embed a query in RetrievalService, writes hold a store transaction, bulk is Reindex. One running call
per tenant: on a 2-core host one search already keeps both cores busy (the embedder's threads), and
SQLite runs one write at a time whatever the concurrency. A second Reindex stream of one tenant is
refused at once, not queued (as ``reindex_streams_per_tenant`` documents)."""
_WRITES = [
    "CreateAgent",
    "UpdateAgent",
    "DeleteAgent",
    "CreateBlock",
    "UpdateBlock",
    "DeleteBlock",
    "AttachBlock",
    "DetachBlock",
    "RestoreBlockVersion",
    "CreateConversation",
    "AttachFile",
    "UpdateFile",
    "DetachFile",
    "CreateArchive",
    "DeleteArchive",
    "AttachArchive",
    "DetachArchive",
    "CreatePassages",
    "DeletePassage",
    "RecompileSystemPrompt",
    "ExecuteTool",
    "ImportAgentFile",
    "Purge",
]
_READS = [
    "GetAgent",
    "ListAgents",
    "GetBlock",
    "ListBlocks",
    "ListBlockVersions",
    "DiffBlockVersions",
    "DiffMemory",
    "ListConversations",
    "ListFiles",
    "ListMessages",
    "GetArchive",
    "ListArchives",
    "ListPassages",
    "RenderMemory",
    "GetSystemPrompt",
    "GetPromptReceipt",
    "ListTools",
    "ExportAgentFile",
]


def admission_methods(max_message_bytes: int) -> dict[str, tuple[int, str | None]]:
    """MemoryService's method names -> (largest request in bytes, pool name or None)."""
    methods: dict[str, tuple[int, str | None]] = {
        "SearchArchival": (SEARCH_REQUEST_BYTES, "searches"),
        "SearchMessages": (SEARCH_REQUEST_BYTES, "searches"),
        "Reindex": (READ_REQUEST_BYTES, "bulk"),
        # Appends that wait for the store together commit in one transaction (group commit on
        # SQLite); one at a time per tenant they could not, so they are sized but not pooled.
        "AppendMessages": (max_message_bytes, None),
    }
    methods |= dict.fromkeys(_WRITES, (max_message_bytes, "writes"))
    methods |= dict.fromkeys(_READS, (READ_REQUEST_BYTES, None))
    return methods


# Quotas per tenant (store/quotas.py; AdminService.UpdateTenantQuotas sets a tenant's own, the setting
# ``quotas`` the server's defaults). A write that would pass one is RESOURCE_EXHAUSTED, reason
# QUOTA_EXCEEDED, naming the quota and its limit. Sized so that a real deployment's heavy tenant does
# not meet them while one tenant cannot grow the store (and the costs that grow with it) without end.
QUOTA_DEFAULTS: dict[str, int] = {
    "agents": 10_000,
    "blocks": 100_000,
    "blocks_per_agent": 1_000,
    "archives": 1_000,
    "conversations_per_agent": 10_000,
    "passages": 1_000_000,
    "passage_bytes": 1024**3,
    "messages": 10_000_000,
    "message_bytes": 10 * 1024**3,
}
"""Agents, blocks and archives a tenant may hold; blocks attached to one agent (its prompt renders
every one of them); conversations of one agent; passages and messages a tenant may hold, by count and
by UTF-8 bytes of their text."""
