"""Turning the client's keyword arguments into request fields; shared by the async and sync clients."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import field_mask_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb

DEFAULT_TARGET = "127.0.0.1:50051"
"""Where ``make run`` serves MemoryService."""

TARGET_ENV = "STRATA_MEMORY_TARGET"
"""The environment variable the CLI (``strata``, ``strata memfs``) reads MemoryService's address from."""

DEFAULT_RETRIEVAL_TARGET = "127.0.0.1:50052"
"""Where ``make run`` serves RetrievalService."""

DEFAULT_TIMEOUT = 30.0
"""Seconds each call may take before it fails with DEADLINE_EXCEEDED."""

TENANT_KEY = "x-strata-tenant"
"""The metadata key naming the tenant; the server uses "default" when it is absent."""


API_KEY_ENV = "STRATA_API_KEY"
"""The environment variable the clients read an API key from when none is passed."""


def call_metadata(tenant: str | None, api_key: str | None = None) -> tuple[tuple[str, str], ...]:
    """The metadata sent with every call: the tenant, if one was chosen, and the API key, if any."""
    tenant_part = ((TENANT_KEY, tenant),) if tenant else ()
    key_part = (("authorization", f"Bearer {api_key}"),) if api_key else ()
    return tenant_part + key_part


def tls_credentials(
    root_cert: str | Path | None = None,
    client_cert: str | Path | None = None,
    client_key: str | Path | None = None,
) -> grpc.ChannelCredentials:
    """TLS channel credentials from PEM files: the CA that signed the server's certificate (the
    system trust store if ``None``) and, for mTLS, this client's certificate and key."""
    if (client_cert is None) != (client_key is None):
        raise ValueError("a client certificate needs its key (and the other way round)")
    return grpc.ssl_channel_credentials(
        root_certificates=Path(root_cert).read_bytes() if root_cert else None,
        private_key=Path(client_key).read_bytes() if client_key else None,
        certificate_chain=Path(client_cert).read_bytes() if client_cert else None,
    )


def block_ref(block_id: str = "", agent_id: str = "", label: str = "") -> pb.BlockRef:
    """Name a block by id, or by its label in an agent's memory (the server checks which is given)."""
    return pb.BlockRef(block_id=block_id, agent_id=agent_id, label=label)


def field_mask(paths: Iterable[str]) -> field_mask_pb2.FieldMask:
    """An ``update_mask`` from field paths such as ``["value", "limit"]``."""
    return field_mask_pb2.FieldMask(paths=list(paths))


def tool_arguments(arguments: Mapping[str, Any] | str) -> str:
    """Tool arguments as the LLM would send them: a JSON string passes through, a mapping is encoded."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(dict(arguments), ensure_ascii=False)


def request_id_or_new(request_id: str) -> str:
    """The caller's request_id, or a new UUID: the id every retry of one write call carries, so the
    server applies the write once however often gRPC or the mesh sends it (AIP-155)."""
    return request_id or str(uuid.uuid4())


def moment(at: datetime | None) -> Timestamp | None:
    """A past moment as a Timestamp (None: not given). A naive datetime is taken as UTC."""
    if at is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(at if at.tzinfo else at.replace(tzinfo=UTC))
    return stamp


PURGE_KINDS = ("agent", "block", "passage", "message", "conversation")
"""What a purge may target (``purge(kind=…)``, ``strata purge KIND``)."""


def purge_request(kind: str, target_id: str, agent_id: str = "") -> api.PurgeRequest:
    """The PurgeRequest naming one target (a conversation with its ``agent_id``); ValueError for an
    unknown kind or a conversation without its agent."""
    if kind == "conversation":
        if not agent_id:
            raise ValueError("a conversation is purged with its agent_id")
        return api.PurgeRequest(
            conversation=api.ConversationRef(agent_id=agent_id, conversation_id=target_id)
        )
    request = api.PurgeRequest()
    if kind not in PURGE_KINDS:
        raise ValueError(f"kind must be one of {', '.join(PURGE_KINDS)}, not {kind!r}")
    setattr(request, f"{kind}_id", target_id)
    return request
