"""RetrievalService configuration, read once from ``STRATA_RETRIEVAL_*`` environment variables."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from strata_retrieval.embedding.onnx_embedder import Precision
from strata_retrieval.fusion import FusionSetting
from strata_retrieval.limits import Limits
from strata_retrieval.model import DEFAULT_OWN_TEXT_WEIGHT, Fusion, LegWeights
from strata_serving.key_strength import check_key
from strata_serving.settings import ServingSettings


class VectorBackend(StrEnum):
    EDGE = "edge"  # Qdrant's engine in-process (qdrant-edge-py), a shard under data_dir
    QDRANT = (
        "qdrant"  # dense vectors in a Qdrant collection at qdrant_url, full text in Tantivy under data_dir
    )
    # The server engine: both legs in one Qdrant collection at qdrant_url (dense + BM25 sparse vectors
    # with the IDF modifier), nothing on local disk, so any number of replicas can share it.
    SERVER = "server"


class RetrievalSettings(ServingSettings):
    """Also the shared serving settings (drain, port sharing, keepalive, metrics, tracing)."""

    model_config = SettingsConfigDict(env_prefix="STRATA_RETRIEVAL_", frozen=True)

    address: str = "127.0.0.1:50052"
    data_dir: Path = Path(".data/retrieval")
    model_cache_dir: Path = Field(default_factory=lambda: Path.home() / ".cache" / "strata" / "models")
    vector_backend: VectorBackend = VectorBackend.EDGE
    qdrant_url: str = "http://127.0.0.1:6333"
    qdrant_collection: str = "strata_documents"
    qdrant_api_key: SecretStr | None = Field(
        default=None, description="the Qdrant server's API key, if it has one"
    )
    bm25_avg_len: float | None = Field(
        default=None,
        gt=0,
        description="server engine: BM25's expected document length in tokens after stop words; unset: "
        "the collection's mean, measured when a generation is built (256, Qdrant's default, for a new "
        "empty collection; `python -m strata_retrieval.rebuild` measures it again); pinned in the "
        "collection, so changing it needs a rebuild",
    )
    embedder_precision: Precision | None = Field(
        default=None,
        description="fp32 | int8; unset: what an existing index was built with, int8 for a new one",
    )
    embedder_threads: int = Field(
        default=2, ge=1, description="a query's onnxruntime threads; int8 also embeds this many texts at once"
    )
    embedder_batch_size: int = Field(
        default=32, ge=1, description="texts per run in fp32 (int8 runs each alone)"
    )
    query_embedding_cache: int = Field(
        default=2048,
        ge=0,
        description="query vectors kept for the texts asked most recently (about 1.5 KiB each), so a "
        "query asked again is not embedded again; 0 keeps none (a hit answers faster, so a caller who "
        "times searches can tell that some caller asked the same text recently)",
    )
    workers: int = Field(default=4, ge=1, description="threads running blocking engine calls")
    # One fusion for every corpus, chosen by leave-one-corpus-out over SciFact and LoCoMo
    # (bench/fusion/corpus_out.py, bench/results/fusion_corpus_out.md): the blend, a lighter vector
    # leg and (model.default_depth) 100 candidates per leg. MemoryService sends the same for recall.
    vector_weight: float = Field(default=0.75, ge=0)
    fts_weight: float = Field(default=1.0, ge=0)
    fusion: Fusion = Field(
        default=Fusion.BLEND,
        description="how hybrid searches fuse the legs: blend (per leg fusion_alpha of its DBSF-scaled "
        "score + the rest of (fusion_rank_k + 1) / (fusion_rank_k + rank)), rrf (by rank, weight / (k + "
        "rank), k the request's rrf_k) or dbsf (by score: each leg's scores scaled by their mean +- 3 sd, "
        "weighted and summed). A hit's score is the fused score; its rrf_score is RRF's under every "
        "fusion. bench/results/fusion_corpus_out.md",
    )
    fusion_alpha: float = Field(
        default=0.5, ge=0, le=1, description="blend: the share of the legs' scaled scores (1: dbsf)"
    )
    fusion_rank_k: float = Field(default=5.0, ge=0, description="blend: the k of its rank term")
    min_free_disk_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=0,
        description="writes are refused (RESOURCE_EXHAUSTED, INDEX_DISK_FULL) unless data_dir's disk keeps "
        "this much free after them: the indexes write through memory maps, and a full disk would kill "
        "the process (SIGBUS) instead of failing the write",
    )
    text_open_indexes: int = Field(
        default=256,
        ge=2,
        description="embedded engine: tenants' full-text indexes kept open (one thread each; the least "
        "recently used is closed past this, and reopened in under a millisecond)",
    )
    text_own_weight: float = Field(
        default=DEFAULT_OWN_TEXT_WEIGHT,
        ge=0,
        le=10,
        description="what a query word found in a document's own text adds in the full-text leg, as a "
        "share of its score in the text read with its context (a message's previous turn): the turn "
        "that says the words outranks the reply that has them as context. A Tantivy field, or the "
        "server engine's second sparse vector; read at search time (no rebuild); 0 scores the text "
        "and its context as one",
    )
    text_writers: int = Field(
        default=16,
        ge=1,
        description="embedded engine: tenants' full-text index writers kept open (a lock-file descriptor, "
        "indexing and merge threads and a heap each; the least recently written is closed past this)",
    )
    vector_flush_seconds: float = Field(
        default=30.0,
        gt=0,
        description="embedded engine: how often the vector index is flushed to disk while writes wait "
        "(a flush holds the GIL, every thread of the process waiting, ~20 ms and up to ~0.5 s on a busy "
        "disk); until then each acknowledged write is in its fsynced journal, applied again after a crash",
    )
    hnsw_build_threshold: int = Field(default=10_000, ge=0)
    rebuild_on_model_change: bool = False
    max_batch_documents: int = Field(default=512, ge=1)
    max_text_chars: int = Field(default=32_768, ge=1)
    max_top_k: int = Field(default=100, ge=1)
    max_candidate_depth: int = Field(default=1_000, ge=1)
    grace_seconds: float = Field(default=5.0, ge=0)
    max_message_bytes: int = Field(default=64 * 1024 * 1024, ge=1024, description="largest request accepted")
    api_key: SecretStr | None = Field(
        default=None,
        description="when set, every call needs 'authorization: Bearer <api_key>' (MemoryService's "
        "STRATA_MEMORY_RETRIEVAL_API_KEY); health and reflection stay open",
    )
    tls_cert_file: Path | None = Field(default=None, description="PEM certificate chain: TLS only")
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = Field(default=None, description="require client certificates (mTLS)")

    @model_validator(mode="after")
    def _keys_pass_the_key_rule(self) -> RetrievalSettings:
        """Both keys must pass ``strata_serving.key_strength``'s rule (docs/security.md)."""
        for variable, key in (("API_KEY", self.api_key), ("QDRANT_API_KEY", self.qdrant_api_key)):
            if key is not None:
                check_key(f"STRATA_RETRIEVAL_{variable}", key.get_secret_value())
        return self

    @property
    def limits(self) -> Limits:
        return Limits(
            max_batch_documents=self.max_batch_documents,
            max_text_chars=self.max_text_chars,
            max_top_k=self.max_top_k,
            max_candidate_depth=self.max_candidate_depth,
        )

    @property
    def fusion_setting(self) -> FusionSetting:
        return FusionSetting(self.fusion, alpha=self.fusion_alpha, rank_k=self.fusion_rank_k)

    @property
    def default_weights(self) -> LegWeights:
        return LegWeights(vector=self.vector_weight, fts=self.fts_weight)
