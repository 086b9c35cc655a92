"""RetrievalService's own failures, in the shared error vocabulary."""

from __future__ import annotations

from strata_serving.errors import FailedPrecondition, Unavailable


class EmbeddingModelMismatch(FailedPrecondition):
    """The index on disk was built with another embedding model; its vectors are not comparable."""

    default_reason = "EMBEDDING_MODEL_MISMATCH"


class RebuildInProgress(FailedPrecondition):
    """Another whole-index rebuild of the collection is building, or moved the alias meanwhile."""

    default_reason = "REBUILD_IN_PROGRESS"


class IndexUnavailable(Unavailable):
    """The index's server (Qdrant) could not be reached, timed out or answered with a server error;
    retrying later may succeed (writes are idempotent)."""

    default_reason = "INDEX_UNAVAILABLE"
