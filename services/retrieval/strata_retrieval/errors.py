"""RetrievalService's own failures, in the shared error vocabulary."""

from __future__ import annotations

from strata_serving.errors import FailedPrecondition, InvalidArgument, Unavailable
from strata_serving.request_checks import Refusals


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


class NulCharacter(InvalidArgument):
    """A string field or map key of the request holds U+0000 (no index stores it)."""

    default_reason = "NUL_CHARACTER"


class UnknownEnumValue(InvalidArgument):
    """An enum field holds a number its enum does not define."""

    default_reason = "UNKNOWN_ENUM_VALUE"


REQUEST_REFUSALS = Refusals(nul_character=NulCharacter, unknown_enum_value=UnknownEnumValue)
"""What :func:`strata_serving.request_checks.checked_requests` raises for RetrievalService."""
