"""Failed calls as typed exceptions, decoded from the ``google.rpc.Status`` the servers attach.

Strata's services put a ``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer of every
failure, with an ``ErrorInfo`` (a machine-readable ``reason`` such as ``CHAR_LIMIT_EXCEEDED`` and
string ``metadata``) and, when a request field is at fault, a ``BadRequest`` naming the fields.
A failure without details (a refused connection, a deadline) still maps to the class for its code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

STATUS_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One bad request field (``BadRequest.FieldViolation``), e.g. ``block.limit``."""

    field: str
    description: str


class StrataClientError(Exception):
    """A call to a Strata service failed.

    ``code`` is the gRPC status code; ``message`` the server's text; ``reason``, ``domain`` and
    ``metadata`` come from the ``ErrorInfo`` detail (empty when the server attached none);
    ``field_violations`` from the ``BadRequest`` detail.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        *,
        reason: str = "",
        domain: str = "",
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
    ) -> None:
        super().__init__(f"{code.name}: {message}" + (f" [{reason}]" if reason else ""))
        self.code = code
        self.message = message
        self.reason = reason
        self.domain = domain
        self.metadata: dict[str, str] = dict(metadata or {})
        self.field_violations: tuple[FieldViolation, ...] = tuple(field_violations)


class CancelledError(StrataClientError):
    """CANCELLED: the call was cancelled, usually by the caller."""


class UnknownError(StrataClientError):
    """UNKNOWN: the server gave no usable status."""


class InvalidArgumentError(StrataClientError):
    """INVALID_ARGUMENT: the request is malformed; ``field_violations`` names the fields."""


class DeadlineExceededError(StrataClientError):
    """DEADLINE_EXCEEDED: no answer within the client's timeout."""


class NotFoundError(StrataClientError):
    """NOT_FOUND: an agent, block, file or conversation does not exist (in this tenant)."""


class AlreadyExistsError(StrataClientError):
    """ALREADY_EXISTS: e.g. a label already taken in the agent's memory."""


class PermissionDeniedError(StrataClientError):
    """PERMISSION_DENIED: the caller may not do this."""


class ResourceExhaustedError(StrataClientError):
    """RESOURCE_EXHAUSTED: a quota or size limit was hit."""


class FailedPreconditionError(StrataClientError):
    """FAILED_PRECONDITION: the state forbids it, e.g. ``CHAR_LIMIT_EXCEEDED`` or a read-only block."""


class AbortedError(StrataClientError):
    """ABORTED: a conditional write lost, e.g. a stale etag (``ETAG_MISMATCH``); re-read and retry."""


class UnimplementedError(StrataClientError):
    """UNIMPLEMENTED: the server does not offer this method."""


class InternalError(StrataClientError):
    """INTERNAL: the server failed; its logs have the details."""


class UnavailableError(StrataClientError):
    """UNAVAILABLE: the server cannot be reached or is not serving yet; safe to retry."""


class UnauthenticatedError(StrataClientError):
    """UNAUTHENTICATED: missing or invalid credentials."""


ERROR_CLASSES: dict[grpc.StatusCode, type[StrataClientError]] = {
    grpc.StatusCode.CANCELLED: CancelledError,
    grpc.StatusCode.UNKNOWN: UnknownError,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.ABORTED: AbortedError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
    grpc.StatusCode.INTERNAL: InternalError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
}


def error_from_rpc(error: grpc.RpcError) -> StrataClientError:
    """The typed error for a failed call (sync ``grpc.RpcError`` or ``grpc.aio.AioRpcError``)."""
    code = _called(error, "code")
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    message = _called(error, "details")
    status = status_from(_called(error, "trailing_metadata"))
    info = error_details_pb2.ErrorInfo()
    bad_request = error_details_pb2.BadRequest()
    for detail in status.details if status else ():
        if detail.Is(info.DESCRIPTOR):
            detail.Unpack(info)
        elif detail.Is(bad_request.DESCRIPTOR):
            detail.Unpack(bad_request)
    return ERROR_CLASSES.get(code, StrataClientError)(
        code,
        message if isinstance(message, str) else (status.message if status else ""),
        reason=info.reason,
        domain=info.domain,
        metadata=dict(info.metadata),
        field_violations=[FieldViolation(v.field, v.description) for v in bad_request.field_violations],
    )


def status_from(trailing_metadata: Any) -> status_pb2.Status | None:
    """The ``google.rpc.Status`` in a failed call's trailing metadata, if the server sent one."""
    for key, value in trailing_metadata or ():
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            return status_pb2.Status.FromString(value)
    return None


def _called(error: grpc.RpcError, name: str) -> Any:
    """``error.<name>()``: failed calls expose these accessors, the ``RpcError`` base does not."""
    accessor = getattr(error, name, None)
    return accessor() if callable(accessor) else None
