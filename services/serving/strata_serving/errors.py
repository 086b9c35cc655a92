"""The error vocabulary shared by Strata's services.

Domain code raises these typed errors; it never builds gRPC statuses itself. Each category maps to one
status code in :mod:`strata_serving.status`, and every error carries a machine-readable ``reason``
(``google.rpc.ErrorInfo.reason``), string ``metadata`` and, for bad request fields, field violations
(``google.rpc.BadRequest``). Services subclass a category for each distinct failure, for example
``class BlockNotFound(NotFound)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class StrataError(Exception):
    """A failure the caller can act on: a human message plus a stable machine-readable reason."""

    default_reason = "STRATA_ERROR"

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        metadata: Mapping[str, object] | None = None,
        field_violations: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason
        self.metadata: dict[str, str] = {k: str(v) for k, v in (metadata or {}).items()}
        self.field_violations: tuple[tuple[str, str], ...] = tuple(field_violations)

    def __str__(self) -> str:
        return self.message


class InvalidArgument(StrataError):
    """The request itself is wrong (a field is missing, malformed or out of range)."""

    default_reason = "INVALID_ARGUMENT"

    @classmethod
    def field(cls, field: str, problem: str, *, reason: str | None = None) -> InvalidArgument:
        """The common case: one named field and what is wrong with it."""
        return cls(f"{field}: {problem}", reason=reason, field_violations=[(field, problem)])


class NotFound(StrataError):
    """A named resource does not exist (or is not visible to the caller)."""

    default_reason = "NOT_FOUND"


class AlreadyExists(StrataError):
    """The resource the caller tried to create exists already."""

    default_reason = "ALREADY_EXISTS"


class FailedPrecondition(StrataError):
    """The request is well formed but the system's state refuses it (a budget, a read-only block)."""

    default_reason = "FAILED_PRECONDITION"


class Aborted(StrataError):
    """A concurrency conflict (a stale etag); the caller may re-read and retry."""

    default_reason = "ABORTED"


class ResourceExhausted(StrataError):
    """A quota or size limit was hit."""

    default_reason = "RESOURCE_EXHAUSTED"


class Unavailable(StrataError):
    """A dependency is down; retrying later may succeed."""

    default_reason = "UNAVAILABLE"


class PermissionDenied(StrataError):
    """The caller is known but may not do this."""

    default_reason = "PERMISSION_DENIED"


class Unauthenticated(StrataError):
    """The caller did not prove who it is."""

    default_reason = "UNAUTHENTICATED"
