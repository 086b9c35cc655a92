"""MemoryService settings, read once from ``STRATA_MEMORY_*`` environment variables."""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict


class MemorySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STRATA_MEMORY_", frozen=True, extra="forbid")

    address: str = "127.0.0.1:50051"
    """host:port to listen on (port 0 picks a free one)."""
    database_url: str = "sqlite:///.data/memory/memory.sqlite3"
    """SQLAlchemy URL of the store: a SQLite file by default, ``postgresql+psycopg://…`` to share."""
    db_workers: int = 4
    """Threads that run store transactions off the event loop."""
    shutdown_grace_seconds: float = 5.0
    """On SIGTERM: report NOT_SERVING, then let calls in flight finish for this long."""
    retrieval_address: str = "127.0.0.1:50052"
    """RetrievalService to index into and search through."""
    retrieval_timeout_seconds: float = 10.0
    outbox_batch_size: int = 256
    """Index jobs delivered to RetrievalService per call."""
    outbox_max_backoff_seconds: float = 5.0
    """Longest wait between delivery attempts while RetrievalService is unreachable."""
    archival_vector_weight: float = 1.0
    archival_fts_weight: float = 1.0
    recall_vector_weight: float = 1.0
    recall_fts_weight: float = 1.0
    """RRF leg weights for archival and recall search (see bench/ for how they were chosen)."""
    rrf_k: float = 60.0
    recall_rrf_k: float = 60.0
    """RRF k for recall search (``rrf_k`` is archival's)."""
    recall_candidate_depth: int = 0
    """Candidates each leg of a hybrid recall search fetches (at least the limit); 0: RetrievalService's."""
    recall_context_turns: int = 0
    """Preceding user/assistant turns of the same conversation indexed with each message."""
    log_level: str = "INFO"
    log_json: bool = True
