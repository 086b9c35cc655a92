"""Generations of the server engine's collection behind one Qdrant alias.

The name the service is configured with (``strata_documents``) is an alias; the points live in a
physical collection ``<name>__g<N>``, one generation. A whole-index rebuild (a new embedding model,
new BM25 parameters, a re-measured mean document length) builds generation N+1 beside N while every
search keeps reading through the alias, then moves the alias in one ``update_collection_aliases``
call (delete + create: atomic on the server, so no query sees a missing or half-built collection)
and drops generation N. A build that fails drops N+1 and leaves the alias where it was.

A collection created before generations existed holds the alias's own name (generation 0). Qdrant
refuses an alias named like an existing collection, so its first rebuild deletes it before creating
the alias: the one moment, once, in which the name resolves to nothing.
"""

from __future__ import annotations

import re

import qdrant_edge as qe
from qdrant_client import QdrantClient, models

SEPARATOR = "__g"

_COUNTER = qe.Bm25(qe.Bm25Config(k=1e9, b=0.0, avg_len=1.0, language="english"))
"""BM25 with no length normalisation and a saturation constant so large that each term's weight is
its count: the sum of a document's weights is its length as Qdrant's BM25 counts it (tokens after
stop words)."""


def document_length(text: str) -> int:
    """Tokens of ``text`` that BM25 keeps (its ``doc_len``)."""
    return round(sum(_COUNTER.embed_document(text).values))


def generation_name(alias: str, number: int) -> str:
    return f"{alias}{SEPARATOR}{number}"


def current(client: QdrantClient, alias: str) -> str | None:
    """The physical collection serving ``alias``: the one it points at, a collection by that very
    name (made before generations existed), or None when there is neither."""
    for description in client.get_aliases().aliases:
        if description.alias_name == alias:
            return description.collection_name
    return alias if alias in _collections(client) else None


def generations(client: QdrantClient, alias: str) -> dict[int, str]:
    """Every physical generation of ``alias`` by number, the serving one included."""
    pattern = re.compile(re.escape(alias + SEPARATOR) + r"(\d+)")
    found = {}
    for name in _collections(client):
        if matched := pattern.fullmatch(name):
            found[int(matched.group(1))] = name
    return found


def point_alias(client: QdrantClient, alias: str, collection: str) -> None:
    """Point a new ``alias`` at ``collection``."""
    create = models.CreateAlias(collection_name=collection, alias_name=alias)
    client.update_collection_aliases([models.CreateAliasOperation(create_alias=create)])


def swap(client: QdrantClient, alias: str, old: str, new: str) -> None:
    """Move ``alias`` from ``old`` to ``new`` in one request (both operations or neither)."""
    if old == alias:  # made before generations: the name must be free before it can be an alias
        client.delete_collection(old)
        point_alias(client, alias, new)
        return
    client.update_collection_aliases(
        [
            models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)),
            models.CreateAliasOperation(
                create_alias=models.CreateAlias(collection_name=new, alias_name=alias)
            ),
        ]
    )


def _collections(client: QdrantClient) -> set[str]:
    return {description.name for description in client.get_collections().collections}
