"""Request limits and the checks that enforce them (INVALID_ARGUMENT naming the offending field).

docs/security.md lists them in one table with MemoryService's (``strata_memory.limits``);
``tests/security/test_limits_table.py`` checks each row against a running server.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from strata_retrieval.model import Document, DocumentFilter, SearchQuery
from strata_serving.errors import InvalidArgument


@dataclass(frozen=True)
class Limits:
    max_batch_documents: int = 512
    max_text_chars: int = 32_768
    max_id_chars: int = 256
    max_tags: int = 64
    """Tags on one document, and tags in one search filter."""
    max_tag_chars: int = 256
    max_filter_values: int = 1_000
    """Values in each other list of a filter (agent, archive and conversation ids, roles)."""
    max_query_chars: int = 10_000
    """The same as MemoryService's (``strata_memory.limits.MAX_QUERY_CHARS``)."""
    max_top_k: int = 100
    max_candidate_depth: int = 1_000
    max_delete_ids: int = 10_000


def check_batch(documents: Sequence[Document], limits: Limits) -> None:
    """A batch must hold 1 to ``max_batch_documents`` valid documents with distinct (tenant, id)."""
    if not documents:
        raise InvalidArgument.field("documents", "must contain at least one document")
    if len(documents) > limits.max_batch_documents:
        raise InvalidArgument.field(
            "documents", f"holds {len(documents)} documents; at most {limits.max_batch_documents} per batch"
        )
    seen: dict[tuple[str, str], int] = {}
    for i, document in enumerate(documents):
        check_document(document, limits, f"documents[{i}]")
        identity = (document.scope.tenant_id, document.id)
        if identity in seen:
            raise InvalidArgument.field(
                f"documents[{i}].id",
                f"duplicates documents[{seen[identity]}].id ({document.id!r}) in this batch",
            )
        seen[identity] = i


def check_document(document: Document, limits: Limits, where: str) -> None:
    check_id(document.id, limits, f"{where}.id")
    if not document.scope.tenant_id:
        raise InvalidArgument.field(f"{where}.scope.tenant_id", "is required")
    if len(document.text) > limits.max_text_chars:
        raise InvalidArgument.field(
            f"{where}.text", f"has {len(document.text)} characters; at most {limits.max_text_chars}"
        )
    if len(document.context) > limits.max_text_chars:
        raise InvalidArgument.field(
            f"{where}.context", f"has {len(document.context)} characters; at most {limits.max_text_chars}"
        )
    if len(document.tags) > limits.max_tags:
        raise InvalidArgument.field(
            f"{where}.tags", f"has {len(document.tags)} tags; at most {limits.max_tags}"
        )
    _check_values(document.tags, f"{where}.tags", limits.max_tag_chars)
    if len(set(document.tags)) != len(document.tags):
        raise InvalidArgument.field(f"{where}.tags", "must be distinct")


def check_id(document_id: str, limits: Limits, where: str) -> None:
    if not document_id:
        raise InvalidArgument.field(where, "is required")
    if len(document_id) > limits.max_id_chars:
        raise InvalidArgument.field(
            where, f"has {len(document_id)} characters; at most {limits.max_id_chars}"
        )


def check_filter(flt: DocumentFilter, limits: Limits, where: str = "filter") -> None:
    if not flt.tenant_id:
        raise InvalidArgument.field(f"{where}.tenant_id", "is required")
    for name, values, most in (
        ("agent_ids", flt.agent_ids, limits.max_filter_values),
        ("archive_ids", flt.archive_ids, limits.max_filter_values),
        ("conversation_ids", flt.conversation_ids, limits.max_filter_values),
        ("tags", flt.tags, limits.max_tags),
        ("roles", flt.roles, limits.max_filter_values),
    ):
        if len(values) > most:
            raise InvalidArgument.field(f"{where}.{name}", f"has {len(values)} values; at most {most}")
        _check_values(values, f"{where}.{name}", limits.max_tag_chars)
    if flt.created_from and flt.created_to and flt.created_from > flt.created_to:
        raise InvalidArgument.field(f"{where}.created_at", "start is after end")


def check_search(query: SearchQuery, limits: Limits) -> None:
    check_filter(query.filter, limits)
    if len(query.text) > limits.max_query_chars:
        raise InvalidArgument.field(
            "query", f"has {len(query.text)} characters; at most {limits.max_query_chars}"
        )
    if not 1 <= query.top_k <= limits.max_top_k:
        raise InvalidArgument.field("top_k", f"must be between 1 and {limits.max_top_k}, got {query.top_k}")
    if not (math.isfinite(query.rrf_k) and query.rrf_k >= 0):
        raise InvalidArgument.field("rrf_k", f"must be a finite number >= 0, got {query.rrf_k}")
    if query.weights is not None:
        for name, weight in (("vector_weight", query.weights.vector), ("fts_weight", query.weights.fts)):
            if not (math.isfinite(weight) and weight >= 0):
                raise InvalidArgument.field(name, f"must be a finite number >= 0, got {weight}")
    for name, depth in (("vector_depth", query.vector_depth), ("fts_depth", query.fts_depth)):
        if depth is not None and not query.top_k <= depth <= limits.max_candidate_depth:
            raise InvalidArgument.field(
                name, f"must be between top_k ({query.top_k}) and {limits.max_candidate_depth}, got {depth}"
            )


def _check_values(values: Sequence[str], where: str, max_chars: int) -> None:
    for i, value in enumerate(values):
        if not value:
            raise InvalidArgument.field(f"{where}[{i}]", "must not be empty")
        if len(value) > max_chars:
            raise InvalidArgument.field(f"{where}[{i}]", f"has {len(value)} characters; at most {max_chars}")
