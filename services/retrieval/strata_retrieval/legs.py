"""What the engine needs from a full-text leg, and from an index that runs both legs in one request.

Two text legs exist: Tantivy on local disk, one index per tenant
(:class:`~strata_retrieval.text_tenants.TenantTextIndexes`, the embedded default) and Qdrant sparse
vectors in the same collection as the dense ones
(:class:`~strata_retrieval.vectors.qdrant_joint.SparseTextLeg`, the server engine).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.model import Document, DocumentFilter, ScoredKey


class TextIndex(Protocol):
    def upsert(self, documents: Sequence[Document]) -> None:
        """Index each document's text, replacing any by the same key; searchable on return."""
        ...

    def delete(self, tenant_id: str, keys: Sequence[str]) -> None:
        """Remove these keys of ``tenant_id``'s documents; absent keys are ignored."""
        ...

    def search(self, text: str, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        """Up to ``limit`` keys matching ``flt``, by BM25 of user ``text`` (never query syntax),
        best first; [] when ``text`` holds no searchable word. BM25's statistics (document
        frequencies, count, mean length) are ``flt.tenant_id``'s documents' only, so no other
        tenant's documents change a score."""
        ...

    def held(self, tenant_id: str, keys: Sequence[str]) -> set[str]:
        """Those of ``tenant_id``'s ``keys`` this leg holds, read by key (a purge's read-back)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class JointSearch(Protocol):
    """A vector index that also holds the text leg, and can run both legs in one request."""

    def search_legs(
        self, vector: Vectors, text: str, flt: DocumentFilter, vector_limit: int, text_limit: int
    ) -> tuple[list[ScoredKey], list[ScoredKey]]:
        """The dense leg's and the text leg's candidates, each filtered by ``flt`` inside its query."""
        ...


@runtime_checkable
class Rebuildable(Protocol):
    """A vector index that can rebuild itself whole as a new generation and swap onto it."""

    def rebuild(self, embed: Callable[[Sequence[str]], Vectors]) -> str:
        """Build the next generation from the current one's documents, then serve from it."""
        ...
