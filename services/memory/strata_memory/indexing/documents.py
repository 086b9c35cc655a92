"""What RetrievalService indexes for a passage or a message.

A message's searchable text is its content plus whatever its tool calls said (an assistant reply sent
through ``send_message`` is searchable as content — Letta's recall misses it), prefixed with the
speaker's name when the message has one (it lifts dense recall markedly on conversational data).
A message can also be indexed with the dialogue turns just before it (``recall_context_turns``):
replies such as "Yes, last Saturday!" only make sense with what they answer. They travel as the
document's ``context``, apart from its text, and ``recall_context_legs`` says which legs read them
(after the message's own text, so that is never the part cut off): in the full-text leg alone the
previous turn lends its words to a reply without making the reply look like the turn itself to the
vector leg (bench/LOCOMO.md measures each choice). The store and search results keep the message alone.

Time phrases in a message ("yesterday", "last week", "next month") are indexed with the absolute date
they name, resolved against the message's own time (``time_phrases``): ``… [yesterday: 7 May 2023]``,
so a search naming that day finds the turn. Only the first MAX_DATED_CHARS are read for them.

Building a document never raises on a stored value: tool-call arguments nested deeper than the JSON
decoder allows are indexed as the raw text, nesting is walked without recursion, lone surrogates
(which an escaped ``\\ud800`` in JSON arguments can store) become U+FFFD, and metadata (stored and
returned by RetrievalService, never searched; search answers from the store) is bounded in size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.time_phrases import date_notes
from strata_memory.store.records import MessageRecord, PassageRecord, to_datetime

MAX_INDEXED_CHARS = 30_000
"""Longer texts are indexed by their beginning (the embedder reads 256 tokens anyway); the store keeps all."""
MAX_CONTEXT_CHARS = 1_000
"""Each preceding turn indexed with a message contributes at most this many characters."""
MAX_DATED_CHARS = 4_000
"""Time phrases are looked for in a message's first this many characters (each clause costs a parse)."""
MAX_INDEXED_METADATA_CHARS = 16_384
"""Metadata entries are indexed (in key order) while keys and values total at most this many characters."""
_SURROGATES = re.compile("[\ud800-\udfff]")


def passage_document(passage: PassageRecord) -> rpb.Document:
    return rpb.Document(
        id=passage.id,
        text=clean(passage.text[:MAX_INDEXED_CHARS]),
        kind=rpb.DOCUMENT_KIND_PASSAGE,
        scope=rpb.Scope(tenant_id=passage.tenant_id, archive_id=passage.archive_id),
        tags=list(dict.fromkeys(clean(tag) for tag in passage.tags)),
        created_at=_timestamp(passage.created_us),
        metadata=bounded_metadata(passage.metadata),
    )


CONTEXT_LEGS = {
    "text": rpb.CONTEXT_LEGS_TEXT,
    "vector": rpb.CONTEXT_LEGS_VECTOR,
    "both": rpb.CONTEXT_LEGS_BOTH,
}
"""``recall_context_legs`` values: which legs of RetrievalService read a message's preceding turns."""


def message_document(
    message: MessageRecord, context: Sequence[MessageRecord] = (), *, context_legs: str = "both"
) -> rpb.Document:
    """``context``: the turns just before the message in its conversation, oldest first."""
    return rpb.Document(
        id=message.id,
        text=clean(dated_text(message)),
        context=clean(context_text(context)[:MAX_INDEXED_CHARS]),
        context_legs=CONTEXT_LEGS[context_legs],
        kind=rpb.DOCUMENT_KIND_MESSAGE,
        scope=rpb.Scope(
            tenant_id=message.tenant_id, agent_id=message.agent_id, conversation_id=message.conversation_id
        ),
        role=clean(message.role),
        created_at=_timestamp(message.created_us),
    )


def clean(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so it can be encoded as UTF-8."""
    return _SURROGATES.sub("\ufffd", text)


def bounded_metadata(metadata: Mapping[str, str]) -> dict[str, str]:
    """The entries, in key order, while their keys and values total at most MAX_INDEXED_METADATA_CHARS."""
    kept: dict[str, str] = {}
    budget = MAX_INDEXED_METADATA_CHARS
    for key in sorted(metadata):
        budget -= len(key) + len(metadata[key])
        if budget < 0:
            break
        kept[clean(key)] = clean(metadata[key])
    return kept


def context_text(context: Sequence[MessageRecord]) -> str:
    """The preceding turns, nearest first, each cut to a bounded length."""
    before = [message_text(turn)[:MAX_CONTEXT_CHARS] for turn in reversed(context)]
    return "\n".join(text for text in before if text)


def indexed_text(message: MessageRecord, context: Sequence[MessageRecord] = ()) -> str:
    """The message's own text, then the preceding turns: what a leg that reads the context indexes."""
    return "\n".join(part for part in (dated_text(message), context_text(context)) if part)


def dated_text(message: MessageRecord) -> str:
    """The message's text (bounded), then its time phrases with the dates they name."""
    text = message_text(message)[:MAX_INDEXED_CHARS]
    try:
        notes = date_notes(text[:MAX_DATED_CHARS], to_datetime(message.created_us))
    except (ValueError, OverflowError):  # a phrase said at the edge of time names a date past year 9999
        notes = ""
    return f"{text} {notes}" if notes else text


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
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the decoder allows
        if arguments.strip():
            yield arguments.strip()
        return
    yield from _strings(decoded)


def _strings(value: Any) -> Iterator[str]:
    """The non-blank strings inside a decoded JSON value, depth first, walked without recursion."""
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if item.strip():
                yield item.strip()
        elif isinstance(item, dict):
            pending.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            pending.extend(reversed(item))


def _timestamp(us: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromMicroseconds(us)
    return stamp
