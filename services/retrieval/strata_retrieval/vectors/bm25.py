"""BM25 as the server engine stores it: Qdrant's own BM25 (``qdrant_edge.Bm25``) turning a document's
text into the sparse vector a point carries (``bm25``), under parameters pinned per generation.

Term frequencies are saturated with ``k`` and length-normalised with ``b`` against ``avg_len``. The
inverse document frequency is the searching tenant's own, not the collection's (Qdrant's IDF
modifier is not used): each point's payload lists its terms (``bm25_terms``, the sparse indices) so
that :mod:`.tenant_idf` can count the tenant's documents holding a query term.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import qdrant_edge as qe
from qdrant_client import models

SPARSE_NAME = "bm25"
TERMS_FIELD = "bm25_terms"  # payload: the point's sparse indices, counted per tenant for IDF
IDF_SCOPE = {"idf_scope": "tenant"}  # pinned in a generation's metadata: no IDF modifier, terms listed
DEFAULT_AVG_LEN = 256.0  # Qdrant's: tokens after stop words


@dataclass(frozen=True)
class Bm25Params:
    """BM25's document-side parameters (Qdrant's defaults); they shape every stored sparse vector.
    ``avg_len`` None: the collection's measured mean document length, pinned per generation
    (:mod:`.qdrant_joint`)."""

    k: float = 1.2
    b: float = 0.75
    avg_len: float | None = None


def bm25_encoder(params: Bm25Params) -> qe.Bm25:
    """Qdrant's BM25 (English stop words, Snowball stemmer) under ``params``, ``avg_len`` resolved."""
    assert params.avg_len is not None
    return qe.Bm25(qe.Bm25Config(k=params.k, b=params.b, avg_len=params.avg_len, language="english"))


def sparse_vector(bm25: qe.Bm25, text: str) -> models.SparseVector:
    """A document's text as the sparse vector its point stores."""
    sparse = bm25.embed_document(text)
    return models.SparseVector(indices=list(sparse.indices), values=list(sparse.values))


def with_terms(payload: dict[str, Any], sparse: models.SparseVector) -> dict[str, Any]:
    """A point's payload listing its text's terms (its sparse vector's indices) for IDF counts."""
    return {**payload, TERMS_FIELD: list(sparse.indices)}
