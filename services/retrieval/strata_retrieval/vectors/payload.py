"""How a document is stored as a Qdrant point payload (identical for both backends)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strata_retrieval.model import (
    ContextLegs,
    Document,
    DocumentFilter,
    DocumentKind,
    Scope,
    TagMatch,
    with_context,
)
from strata_retrieval.timestamps import from_micros, to_micros

# Payload fields that filters use; each gets a payload index. ``created_us`` is integer microseconds
# (range filters and newest-first ordering); the rest are keywords.
KEYWORD_FIELDS = ("tenant_id", "agent_id", "archive_id", "conversation_id", "kind", "role", "tags")
TIME_FIELD = "created_us"
VECTOR_NAME = "dense"
HNSW_EF = 128  # the search-time beam width; its recall is in bench/perf/findings.md


def to_payload(document: Document) -> dict[str, Any]:
    scope = document.scope
    return {
        "doc_id": document.id,
        "text": document.text,
        "kind": str(document.kind),
        "tenant_id": scope.tenant_id,
        "agent_id": scope.agent_id,
        "archive_id": scope.archive_id,
        "conversation_id": scope.conversation_id,
        "role": document.role,
        "tags": list(document.tags),
        TIME_FIELD: to_micros(document.created_at),
        "metadata": dict(document.metadata),
        "context": document.context,
        "context_legs": str(document.context_legs),
    }


FULL_TEXT_FIELDS = ("text", "context", "context_legs")
"""The payload fields that make up what the full-text leg indexes."""


def full_text_of(payload: dict[str, Any]) -> str:
    """What the full-text leg indexes for a point, from the FULL_TEXT_FIELDS of its payload."""
    legs = ContextLegs(payload.get("context_legs", ContextLegs.BOTH))
    return with_context(str(payload["text"]), str(payload.get("context", "")), legs, ContextLegs.TEXT)


def from_payload(payload: dict[str, Any]) -> Document:
    return Document(
        id=str(payload["doc_id"]),
        text=str(payload["text"]),
        kind=DocumentKind(payload["kind"]),
        scope=Scope(
            tenant_id=str(payload["tenant_id"]),
            agent_id=str(payload["agent_id"]),
            archive_id=str(payload["archive_id"]),
            conversation_id=str(payload["conversation_id"]),
        ),
        role=str(payload["role"]),
        tags=tuple(str(tag) for tag in payload["tags"]),
        created_at=from_micros(int(payload[TIME_FIELD])),
        metadata={str(k): str(v) for k, v in payload["metadata"].items()},
        context=str(payload.get("context", "")),  # absent from points written before it existed
        context_legs=ContextLegs(payload.get("context_legs", ContextLegs.BOTH)),
    )


@dataclass(frozen=True)
class MatchOne:
    key: str
    value: str


@dataclass(frozen=True)
class MatchSome:
    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Between:
    """An inclusive integer range; ``None`` leaves that end open."""

    key: str
    low: int | None
    high: int | None


Condition = MatchOne | MatchSome | Between


def filter_conditions(flt: DocumentFilter) -> list[Condition]:
    """A filter as conditions that must all hold; each backend translates them to its own classes."""
    conditions: list[Condition] = [MatchOne("tenant_id", flt.tenant_id)]
    for key, values in (
        ("agent_id", flt.agent_ids),
        ("archive_id", flt.archive_ids),
        ("conversation_id", flt.conversation_ids),
        ("kind", tuple(str(kind) for kind in flt.kinds)),
        ("role", flt.roles),
    ):
        if values:
            conditions.append(MatchSome(key, tuple(values)))
    if flt.tags and flt.tag_match is TagMatch.ALL:
        conditions.extend(MatchOne("tags", tag) for tag in flt.tags)
    elif flt.tags:
        conditions.append(MatchSome("tags", tuple(flt.tags)))
    if flt.created_from is not None or flt.created_to is not None:
        low = to_micros(flt.created_from) if flt.created_from else None
        high = to_micros(flt.created_to) if flt.created_to else None
        conditions.append(Between(TIME_FIELD, low, high))
    return conditions
