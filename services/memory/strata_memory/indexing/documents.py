"""What RetrievalService indexes for a passage or a message.

A message's searchable text is its content plus whatever its tool calls said (an assistant reply sent
through ``send_message`` is searchable as content — Letta's recall misses it), prefixed with the
speaker's name when the message has one (it lifts dense recall markedly on conversational data).
A message can also be indexed with the dialogue turns just before it (``recall_context_turns``):
replies such as "Yes, last Saturday!" only make sense with what they answer. The message's own text
comes first, so it is never the part cut off; the store and search results keep the message alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.store.records import MessageRecord, PassageRecord

MAX_INDEXED_CHARS = 30_000
"""Longer texts are indexed by their beginning (the embedder reads 256 tokens anyway); the store keeps all."""
MAX_CONTEXT_CHARS = 1_000
"""Each preceding turn indexed with a message contributes at most this many characters."""


def passage_document(passage: PassageRecord) -> rpb.Document:
    return rpb.Document(
        id=passage.id,
        text=passage.text[:MAX_INDEXED_CHARS],
        kind=rpb.DOCUMENT_KIND_PASSAGE,
        scope=rpb.Scope(tenant_id=passage.tenant_id, archive_id=passage.archive_id),
        tags=list(passage.tags),
        created_at=_timestamp(passage.created_us),
        metadata=dict(passage.metadata),
    )


def message_document(message: MessageRecord, context: Sequence[MessageRecord] = ()) -> rpb.Document:
    """``context``: the turns just before the message in its conversation, oldest first."""
    return rpb.Document(
        id=message.id,
        text=indexed_text(message, context)[:MAX_INDEXED_CHARS],
        kind=rpb.DOCUMENT_KIND_MESSAGE,
        scope=rpb.Scope(
            tenant_id=message.tenant_id, agent_id=message.agent_id, conversation_id=message.conversation_id
        ),
        role=message.role,
        created_at=_timestamp(message.created_us),
    )


def indexed_text(message: MessageRecord, context: Sequence[MessageRecord] = ()) -> str:
    """The message's own text, then the preceding turns (nearest first), each cut to a bounded length."""
    before = [message_text(turn)[:MAX_CONTEXT_CHARS] for turn in reversed(context)]
    return "\n".join([message_text(message), *(text for text in before if text)])


def message_text(message: MessageRecord) -> str:
    """Content, then the text the message's tool calls carried, prefixed by the speaker's name."""
    parts = [message.content.strip()] if message.content.strip() else []
    for call in message.tool_calls:
        parts.extend(_said_through(call.arguments))
    text = "\n".join(parts)
    return f"{message.name}: {text}" if message.name else text


def _said_through(arguments: str) -> Iterator[str]:
    """The string values inside a tool call's JSON arguments (what the assistant said through it)."""
    try:
        decoded: Any = json.loads(arguments)
    except ValueError:
        if arguments.strip():
            yield arguments.strip()
        return
    yield from _strings(decoded)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value.strip():
            yield value.strip()
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _timestamp(us: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromMicroseconds(us)
    return stamp
