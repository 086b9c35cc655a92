"""Typed clients for Strata: ``AsyncMemoryClient`` / ``MemoryClient`` for MemoryService,
``AsyncRetrievalClient`` / ``RetrievalClient`` for RetrievalService and ``AsyncAdminClient`` /
``AdminClient`` for AdminService (API keys).

The blocking clients are generated from the asyncio ones (``make client``), so each pair offers
the same methods. Failed calls raise ``StrataClientError`` subclasses chosen by status code.
"""

from strata.client.arguments import DEFAULT_RETRIEVAL_TARGET, DEFAULT_TARGET, DEFAULT_TIMEOUT, TENANT_KEY
from strata.client.async_admin import AsyncAdminClient
from strata.client.async_client import AsyncMemoryClient
from strata.client.async_retrieval import AsyncRetrievalClient
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
from strata.client.sync_admin import AdminClient
from strata.client.sync_client import MemoryClient
from strata.client.sync_retrieval import RetrievalClient

__all__ = [
    "DEFAULT_RETRIEVAL_TARGET",
    "DEFAULT_TARGET",
    "DEFAULT_TIMEOUT",
    "TENANT_KEY",
    "AbortedError",
    "AdminClient",
    "AlreadyExistsError",
    "AsyncAdminClient",
    "AsyncMemoryClient",
    "AsyncRetrievalClient",
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
    "RetrievalClient",
    "StrataClientError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "UnknownError",
]
