"""One table from Strata's error categories to gRPC status codes with rich details (AIP-193)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from strata_serving import errors

_Detail = TypeVar("_Detail", error_details_pb2.ErrorInfo, error_details_pb2.BadRequest)

ERROR_DOMAIN = "strata.dev"
STATUS_DETAILS_KEY = "grpc-status-details-bin"

STATUS_CODES: dict[type[errors.StrataError], grpc.StatusCode] = {
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.Aborted: grpc.StatusCode.ABORTED,
    errors.ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    errors.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
}


def status_code_for(error: errors.StrataError) -> grpc.StatusCode:
    """The status code of the nearest category in the error's class hierarchy (INTERNAL if none)."""
    for cls in type(error).__mro__:
        code = STATUS_CODES.get(cls)
        if code is not None:
            return code
    return grpc.StatusCode.INTERNAL


def rich_status(error: errors.StrataError) -> status_pb2.Status:
    """``google.rpc.Status`` with an ``ErrorInfo`` and, when fields are named, a ``BadRequest``."""
    code = status_code_for(error)
    info = error_details_pb2.ErrorInfo(reason=error.reason, domain=ERROR_DOMAIN, metadata=error.metadata)
    details = [_pack(info)]
    if error.field_violations:
        violations = [
            error_details_pb2.BadRequest.FieldViolation(field=field, description=description)
            for field, description in error.field_violations
        ]
        details.append(_pack(error_details_pb2.BadRequest(field_violations=violations)))
    return status_pb2.Status(code=code.value[0], message=error.message, details=details)


def _pack(message: _Detail) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def status_from(metadata: Iterable[Any] | None) -> status_pb2.Status | None:
    """Client side: the ``google.rpc.Status`` carried in a failed call's trailing metadata, if any."""
    for key, value in metadata or ():
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            return status_pb2.Status.FromString(value)
    return None


def error_info_from(metadata: Iterable[Any] | None) -> error_details_pb2.ErrorInfo | None:
    """Client side: the ``ErrorInfo`` of a failed call, if the server attached one."""
    return _detail(status_from(metadata), error_details_pb2.ErrorInfo())


def bad_request_from(metadata: Iterable[Any] | None) -> error_details_pb2.BadRequest | None:
    """Client side: the ``BadRequest`` (field violations) of a failed call, if any."""
    return _detail(status_from(metadata), error_details_pb2.BadRequest())


def _detail(status: status_pb2.Status | None, into: _Detail) -> _Detail | None:
    for detail in status.details if status else ():
        if detail.Is(into.DESCRIPTOR):
            detail.Unpack(into)
            return into
    return None
