"""The embedded engine's full-text leg: one Tantivy index per tenant, so BM25 is tenant-scoped.

BM25 weighs a word by its document frequency and a document by its length against the mean, and
Tantivy takes both from the whole index. In one shared index another tenant's documents moved a
tenant's scores and order (a quality defect, and a side channel: a tenant could probe the words of
others' text through its own scores). Here each tenant's documents live in an index of their own,
``<root>/<sha256(tenant)[:32]>``, so its scores depend only on its own documents, whatever other
tenants hold. Within a tenant the statistics are the tenant's: an agent's search counts its
tenant's other agents' documents (archives are shared between a tenant's agents).

What an index costs while open, and the bounds on it:

- open (searched or written recently): one thread (Tantivy's watcher of the index's meta file),
  its segments memory-mapped, no descriptor. At most ``max_open`` are open; opening another drops
  the least recently used one that has no writer (reopening costs under a millisecond).
- writing: a writer holds a lock file (one descriptor), its indexing and merge threads and its
  heap. At most ``max_writers`` are open; writing to another tenant first closes the writer of
  the tenant written to least recently.

Writes go one at a time under one lock (a batch is split by tenant, one commit each), in the order
the engine sends them. A search reads its tenant's index only; a tenant never written has no index
and its searches find nothing.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from pathlib import Path

from strata_retrieval.model import DEFAULT_OWN_TEXT_WEIGHT, Document, DocumentFilter, ScoredKey
from strata_retrieval.text_index import TantivyTextIndex

TEXT_FOLDER = "text_fields"  # under the data folder
LEGACY_TEXT_FOLDERS = (
    "text",  # one Tantivy index for every tenant, before tenant-scoped BM25
    "text_by_tenant",  # per tenant, before the own text had a field of its own
)
"""Older layouts of the full-text indexes; a start that finds one builds TEXT_FOLDER anew from the
vector index's documents (``strata_retrieval.main``): Tantivy opens no index whose schema changed."""
DEFAULT_MAX_OPEN = 256
DEFAULT_MAX_WRITERS = 16
WRITER_HEAP_BYTES = 15_000_000  # Tantivy's minimum per indexing thread; batches are small


def tenant_folder(tenant_id: str) -> str:
    """The folder name of a tenant's index: any tenant id (slashes, dots, emoji) is a safe name."""
    return hashlib.sha256(tenant_id.encode()).hexdigest()[:32]


class TenantTextIndexes:
    """A :class:`~strata_retrieval.legs.TextIndex` routing each tenant to its own Tantivy index."""

    def __init__(
        self,
        root: Path,
        *,
        max_open: int = DEFAULT_MAX_OPEN,
        max_writers: int = DEFAULT_MAX_WRITERS,
        own_text_weight: float = DEFAULT_OWN_TEXT_WEIGHT,
    ) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self._root = root
        self._own_text_weight = own_text_weight
        self._max_writers = max(1, max_writers)
        self._max_open = max(self._max_writers + 1, max_open)
        self._open: OrderedDict[str, TantivyTextIndex] = OrderedDict()  # least recently used first
        self._writers: OrderedDict[str, None] = OrderedDict()  # tenants whose writer is open, LRU first
        self._open_lock = threading.Lock()  # guards both dicts; never held while waiting on a write
        self._write_lock = threading.Lock()  # writes one at a time, in the engine's order

    def upsert(self, documents: Sequence[Document]) -> None:
        """Each tenant's documents into its own index, one commit per tenant."""
        by_tenant: dict[str, list[Document]] = defaultdict(list)
        for document in documents:
            by_tenant[document.scope.tenant_id].append(document)
        with self._write_lock:
            for tenant, batch in by_tenant.items():
                self._for_writing(tenant).upsert(batch)

    def delete(self, tenant_id: str, keys: Sequence[str]) -> None:
        """Remove ``keys`` from ``tenant_id``'s index (absent keys are ignored)."""
        if not keys or not self._exists(tenant_id):
            return
        with self._write_lock:
            self._for_writing(tenant_id).delete(tenant_id, keys)

    def search(self, text: str, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        """BM25 over ``flt.tenant_id``'s own index (its statistics are that tenant's only)."""
        index = self._existing(flt.tenant_id)
        return [] if index is None else index.search(text, flt, limit)

    def held(self, tenant_id: str, keys: Sequence[str]) -> set[str]:
        """Those of ``keys`` ``tenant_id``'s index holds (a purge's read-back)."""
        index = self._existing(tenant_id) if keys else None
        return set() if index is None else index.held(tenant_id, keys)

    def tenant_count(self, tenant_id: str) -> int:
        """Documents in ``tenant_id``'s index (0 when it has none)."""
        index = self._existing(tenant_id)
        return 0 if index is None else index.document_count()

    def document_count(self) -> int:
        """Documents in every tenant's index, each opened in turn (a diagnostic, not for serving)."""
        total = 0
        for folder in sorted(path for path in self._root.iterdir() if path.is_dir()):
            with self._open_lock:
                index = next((ix for ix in self._open.values() if ix.path == folder), None)
            total += (index or TantivyTextIndex(folder)).document_count()
        return total

    def open_counts(self) -> tuple[int, int]:
        """How many tenants' indexes are open, and how many of those hold a writer (for metrics)."""
        with self._open_lock:
            return len(self._open), len(self._writers)

    def close(self) -> None:
        with self._write_lock, self._open_lock:
            for index in self._open.values():
                index.close()
            self._open.clear()
            self._writers.clear()

    def _exists(self, tenant_id: str) -> bool:
        return tenant_id in self._open or (self._root / tenant_folder(tenant_id)).exists()

    def _existing(self, tenant_id: str) -> TantivyTextIndex | None:
        """The tenant's index if it has one (never creating a folder for a tenant only searched)."""
        if not self._exists(tenant_id):
            return None
        with self._open_lock:
            return self._opened(tenant_id)

    def _opened(self, tenant_id: str) -> TantivyTextIndex:
        """The tenant's index, opened if it is not (the caller holds the open lock), now the most
        recently used; past ``max_open``, the least recently used without a writer is dropped (a
        search still reading it finishes first: it holds the object)."""
        index = self._open.get(tenant_id)
        if index is None:
            index = TantivyTextIndex(
                self._root / tenant_folder(tenant_id),
                writer_heap_bytes=WRITER_HEAP_BYTES,
                own_text_weight=self._own_text_weight,
            )
            self._open[tenant_id] = index
        self._open.move_to_end(tenant_id)
        if len(self._open) > self._max_open:
            idle = next((tenant for tenant in self._open if tenant not in self._writers), None)
            if idle is not None and idle != tenant_id:
                del self._open[idle]
        return index

    def _for_writing(self, tenant_id: str) -> TantivyTextIndex:
        """The tenant's index, counted among the writers; past ``max_writers`` the least recently
        written tenant's writer is closed first (the caller holds the write lock, so no write is
        using it). A tenant is listed as writing before its index can open a writer, and unlisted
        only once its writer is closed, so an index holding a writer is never dropped."""
        with self._open_lock:
            index = self._opened(tenant_id)
            self._writers[tenant_id] = None
            self._writers.move_to_end(tenant_id)
            retiring = list(self._writers)[: max(0, len(self._writers) - self._max_writers)]
        for tenant in retiring:
            with self._open_lock:
                oldest = self._open.get(tenant)
            if oldest is not None:
                oldest.release_writer()
            with self._open_lock:
                del self._writers[tenant]
        return index
