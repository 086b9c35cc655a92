"""The retrieval domain model: documents, filters, search queries and hits, free of gRPC and engines."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

# Document keys are UUIDs (both Qdrant backends need int or UUID point ids) derived from the tenant
# and the caller's id, so the same id in two tenants never collides and re-upserts hit the same point.
_KEY_NAMESPACE = uuid.UUID("6f6b3c58-8f0e-4a0c-9a53-5a3f1b7e2c10")

DEFAULT_RRF_K = 60.0
DEFAULT_OWN_TEXT_WEIGHT = 0.1
"""What a query word found in a document's own text adds in the full-text leg, as a share of its
match in the text read with its context (:mod:`strata_retrieval.text_index`); chosen on LoCoMo
(bench/locomo/context_field.py)."""


class DocumentKind(StrEnum):
    PASSAGE = "passage"
    MESSAGE = "message"


class SearchMode(StrEnum):
    VECTOR = "vector"
    FTS = "fts"
    HYBRID = "hybrid"


class Fusion(StrEnum):
    """How a hybrid search fuses its two legs (:mod:`strata_retrieval.fusion`)."""

    RRF = "rrf"  # reciprocal rank fusion: weight / (k + rank)
    DBSF = "dbsf"  # distribution-based score fusion: weight * score scaled by mean +- 3 sd
    BLEND = "blend"  # per leg alpha of DBSF's scaled score + (1 - alpha) of (k + 1) / (k + rank)


class ContextLegs(StrEnum):
    """Which legs read a document's context (after its text)."""

    TEXT = "text"
    VECTOR = "vector"
    BOTH = "both"


class TagMatch(StrEnum):
    ANY = "any"
    ALL = "all"


def document_key(tenant_id: str, document_id: str) -> str:
    """The storage key of a document: a UUID5 of (tenant, id), identical in every index."""
    return str(uuid.uuid5(_KEY_NAMESPACE, f"{tenant_id}\x1f{document_id}"))


@dataclass(frozen=True)
class Scope:
    tenant_id: str
    agent_id: str = ""
    archive_id: str = ""
    conversation_id: str = ""


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    kind: DocumentKind
    scope: Scope
    created_at: datetime  # timezone-aware, UTC
    role: str = ""
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    context: str = ""
    """Text that finds the document without being part of it (a message's preceding turns)."""
    context_legs: ContextLegs = ContextLegs.BOTH

    @property
    def key(self) -> str:
        return document_key(self.scope.tenant_id, self.id)

    @property
    def embedded_text(self) -> str:
        """What the vector leg embeds: the text, then the context when that leg reads it."""
        return self._with_context(ContextLegs.VECTOR)

    @property
    def full_text(self) -> str:
        """What the full-text leg indexes: the text, then the context when that leg reads it."""
        return self._with_context(ContextLegs.TEXT)

    def _with_context(self, leg: ContextLegs) -> str:
        return with_context(self.text, self.context, self.context_legs, leg)


def with_context(text: str, context: str, legs: ContextLegs, leg: ContextLegs) -> str:
    """What ``leg`` reads of a document: its text, then its context when ``legs`` names that leg."""
    if context and legs in (leg, ContextLegs.BOTH):
        return f"{text}\n{context}"
    return text


@dataclass(frozen=True)
class DocumentFilter:
    """Documents of one tenant; empty tuples do not restrict, values within one field are OR-ed."""

    tenant_id: str
    agent_ids: tuple[str, ...] = ()
    archive_ids: tuple[str, ...] = ()
    conversation_ids: tuple[str, ...] = ()
    kinds: tuple[DocumentKind, ...] = ()
    tags: tuple[str, ...] = ()
    tag_match: TagMatch = TagMatch.ANY
    roles: tuple[str, ...] = ()
    created_from: datetime | None = None  # inclusive
    created_to: datetime | None = None  # inclusive


@dataclass(frozen=True)
class LegWeights:
    vector: float
    fts: float


@dataclass(frozen=True)
class SearchQuery:
    text: str
    mode: SearchMode
    filter: DocumentFilter
    top_k: int
    rrf_k: float = DEFAULT_RRF_K
    weights: LegWeights | None = None  # None: the engine's defaults
    vector_depth: int | None = None  # None: default_depth(top_k)
    fts_depth: int | None = None


@dataclass(frozen=True)
class ScoredKey:
    """One candidate from one leg: a document key and that leg's raw score (higher is better)."""

    key: str
    score: float


@dataclass(frozen=True)
class Hit:
    document: Document
    rrf_score: float  # sum over the legs of weight / (k + rank), whatever the fusion
    vector_rank: int | None = None
    fts_rank: int | None = None
    vector_score: float | None = None
    fts_score: float | None = None
    score: float = 0.0  # the fused score hits are ordered by (the RRF score under RRF)


@dataclass(frozen=True)
class SearchResult:
    hits: tuple[Hit, ...]
    mode: SearchMode


@dataclass(frozen=True)
class ScopeStats:
    document_count: int
    passage_count: int
    message_count: int
    tags: tuple[str, ...]
    embedding_model: str
    embedding_dimension: int


def default_depth(top_k: int) -> int:
    """Candidates each leg fetches before fusion when the request does not say: max(4 * top_k, 100)
    (the score fusions read each leg's distribution: 100 was better than 50 on SciFact and LoCoMo
    alike, bench/results/fusion_corpus_out.md)."""
    return max(4 * top_k, 100)
