"""BM25 as the server engine stores it: Qdrant's own BM25 (``qdrant_edge.Bm25``) turning a document's
text into the sparse vectors a point carries (``bm25``: the text with its context; ``bm25_own``: the
text alone), under parameters pinned per generation.

Term frequencies are saturated with ``k`` and length-normalised with ``b`` against ``avg_len``; the
collection's sparse vector carries the IDF modifier, so Qdrant multiplies each query term by its
inverse document frequency at search time (:mod:`.qdrant_joint`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import qdrant_edge as qe
from qdrant_client import models

from strata_retrieval.model import Document

SPARSE_NAME = "bm25"
OWN_SPARSE_NAME = "bm25_own"
"""The sparse vector of a document's own text, without its context (``bm25`` holds both)."""
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


def sparse_vectors(
    bm25: qe.Bm25, document: Document, names: Sequence[str] = (SPARSE_NAME, OWN_SPARSE_NAME)
) -> dict[str, models.SparseVector]:
    """A document's sparse vectors: its text with its context (when the full-text leg reads it), and,
    unless ``names`` is a generation's of ``bm25`` alone (built before ``bm25_own``), its text alone."""
    vectors = {SPARSE_NAME: sparse_vector(bm25, document.full_text)}
    if OWN_SPARSE_NAME in names:
        vectors[OWN_SPARSE_NAME] = sparse_vector(bm25, document.text)
    return vectors
