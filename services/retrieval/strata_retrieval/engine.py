"""The retrieval engine: upsert, delete, search and stats over an embedder and two indexes.

Blocking and synchronous on purpose: the servicer runs it in a bounded executor (a hybrid search's
text leg runs on a small pool of the engine's own, beside the vector leg). Writes take their place
in one order under a lock, so both indexes see the same sequence of changes; each index applies
them on a thread of its own by group commit (:mod:`strata_retrieval.group_commit`): the writes
waiting while it commits go in its next commit together (one Tantivy commit per tenant, one
journal fsync), and each call returns only once both indexes have committed its write, so it is
durable and searchable when the call returns. Upserts waiting to be embedded are embedded together
(one encoder run), on a thread of their own, while the text index takes their batches; the next
group embeds while this one's vectors are written.

Search modes:

* ``VECTOR`` ranks by cosine similarity of the embedded query (top_k candidates);
* ``FTS`` ranks by BM25 over the stemmed text (top_k candidates);
* ``HYBRID`` over-fetches each leg (``vector_depth`` / ``fts_depth``, default max(4 * top_k, 100))
  and fuses them as the engine is configured (:func:`strata_retrieval.fusion.fuse`): by default the
  blend of the legs' scores and ranks, or RRF, or DBSF. A hit's ``score`` is the fused score it is
  ordered by; its ``rrf_score`` is its RRF score with the request's ``k`` and weights under every
  fusion. Single-leg modes keep their leg's order (both scores its RRF score) either way. Fusion is
  this engine's, the same for both vector backends. When the vector index also holds the text leg
  (:class:`~strata_retrieval.legs.JointSearch`, the Qdrant server engine) both legs go in one
  request; otherwise the text leg runs on a thread beside the vector leg.

Every leg applies the filter inside its query, so a search returns ``top_k`` hits whenever that
many documents match. A query with no text (blank) lists the newest matching documents instead.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from strata_retrieval.disk import DiskGuard, as_disk_full, is_disk_full
from strata_retrieval.embedding.protocol import Embedder, Vectors
from strata_retrieval.fusion import Fused, FusionSetting, Ranking, fuse
from strata_retrieval.group_commit import CommitCounts, GroupCommit
from strata_retrieval.legs import JointSearch, Rebuildable, TextIndex
from strata_retrieval.limits import Limits, check_batch, check_filter, check_id, check_search
from strata_retrieval.model import (
    Document,
    DocumentFilter,
    DocumentKind,
    Fusion,
    Hit,
    LegWeights,
    ScopeStats,
    ScoredKey,
    SearchMode,
    SearchQuery,
    SearchResult,
    default_depth,
    document_key,
)
from strata_retrieval.text_index import query_words
from strata_retrieval.vectors.protocol import VectorIndex
from strata_serving import tracing
from strata_serving.errors import FailedPrecondition, InvalidArgument

log = logging.getLogger("strata.retrieval.engine")

VECTOR, FTS = "vector", "fts"
EMBED_GROUP = 64  # upsert calls embedded in one encoder run at most
MAX_STATS_TAGS = 10_000


@dataclass(frozen=True)
class EngineConfig:
    default_weights: LegWeights = field(default_factory=lambda: LegWeights(vector=1.0, fts=1.0))
    limits: Limits = field(default_factory=Limits)
    hnsw_build_threshold: int = 10_000  # unindexed vectors that make maintain() build HNSW
    search_threads: int = 4  # hybrid text legs run at once (as many as searches the service runs)
    fusion: FusionSetting = field(default_factory=FusionSetting)  # how hybrid searches fuse the legs
    commit_linger_seconds: float = 0.0  # how long a group commit waits for more writes (0: none)


@dataclass(frozen=True, slots=True)
class _Upsert:
    """Documents for one index; the vector index's also carry their vectors and the text index's
    commit of the same batch, which must succeed first."""

    documents: Sequence[Document]
    vectors: Vectors | None = None
    text_committed: Future[None] | None = None


@dataclass(frozen=True, slots=True)
class _Delete:
    tenant_id: str
    keys: Sequence[str]


_Write = _Upsert | _Delete


@dataclass(slots=True)
class _Embedding:
    """A write on its way to the vector index (an upsert to embed first, or a delete passed on in
    order), and the vector index's commit of it once handed over."""

    write: _Write
    vector_committed: Future[None] | None = None


class RetrievalEngine:
    def __init__(
        self,
        embedder: Embedder,
        vectors: VectorIndex,
        text: TextIndex,
        config: EngineConfig,
        *,
        disk: DiskGuard | None = None,
    ) -> None:
        """``disk`` guards the folder the indexes write to (None when they keep nothing locally)."""
        self.embedder = embedder
        self._disk = disk
        self._vectors = vectors
        self._text = text
        self._config = config
        self._write_lock = threading.Lock()  # the order writes take in both indexes
        linger = config.commit_linger_seconds
        self._embeddings: GroupCommit[_Embedding] = GroupCommit(
            self._embed, name="embed-batches", linger_seconds=linger, max_group=EMBED_GROUP
        )
        self._text_commits: GroupCommit[_Write] = GroupCommit(
            self._apply_text, name="text-commit", linger_seconds=linger
        )
        self._vector_commits: GroupCommit[_Write] = GroupCommit(
            self._apply_vectors, name="vector-commit", linger_seconds=linger
        )
        self._tenants_lock = threading.Lock()
        self._tenants_written: set[str] = set()  # for metrics: tenants this process has indexed for
        self._text_legs = ThreadPoolExecutor(config.search_threads, thread_name_prefix="text-leg")

    @property
    def limits(self) -> Limits:
        return self._config.limits

    @property
    def text_leg(self) -> TextIndex:
        return self._text

    @property
    def default_weights(self) -> LegWeights:
        return self._config.default_weights

    def upsert(self, documents: Sequence[Document]) -> int:
        """Embed and index a batch (replacing documents by (tenant, id)); returns how many, once both
        indexes have committed it.

        The text index takes the batch (and commits it, with whatever other writes wait) on its
        thread while the batch is embedded, since it needs no vectors: its commit, which waits on the
        disk, then costs the import no time of its own. The batch is embedded together with the
        batches of other calls waiting to be embedded (one encoder run for all), and the vector
        index, which searches read documents from, takes it only once the text index has committed
        it."""
        check_batch(documents, self.limits)
        texts = [document.embedded_text for document in documents]
        self._check_disk(texts)
        with self._write_lock:  # both indexes take writes in the order they are submitted here
            self._check_disk(texts)
            text = self._text_commits.submit(_Upsert(documents))
            embedding = _Embedding(_Upsert(documents, text_committed=text))
            embedded = self._embeddings.submit(embedding)
        error = embedded.exception()
        if error is not None:
            text.exception()  # waits: the batch is never left half-written
            raise error
        assert embedding.vector_committed is not None
        _settled(text, embedding.vector_committed)
        with self._tenants_lock:
            self._tenants_written.update(document.scope.tenant_id for document in documents)
        return len(documents)

    def commit_counts(self) -> dict[str, CommitCounts]:
        """Groups committed by each index (and embedded together) and the writes in them."""
        return {
            "embedding": self._embeddings.counts(),
            "text": self._text_commits.counts(),
            "vector": self._vector_commits.counts(),
        }

    def _embed(self, items: Sequence[_Embedding]) -> dict[int, BaseException]:
        """Embed the upserts of a group in one encoder run, then hand every write of the group, in
        order, to the vector index. If the encoder fails on the group, each upsert is embedded alone,
        so only those it fails on fail (one caller's text never fails another's write); deletes go on."""
        upserts = {i: item.write for i, item in enumerate(items) if isinstance(item.write, _Upsert)}
        vectors: dict[int, Vectors] = {}
        failed: dict[int, BaseException] = {}
        try:
            vectors = self._embed_together(list(upserts.items()))
        except Exception as error:  # noqa: BLE001  (retried alone below, or its caller hears it)
            if len(upserts) == 1:
                failed = dict.fromkeys(upserts, error)
            else:
                for position, upsert in upserts.items():
                    try:
                        vectors |= self._embed_together([(position, upsert)])
                    except Exception as alone:  # noqa: BLE001  (this upsert's caller hears it)
                        failed[position] = alone
        for position, item in enumerate(items):
            write = item.write
            if isinstance(write, _Upsert):
                if position not in vectors:
                    continue
                write = _Upsert(write.documents, vectors[position], write.text_committed)
            item.vector_committed = self._vector_commits.submit(write)
        return failed

    def _embed_together(self, upserts: Sequence[tuple[int, _Upsert]]) -> dict[int, Vectors]:
        """One encoder run over these upserts' documents; each upsert's rows by its position."""
        texts = [document.embedded_text for _, upsert in upserts for document in upsert.documents]
        vectors = self.embedder.embed_documents(texts)
        rows: dict[int, Vectors] = {}
        start = 0
        for position, upsert in upserts:
            rows[position] = vectors[start : start + len(upsert.documents)]
            start += len(upsert.documents)
        return rows

    def _apply_text(self, writes: Sequence[_Write]) -> dict[int, BaseException]:
        """A group of the text index, each run of upserts as one commit per tenant. A failed commit
        fails the writes it held (returned by position), not another tenant's."""
        failed: dict[int, BaseException] = {}
        for positions, run in _runs(writes):
            if isinstance(run, _Delete):
                try:
                    self._write("the text index", self._text.delete, run.tenant_id, run.keys)
                except Exception as error:  # noqa: BLE001  (the caller of this write hears it)
                    failed[positions[0]] = error
                continue
            upsert_at = dict(zip(positions, run, strict=True))
            for tenant, members in _by_tenant(positions, run).items():
                documents = _latest([upsert_at[p] for p in members], tenant)
                try:
                    self._write("the text index", self._text.upsert, documents)
                except Exception as error:  # noqa: BLE001  (the callers of this commit hear it)
                    failed.update(dict.fromkeys(members, error))
        return failed

    def _apply_vectors(self, writes: Sequence[_Write]) -> None:
        """A group of the vector index, each run of upserts as one write (one journal fsync). An
        upsert whose text commit failed is left out (its caller hears that failure); a failure here
        fails the whole group, which shares the journal's append."""
        for _, run in _runs(writes):
            if isinstance(run, _Delete):
                self._write("the vector index", self._vectors.delete, run.keys)
                continue
            kept = [write for write in run if _text_committed(write)]
            if kept:
                documents = _latest(kept)
                rows = {doc.key: row for write in kept for doc, row in _rows(write)}
                vectors = np.stack([rows[document.key] for document in documents])
                self._write("the vector index", self._vectors.upsert, documents, vectors)

    def _drain(self) -> None:
        """Wait until every write submitted so far is applied (the caller holds the write lock)."""
        self._embeddings.flush()
        self._text_commits.flush()
        self._vector_commits.flush()

    def _check_disk(self, texts: Sequence[str]) -> None:
        if self._disk is not None:
            self._disk.check_write(sum(len(text.encode()) for text in texts), len(texts))

    def _write(self, where: str, write: Callable[..., None], *args: Any) -> None:
        """One index's write, a full disk reported as :class:`IndexDiskFull`. If the vector index
        fails after the text index took the batch, the retried upsert (idempotent) completes it."""
        try:
            write(*args)
        except Exception as error:
            if is_disk_full(error):
                raise as_disk_full(error, where) from error
            raise

    def delete_ids(self, tenant_id: str, ids: Sequence[str]) -> int:
        """Delete documents by id within a tenant; returns how many existed."""
        check_filter(DocumentFilter(tenant_id=tenant_id), self.limits, "ids")
        if not ids:
            return 0
        if len(ids) > self.limits.max_delete_ids:
            raise InvalidArgument.field(
                "ids.ids", f"holds {len(ids)} ids; at most {self.limits.max_delete_ids}"
            )
        for i, document_id in enumerate(ids):
            check_id(document_id, self.limits, f"ids.ids[{i}]")
        keys = sorted({document_key(tenant_id, document_id) for document_id in ids})
        return self._delete_keys(tenant_id, keys)

    def delete_matching(self, flt: DocumentFilter) -> int:
        """Delete every document matching ``flt``; returns how many. Listed under the write lock, so
        a document another call deletes meanwhile is counted by that call only."""
        check_filter(flt, self.limits)
        with self._write_lock:
            self._check_disk(())
            self._drain()
            keys = self._vectors.keys_matching(flt)
            self._remove(flt.tenant_id, keys)
        return len(keys)

    def find_ids(self, tenant_id: str, ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Which of ``ids`` (a tenant's) the vector leg and the text leg each hold, sorted; read by
        key from each leg under the write lock, so no write is half-applied meanwhile."""
        check_filter(DocumentFilter(tenant_id=tenant_id), self.limits, "ids")
        if len(ids) > self.limits.max_delete_ids:
            raise InvalidArgument.field(
                "ids.ids", f"holds {len(ids)} ids; at most {self.limits.max_delete_ids}"
            )
        for i, document_id in enumerate(ids):
            check_id(document_id, self.limits, f"ids.ids[{i}]")
        id_of = {document_key(tenant_id, document_id): document_id for document_id in ids}
        keys = sorted(id_of)
        with self._write_lock:
            self._drain()
            vector_keys = set(self._vectors.fetch(keys)) if keys else set()
            text_keys = self._text.held(tenant_id, keys) if keys else set()
        return sorted(id_of[k] for k in vector_keys), sorted(id_of[k] for k in text_keys)

    def _delete_keys(self, tenant_id: str, keys: Sequence[str]) -> int:
        with self._write_lock:
            self._check_disk(())
            self._drain()
            existing = len(self._vectors.fetch(keys))
            self._remove(tenant_id, keys)
        return existing

    def _remove(self, tenant_id: str, keys: Sequence[str]) -> None:
        """Both indexes' delete of ``tenant_id``'s ``keys``, committed when this returns; the caller
        holds the write lock."""
        delete = _Delete(tenant_id, keys)
        text = self._text_commits.submit(delete)
        passing = _Embedding(delete)
        _settled(self._embeddings.submit(passing), text)
        assert passing.vector_committed is not None
        _settled(passing.vector_committed)

    def search(self, query: SearchQuery) -> SearchResult:
        check_search(query, self.limits)
        blank = not query.text.strip() or (query.mode is SearchMode.FTS and not query_words(query.text))
        if blank:
            newest = self._vectors.newest(query.filter, query.top_k)
            return SearchResult(
                hits=tuple(Hit(document=doc, rrf_score=0.0) for doc in newest), mode=query.mode
            )
        legs = self._run_legs(query)
        weights = query.weights or self._config.default_weights
        leg_weights = {VECTOR: weights.vector, FTS: weights.fts}
        # single-leg modes keep their leg's order: RRF over one leg
        fusion = self._config.fusion if query.mode is SearchMode.HYBRID else FusionSetting(Fusion.RRF)
        with tracing.span("search.fusion", candidates=sum(len(c) for c in legs.values())):
            fused, rrf_scores = fuse(
                {name: [(c.key, c.score) for c in candidates] for name, candidates in legs.items()},
                fusion,
                rrf_k=query.rrf_k,
                weights=leg_weights,
            )
            return SearchResult(hits=self._hits(fused, rrf_scores, legs, query.top_k), mode=query.mode)

    def _hits(
        self, fused: Ranking, rrf_scores: Mapping[str, float], legs: dict[str, list[ScoredKey]], top_k: int
    ) -> tuple[Hit, ...]:
        """The best ``top_k`` fused keys as hits, with their fused and RRF scores and each leg's rank
        and raw score; equal scores in document id order (as the contract says), not in the storage
        keys' order that the fusion used."""
        scores = {name: {c.key: c.score for c in candidates} for name, candidates in legs.items()}
        best = sorted(self._fetch_best(fused, top_k), key=lambda pair: (-pair[0].score, pair[1].id))
        hits = [
            Hit(
                document=document,
                rrf_score=rrf_scores[entry.key],
                score=entry.score,
                vector_rank=entry.ranks.get(VECTOR),
                fts_rank=entry.ranks.get(FTS),
                vector_score=scores.get(VECTOR, {}).get(entry.key),
                fts_score=scores.get(FTS, {}).get(entry.key),
            )
            for entry, document in best
        ]
        return tuple(hits[:top_k])

    def candidates(self, query: SearchQuery) -> dict[str, list[ScoredKey]]:
        """Each leg's candidates for ``query`` before fusion (keys, best first), exactly as a search
        runs them; a benchmark can fuse one set under several weightings without searching again."""
        check_search(query, self.limits)
        return self._run_legs(query)

    def _run_legs(self, query: SearchQuery) -> dict[str, list[ScoredKey]]:
        """Each leg's candidates to its depth, equal scores in storage key order (:func:`_in_key_order`).
        A leg is read one past its depth, and further while a run of equal scores reaches past what
        was read: which of the tied documents make the cut is decided by key, as if the leg had been
        read whole, not by the order its index happened to store them in. Only the leg cut short is
        read again, and the query is embedded at most once per call, whatever the rounds."""
        depths = _depths(query)
        reads = {leg: depth + 1 for leg, depth in depths.items()}
        vector = functools.cache(lambda: self.embedder.embed_query(query.text))
        legs = self._legs(query, reads, vector)
        while cut_short := [
            leg for leg, found in legs.items() if _tie_runs_past(found, depths[leg], reads[leg])
        ]:
            for leg in cut_short:
                reads[leg] *= 2
                legs[leg] = (
                    self._vector_leg(vector, query.filter, reads[leg])
                    if leg == VECTOR
                    else self._fts_leg(query.text, query.filter, reads[leg])
                )
        return {leg: _in_key_order(found)[: depths[leg]] for leg, found in legs.items()}

    def _legs(
        self, query: SearchQuery, reads: dict[str, int], vector: Callable[[], Vectors]
    ) -> dict[str, list[ScoredKey]]:
        """Each leg's best ``reads[leg]`` candidates as its index returns them. In hybrid mode the text
        leg runs on a thread of its own while this one embeds the query and searches the vectors:
        onnxruntime and Tantivy release the GIL, so BM25 adds no wall time when it finishes first."""
        if query.mode is SearchMode.FTS:
            return {FTS: self._fts_leg(query.text, query.filter, reads[FTS])}
        if query.mode is SearchMode.VECTOR:
            return {VECTOR: self._vector_leg(vector, query.filter, reads[VECTOR])}
        vector_depth, fts_depth = reads[VECTOR], reads[FTS]
        if isinstance(self._vectors, JointSearch):  # both legs in one request to one collection
            with tracing.span("search.joint_legs", depth=max(vector_depth, fts_depth)):
                found, fts = self._vectors.search_legs(
                    vector(), query.text, query.filter, vector_depth, fts_depth
                )
            return {VECTOR: found, FTS: fts}
        fts_leg = tracing.in_context(self._fts_leg)
        text = self._text_legs.submit(fts_leg, query.text, query.filter, fts_depth)
        return {VECTOR: self._vector_leg(vector, query.filter, vector_depth), FTS: text.result()}

    def _vector_leg(self, vector: Callable[[], Vectors], flt: DocumentFilter, depth: int) -> list[ScoredKey]:
        with tracing.span("search.vector_leg", depth=depth):
            return self._vectors.search(vector(), flt, depth)

    def _fts_leg(self, text: str, flt: DocumentFilter, depth: int) -> list[ScoredKey]:
        with tracing.span("search.fts_leg", depth=depth):
            return self._text.search(text, flt, depth)

    def _fetch_best(self, fused: Ranking, top_k: int) -> list[tuple[Fused, Document]]:
        """Documents of the first ``top_k`` fused keys that still exist (reading further when some key
        has vanished meanwhile), and of every later key whose score equals the last one's: the ids
        decide which of those tied keys make the cut."""
        keys, scores = fused.keys, fused.scores
        found: list[tuple[Fused, Document]] = []
        start = 0
        while top_k > 0 and start < len(keys):
            if len(found) < top_k:
                end = start + top_k - len(found)
            else:
                boundary = found[top_k - 1][0].score
                end = start
                while end < len(keys) and scores[keys[end]] == boundary:
                    end += 1
                if end == start:
                    break
            documents = self._vectors.fetch(keys[start:end])
            found.extend(
                (fused.entry(index), documents[keys[index]])
                for index in range(start, min(end, len(keys)))
                if keys[index] in documents
            )
            start = end
        return found

    def stats(self, flt: DocumentFilter) -> ScopeStats:
        check_filter(flt, self.limits)
        passages = self._count_kind(flt, DocumentKind.PASSAGE)
        messages = self._count_kind(flt, DocumentKind.MESSAGE)
        return ScopeStats(
            document_count=passages + messages,
            passage_count=passages,
            message_count=messages,
            tags=tuple(self._vectors.tags(flt, MAX_STATS_TAGS)),
            embedding_model=self.embedder.name,
            embedding_dimension=self.embedder.dimension,
        )

    def list_ids(self, flt: DocumentFilter, *, after_key: str, limit: int) -> tuple[list[str], str]:
        """Ids of the documents matching ``flt`` whose storage key follows ``after_key``, at most
        ``limit``, in key order; and the key to continue after ("" when there is no more)."""
        check_filter(flt, self.limits)
        keys = self._vectors.keys_after(flt, after_key, limit + 1)  # one more: is there another page?
        page = keys[:limit]
        found = self._vectors.fetch(page)
        ids = [found[key].id for key in page if key in found]
        return ids, (page[-1] if len(keys) > limit else "")

    def _count_kind(self, flt: DocumentFilter, kind: DocumentKind) -> int:
        if flt.kinds and kind not in flt.kinds:
            return 0
        return self._vectors.count(replace(flt, kinds=(kind,)))

    def documents_per_tenant(self) -> dict[str, int]:
        """Documents held for each tenant this process has indexed for since it started."""
        with self._tenants_lock:  # not the write lock: an upsert holds that while it embeds
            tenants = sorted(self._tenants_written)
        return {tenant: self._vectors.count(DocumentFilter(tenant_id=tenant)) for tenant in tenants}

    def unindexed_vectors(self) -> int:
        """Vectors not yet in an HNSW graph (searched exactly until :meth:`maintain` builds one)."""
        return self._vectors.unindexed_count()

    def maintain(self) -> bool:
        """Build HNSW graphs when enough vectors are unindexed. Blocking: call it while not serving."""
        unindexed = self._vectors.unindexed_count()
        if unindexed < self._config.hnsw_build_threshold:
            return False
        log.info("building HNSW for %d unindexed vectors", unindexed)
        with self._write_lock:
            self._drain()
            return self._vectors.optimize()

    def rebuild(self) -> str:
        """Rebuild the whole index as a new generation behind the collection alias while searches
        keep answering from the current one (the server engine only); returns the new generation."""
        if not isinstance(self._vectors, Rebuildable):
            raise FailedPrecondition(
                "only the server engine (VECTOR_BACKEND=server) rebuilds behind an alias"
            )
        return self._vectors.rebuild(self.embedder.embed_documents)

    def close(self) -> None:
        self._text_legs.shutdown(wait=True)
        with self._write_lock:
            self._embeddings.close()
            self._text_commits.close()
            self._vector_commits.close()
            self._vectors.close()
            self._text.close()


def _settled(*commits: Future[None]) -> None:
    """Wait for every commit, then raise the first one's failure, if any."""
    errors = [commit.exception() for commit in commits]
    for error in errors:
        if error is not None:
            raise error


def _runs(writes: Sequence[_Write]) -> list[tuple[list[int], _Delete | list[_Upsert]]]:
    """``writes`` in order with their positions, consecutive upserts as one run."""
    runs: list[tuple[list[int], _Delete | list[_Upsert]]] = []
    for position, write in enumerate(writes):
        if isinstance(write, _Upsert):
            last = runs[-1] if runs else None
            if last is not None and isinstance(last[1], list):
                last[0].append(position)
                last[1].append(write)
            else:
                runs.append(([position], [write]))
        else:
            runs.append(([position], write))
    return runs


def _by_tenant(positions: Sequence[int], run: Sequence[_Upsert]) -> dict[str, list[int]]:
    """The positions of a run's upserts holding documents of each tenant."""
    members: dict[str, list[int]] = {}
    for position, upsert in zip(positions, run, strict=True):
        for tenant in dict.fromkeys(document.scope.tenant_id for document in upsert.documents):
            members.setdefault(tenant, []).append(position)
    return members


def _latest(upserts: Sequence[_Upsert], tenant_id: str | None = None) -> list[Document]:
    """The documents of consecutive upserts (``tenant_id``'s only, when named) as one batch, a key
    written twice only as written last."""
    latest = {
        document.key: document
        for upsert in upserts
        for document in upsert.documents
        if tenant_id is None or document.scope.tenant_id == tenant_id
    }
    return list(latest.values())


def _rows(upsert: _Upsert) -> zip[tuple[Document, Vectors]]:
    assert upsert.vectors is not None
    return zip(upsert.documents, upsert.vectors, strict=True)


def _text_committed(upsert: _Upsert) -> bool:
    return upsert.text_committed is None or upsert.text_committed.exception() is None


TIE_TOLERANCE_DIGITS = 9
"""Leg scores equal to this many decimal places rank as ties (float noise, not relevance)."""


def _depths(query: SearchQuery) -> dict[str, int]:
    """How many candidates each leg of ``query`` contributes to fusion."""
    if query.mode is SearchMode.FTS:
        return {FTS: query.top_k}
    if query.mode is SearchMode.VECTOR:
        return {VECTOR: query.top_k}
    depth = default_depth(query.top_k)
    return {VECTOR: query.vector_depth or depth, FTS: query.fts_depth or depth}


def _tie_runs_past(found: list[ScoredKey], depth: int, read: int) -> bool:
    """Whether the scores equal to the one at ``depth`` may go on beyond the ``read`` candidates an
    index returned (it returned all it was asked for, and the last of them still ties)."""
    if len(found) < read or len(found) <= depth:
        return False
    boundary = round(found[depth - 1].score, TIE_TOLERANCE_DIGITS)
    return round(found[-1].score, TIE_TOLERANCE_DIGITS) == boundary


def _in_key_order(candidates: list[ScoredKey]) -> list[ScoredKey]:
    """A leg's candidates best first, equal scores by storage key (a hash of tenant and id).

    Each index returns equal scores in the order it stored the documents, so two documents with the
    same text took their leg ranks, and so their fused order, from the order they were written in:
    one history imported twice could come back in another order. Ranked by key, the same documents
    rank the same whatever their write order. Scores within ``TIE_TOLERANCE_DIGITS`` decimal places
    count as equal: the same text's cosine can differ in its last bit with the order an index computes
    it in (measured: 0.8258882293846652 and ...651 for two copies on qdrant-client's local mode)."""
    return sorted(
        candidates, key=lambda candidate: (-round(candidate.score, TIE_TOLERANCE_DIGITS), candidate.key)
    )
