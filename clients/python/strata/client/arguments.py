"""Turning the client's keyword arguments into request fields; shared by the async and sync clients."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf import field_mask_pb2

from strata.memory.v1 import resources_pb2 as pb

DEFAULT_TARGET = "127.0.0.1:50051"
"""Where ``make run`` serves MemoryService."""

DEFAULT_RETRIEVAL_TARGET = "127.0.0.1:50052"
"""Where ``make run`` serves RetrievalService."""

DEFAULT_TIMEOUT = 30.0
"""Seconds each call may take before it fails with DEADLINE_EXCEEDED."""

TENANT_KEY = "x-strata-tenant"
"""The metadata key naming the tenant; the server uses "default" when it is absent."""


def call_metadata(tenant: str | None) -> tuple[tuple[str, str], ...]:
    """The metadata sent with every call: the tenant, if one was chosen."""
    return ((TENANT_KEY, tenant),) if tenant else ()


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
