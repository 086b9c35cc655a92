"""Typed clients for Strata's MemoryService: ``AsyncMemoryClient`` (asyncio) and ``MemoryClient``.

``MemoryClient`` is generated from ``AsyncMemoryClient`` (``make client``), so both offer the same
methods. Failed calls raise ``StrataClientError`` subclasses chosen by status code.
"""

from strata.client.arguments import DEFAULT_TARGET, DEFAULT_TIMEOUT, TENANT_KEY
from strata.client.async_client import AsyncMemoryClient
from strata.client.errors import (
    AbortedError,
    AlreadyExistsError,
    CancelledError,
    DeadlineExceededError,
    FailedPreconditionError,
    FieldViolation,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    StrataClientError,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
    UnknownError,
)
from strata.client.sync_client import MemoryClient

__all__ = [
    "DEFAULT_TARGET",
    "DEFAULT_TIMEOUT",
    "TENANT_KEY",
    "AbortedError",
    "AlreadyExistsError",
    "AsyncMemoryClient",
    "CancelledError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "FieldViolation",
    "InternalError",
    "InvalidArgumentError",
    "MemoryClient",
    "NotFoundError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "StrataClientError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "UnknownError",
]
