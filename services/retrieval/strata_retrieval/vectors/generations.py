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

One rebuild at a time per collection, whichever process runs it: a build claims generation N+1 by
creating it (Qdrant refuses a second collection of that name) and marks it ``building`` with a
heartbeat in its metadata, renewed every ``HEARTBEAT_SECONDS`` while it copies. Another rebuild
meanwhile is refused
(``RebuildInProgress``) rather than dropping a generation still being built, or one that another
rebuild has just made the serving one; a build whose heartbeat is older than ``BUILD_STALE_SECONDS``
died, and the next rebuild drops it.
"""

from __future__ import annotations

import re
import time

import qdrant_edge as qe
from qdrant_client import QdrantClient, models

from strata_retrieval.errors import RebuildInProgress

SEPARATOR = "__g"
BUILDING = "building"
"""Metadata key of a generation being built: ``{"heartbeat": <Unix time it was last renewed>}``. Kept
once the alias moves onto it (only generations not served are judged by it): cleared just before the
swap, it would let another rebuild take the finished build for a dead one and drop it."""
BUILD_STALE_SECONDS = 120.0
"""A build that copied no page for this long is taken as dead (its process gone)."""
HEARTBEAT_SECONDS = 10.0
"""How often a build renews its heartbeat (at most once per page copied)."""

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


def building_mark() -> dict[str, object]:
    """The metadata that marks a generation as being built, as of now."""
    return {BUILDING: {"heartbeat": time.time()}}


def beat(client: QdrantClient, collection: str, last: float) -> float:
    """Renew the heartbeat of ``collection``'s build if ``HEARTBEAT_SECONDS`` passed since ``last``
    (a metadata update is a cluster-wide change on the server: not one per page); returns when it
    was last renewed."""
    now = time.time()
    if now - last < HEARTBEAT_SECONDS:
        return last
    client.update_collection(collection, metadata={BUILDING: {"heartbeat": now}})
    return now


def heartbeat(client: QdrantClient, collection: str) -> float | None:
    """When the build of ``collection`` last made progress; None when it is not being built (or is
    gone)."""
    try:
        metadata = client.get_collection(collection).config.metadata or {}
    except Exception:
        if client.collection_exists(collection):
            raise
        return None
    mark = metadata.get(BUILDING)
    beat = mark.get("heartbeat") if isinstance(mark, dict) else None
    return float(beat) if isinstance(beat, int | float) else None


def drop_dead_builds(client: QdrantClient, alias: str) -> None:
    """Drop the generations neither served nor being built (left by builds that died); refuse while
    another build is making progress. The serving generation is read again for each one: another
    rebuild may have just moved the alias onto the generation it built."""
    for name in generations(client, alias).values():
        if name == current(client, alias):
            continue
        beat = heartbeat(client, name)
        if beat is not None and (age := time.time() - beat) < BUILD_STALE_SECONDS:
            raise RebuildInProgress(
                f"another rebuild of {alias!r} is building {name} (last progress {age:.0f} s ago): let it "
                f"finish; a build without progress for {BUILD_STALE_SECONDS:.0f} s is taken as dead "
                "and dropped by the next rebuild",
                metadata={"collection": alias, "building": name},
            )
        client.delete_collection(name)


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
