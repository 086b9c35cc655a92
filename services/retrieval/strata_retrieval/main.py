"""RetrievalService entry point: ``python -m strata_retrieval.main`` (settings: ``STRATA_RETRIEVAL_*``).

Start-up order: bind the port (health NOT_SERVING), open the embedder and indexes in the executor
(and build HNSW graphs if many vectors are unindexed, which holds the GIL and so must finish before
serving), then report SERVING. An index it must not use as configured (built with another embedding
model, its disk full) keeps health NOT_SERVING and answers every call with the reason, so probes and
load balancers route around it while an operator can still ask it why. SIGTERM reports NOT_SERVING,
keeps answering for the drain period, lets calls in flight finish and closes the indexes.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from concurrent.futures import ThreadPoolExecutor

from strata.retrieval.v1 import (
    errors_pb2,  # noqa: F401  (loaded so reflection serves the ErrorReason catalogue)
    retrieval_pb2,
    retrieval_pb2_grpc,
)
from strata_retrieval.disk import DiskGuard, IndexDiskFull
from strata_retrieval.embedding.observed import EmbeddingMetrics, ObservedEmbedder
from strata_retrieval.embedding.onnx_embedder import DEFAULT_PRECISION, OnnxSentenceEmbedder, Precision
from strata_retrieval.embedding.protocol import Embedder
from strata_retrieval.embedding.query_cache import QueryCache
from strata_retrieval.engine import EngineConfig, RetrievalEngine
from strata_retrieval.errors import EmbeddingModelMismatch
from strata_retrieval.index_metrics import IndexCollector
from strata_retrieval.manifest import IndexManifest, check_manifest, read_manifest
from strata_retrieval.servicer import RetrievalServicer
from strata_retrieval.settings import RetrievalSettings, VectorBackend
from strata_retrieval.text_tenants import LEGACY_TEXT_FOLDERS, TEXT_FOLDER, TenantTextIndexes
from strata_retrieval.vectors.bm25 import Bm25Params
from strata_retrieval.vectors.edge_durable import DurableEdgeShard
from strata_retrieval.vectors.protocol import VectorIndex
from strata_retrieval.vectors.qdrant_dense import QdrantDenseIndex
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex, SparseTextLeg
from strata_serving.auth import AccessPolicy, AuthInterceptor, Principal, PrincipalKind, StaticKey, StaticKeys
from strata_serving.entry_point import run_service
from strata_serving.server import GrpcServer
from strata_serving.tls import server_tls

SERVICE_NAME = retrieval_pb2.DESCRIPTOR.services_by_name["RetrievalService"].full_name
log = logging.getLogger("strata.retrieval")


def embedder_precision(settings: RetrievalSettings) -> Precision:
    """The configured precision; unset, the one the data directory's index was built with, so that
    an index built before int8 became the default keeps opening; int8 for a new index."""
    if settings.embedder_precision is not None:
        return settings.embedder_precision
    manifest = read_manifest(settings.data_dir)
    built_with = {precision.model_name: precision for precision in Precision}
    return built_with.get(manifest.embedding_model, DEFAULT_PRECISION) if manifest else DEFAULT_PRECISION


def load_embedder(settings: RetrievalSettings) -> Embedder:
    return OnnxSentenceEmbedder.load(
        settings.model_cache_dir,
        precision=embedder_precision(settings),
        threads=settings.embedder_threads,
        batch_size=settings.embedder_batch_size,
    )


def open_engine(settings: RetrievalSettings, embedder: Embedder) -> RetrievalEngine:
    """Open (or create) the indexes under ``settings.data_dir`` for ``embedder``'s model (for the
    server engine: the Qdrant collection, :func:`open_server_engine`).

    Raises :class:`EmbeddingModelMismatch` when the data directory belongs to another model, unless
    ``rebuild_on_model_change`` is set, in which case the old indexes are deleted first; raises
    :class:`IndexDiskFull` when new indexes would be created on a disk without the free reserve.
    """
    if settings.vector_backend is VectorBackend.SERVER:
        return open_server_engine(settings, embedder)
    disk = DiskGuard(settings.data_dir, settings.min_free_disk_bytes)
    if not (settings.data_dir / "vectors").exists():
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        disk.check_write()  # creating the indexes writes through memory maps too
    expected = IndexManifest(embedding_model=embedder.name, embedding_dimension=embedder.dimension)
    try:
        check_manifest(settings.data_dir, expected)
    except EmbeddingModelMismatch:
        if not settings.rebuild_on_model_change:
            raise
        log.warning("embedding model changed: deleting the indexes in %s for a rebuild", settings.data_dir)
        shutil.rmtree(settings.data_dir)
        check_manifest(settings.data_dir, expected)
    vectors: VectorIndex
    if settings.vector_backend is VectorBackend.EDGE:
        vectors = DurableEdgeShard(
            settings.data_dir / "vectors",
            embedder.dimension,
            settings.data_dir / VECTOR_JOURNAL,
            flush_seconds=settings.vector_flush_seconds,
        )
    else:
        vectors = QdrantDenseIndex(
            settings.qdrant_url,
            embedder.dimension,
            collection=settings.qdrant_collection,
            api_key=settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None,
        )
    text = _tenant_text(settings, vectors)
    engine = RetrievalEngine(embedder, vectors, text, engine_config(settings), disk=disk)
    engine.maintain()
    return engine


VECTOR_JOURNAL = "vectors_journal"  # the Edge shard's writes not flushed yet (vectors/journal)


def _tenant_text(settings: RetrievalSettings, vectors: VectorIndex) -> TenantTextIndexes:
    """The per-tenant text indexes. A data folder still holding an older layout (``LEGACY_TEXT_FOLDERS``:
    the shared index, or per-tenant ones without the ``own_text`` field) gets them built anew from the
    vector index's documents (every payload holds its document whole), then the old ones removed;
    interrupted, the next start builds them again (writes replace by key)."""
    data_dir = settings.data_dir
    text = TenantTextIndexes(
        data_dir / TEXT_FOLDER,
        max_open=settings.text_open_indexes,
        max_writers=settings.text_writers,
        own_text_weight=settings.text_own_weight,
    )
    legacy = [data_dir / name for name in LEGACY_TEXT_FOLDERS if (data_dir / name).exists()]
    if legacy:
        log.info("text search: per-tenant indexes built from the vector index's documents")
        moved = 0
        for page in vectors.document_pages():
            text.upsert(page)
            moved += len(page)
        for folder in legacy:
            shutil.rmtree(folder)
        log.info("text search: %d documents indexed into %s", moved, TEXT_FOLDER)
    return text


def engine_config(settings: RetrievalSettings) -> EngineConfig:
    return EngineConfig(
        default_weights=settings.default_weights,
        limits=settings.limits,
        hnsw_build_threshold=settings.hnsw_build_threshold,
        search_threads=settings.workers,
        fusion=settings.fusion_setting,
    )


def open_server_engine(settings: RetrievalSettings, embedder: Embedder) -> RetrievalEngine:
    """Both legs in the Qdrant collection ``settings.qdrant_collection``; nothing on local disk.

    Raises :class:`EmbeddingModelMismatch` when the collection was built with another model or other
    BM25 parameters, unless ``rebuild_on_model_change`` is set: the next generation is then built from
    the serving one's documents (re-embedded) and the alias swapped onto it before this returns, while
    other replicas keep serving the old one."""
    api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
    index = QdrantJointIndex(
        settings.qdrant_url,
        IndexManifest(embedding_model=embedder.name, embedding_dimension=embedder.dimension),
        collection=settings.qdrant_collection,
        api_key=api_key,
        bm25=Bm25Params(avg_len=settings.bm25_avg_len),
        rebuild_with=embedder.embed_documents if settings.rebuild_on_model_change else None,
        own_text_weight=settings.text_own_weight,
    )
    return RetrievalEngine(embedder, index, SparseTextLeg(index), engine_config(settings))


class RetrievalApp:
    """The running service: gRPC server, executor and engine, started and stopped together."""

    def __init__(self, settings: RetrievalSettings, *, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self._embedder = embedder
        self._executor = ThreadPoolExecutor(settings.workers, thread_name_prefix="retrieval")
        self.servicer = RetrievalServicer(self._executor)
        self.server = GrpcServer(
            settings.address,
            service_names=[SERVICE_NAME],
            register=lambda server: retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(
                self.servicer, server
            ),
            extra_interceptors=_auth_interceptors(settings),
            options=[
                ("grpc.max_receive_message_length", settings.max_message_bytes),
                ("grpc.max_send_message_length", settings.max_message_bytes),
            ],
            tls=server_tls(settings.tls_cert_file, settings.tls_key_file, settings.tls_client_ca_file),
            serving=settings,
            settings_prefix="STRATA_RETRIEVAL_",
        )
        self.engine: RetrievalEngine | None = None

    @property
    def address(self) -> str:
        return self.server.address

    async def start(self) -> None:
        await self.server.start()
        loop = asyncio.get_running_loop()
        embedder = self._embedder
        if embedder is None:
            embedder = await loop.run_in_executor(self._executor, load_embedder, self.settings)
        metrics = self.server.registry if self.server.metrics_enabled else None
        observed = EmbeddingMetrics(metrics) if metrics else None
        embedder = QueryCache(
            ObservedEmbedder(embedder, observed), self.settings.query_embedding_cache, observed
        )
        try:
            engine = await loop.run_in_executor(self._executor, open_engine, self.settings, embedder)
        except (EmbeddingModelMismatch, IndexDiskFull) as refusal:
            # Health stays NOT_SERVING: a probe or a mesh must not send traffic to a replica that
            # refuses all of it. Calls are still answered, with the reason, for whoever asks.
            log.error("refusing every call, health NOT_SERVING: %s", refusal)  # noqa: TRY400  # no traceback
            self.servicer.refuse(refusal)
            return
        self.engine = engine
        self.servicer.attach(engine)
        if metrics is not None:
            metrics.register(IndexCollector(engine))
        await self.server.mark_serving()

    async def stop(self) -> None:
        await self.server.stop(self.settings.grace_seconds)
        if self.engine is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, self.engine.close)
        self._executor.shutdown(wait=True)


def _auth_interceptors(settings: RetrievalSettings) -> list[AuthInterceptor]:
    """With an API key set, only the service principal (MemoryService) may call; every request still
    names its tenant, and the engine refuses any without one (INVALID_ARGUMENT)."""
    if settings.api_key is None:
        return []
    service = Principal(PrincipalKind.SERVICE, key_id="service")
    keys = StaticKeys([StaticKey(settings.api_key.get_secret_value(), service)])
    return [AuthInterceptor(keys, AccessPolicy({SERVICE_NAME: frozenset({PrincipalKind.SERVICE})}))]


async def serve(settings: RetrievalSettings) -> None:
    app = RetrievalApp(settings)
    try:
        await app.start()  # a failure here (model files missing, index locked) still unbinds the port
        await app.server.serve_until_signal(settings.grace_seconds)
    finally:
        await app.stop()


def main() -> None:
    run_service("strata-retrieval", RetrievalSettings, serve)


if __name__ == "__main__":
    main()
