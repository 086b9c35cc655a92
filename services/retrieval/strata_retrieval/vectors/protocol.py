"""What the retrieval engine needs from a vector store.

The vector store also keeps each document's full payload (text, scope, tags, metadata), so it is
the one place hits are read back from, whichever leg found them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.model import Document, DocumentFilter, ScoredKey


class VectorIndex(Protocol):
    def upsert(self, documents: Sequence[Document], vectors: Vectors) -> None:
        """Store each document with its vector (row i for document i), replacing any by the same key.

        Returns once the documents are visible to every read method.
        """
        ...

    def delete(self, keys: Sequence[str]) -> None:
        """Remove these keys; absent keys are ignored."""
        ...

    def search(self, vector: Vectors, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        """Up to ``limit`` keys matching ``flt``, by cosine similarity to ``vector``, best first."""
        ...

    def fetch(self, keys: Sequence[str]) -> dict[str, Document]:
        """The stored documents for those keys that exist."""
        ...

    def keys_matching(self, flt: DocumentFilter) -> list[str]:
        """Every key matching ``flt`` (used to delete by filter in every index alike)."""
        ...

    def document_pages(self) -> Iterator[list[Document]]:
        """Every stored document of every tenant, a page at a time (to build another index from)."""
        ...

    def keys_after(self, flt: DocumentFilter, after_key: str, limit: int) -> list[str]:
        """Up to ``limit`` keys matching ``flt`` that sort after ``after_key`` ("": from the first),
        in key order: one page of a listing, read without reading the keys before it."""
        ...

    def newest(self, flt: DocumentFilter, limit: int) -> list[Document]:
        """Up to ``limit`` documents matching ``flt``, newest ``created_at`` first."""
        ...

    def count(self, flt: DocumentFilter) -> int: ...

    def tags(self, flt: DocumentFilter, limit: int) -> list[str]:
        """Distinct tags of the documents matching ``flt`` (at most ``limit``), sorted."""
        ...

    def unindexed_count(self) -> int:
        """How many vectors are searched exactly because no HNSW graph covers them yet."""
        ...

    def optimize(self) -> bool:
        """Build HNSW graphs and merge segments; blocking and slow. True when anything changed."""
        ...

    def close(self) -> None: ...
