"""MemoryService settings, read once from ``STRATA_MEMORY_*`` environment variables."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from strata_memory.limits import ADMISSION_POOLS, DEFAULT_RETRIEVAL_MESSAGE_BYTES, QUOTA_DEFAULTS
from strata_serving.key_strength import check_key
from strata_serving.settings import ServingSettings


class MemorySettings(ServingSettings):
    """Also the shared serving settings (drain, port sharing, keepalive, metrics, tracing)."""

    model_config = SettingsConfigDict(env_prefix="STRATA_MEMORY_", frozen=True, extra="forbid")

    address: str = "127.0.0.1:50051"
    """host:port to listen on (port 0 picks a free one)."""
    database_url: str = "sqlite:///.data/memory/memory.sqlite3"
    """SQLAlchemy URL of the store: a SQLite file by default, ``postgresql+psycopg://…`` to share."""
    db_workers: int = 4
    """Threads that run store transactions off the event loop."""
    store_lock_timeout_seconds: float = Field(default=10.0, ge=0)
    """PostgreSQL ``lock_timeout``: longest wait for one row lock; past it the write fails ABORTED
    (STORE_CONFLICT, retry) instead of queueing behind the holder without end. 0: no limit."""
    store_statement_timeout_seconds: float = Field(default=30.0, ge=0)
    """PostgreSQL ``statement_timeout``: longest one statement runs. A call's statements get at most
    what its deadline has left, so a lock wait its caller gave up on is cancelled. 0: only the deadline."""
    store_idle_in_transaction_seconds: float = Field(default=10.0, ge=0)
    """PostgreSQL ``idle_in_transaction_session_timeout``: a session inside a transaction that sends
    nothing for this long is ended and its locks released (a replica whose link froze mid-write holds
    the others' writes at most this long). 0: no limit."""
    store_probe_seconds: float = Field(default=5.0, gt=0)
    """How often the store is probed (a fresh connection and ``SELECT 1``). A probe that fails or is
    not answered within this long turns health NOT_SERVING until one succeeds again."""
    shutdown_grace_seconds: float = 5.0
    """On SIGTERM, after the drain period: let calls in flight finish for this long."""
    retrieval_address: str = "127.0.0.1:50052"
    """RetrievalService to index into and search through."""
    retrieval_timeout_seconds: float = 10.0
    """Longest wait for one RetrievalService call; a call made for a client gets at most what that
    client's deadline has left."""
    outbox_batch_size: int = 256
    """Index jobs delivered to RetrievalService per call."""
    outbox_deliveries_in_flight: int = Field(default=1, ge=1)
    """Index batches the outbox may have in flight at once: with 2, while RetrievalService embeds one,
    the next full batch is claimed and sent. 1 on 2 cores (bench/perf/findings.md); try 2 where
    RetrievalService has cores to spare."""
    outbox_linger_seconds: float = Field(default=0.05, ge=0)
    """After a delivery that released ``wait_searchable`` callers, how long the outbox waits for as many
    new writes before claiming the next batch (writers that waited usually write again at once; one
    batch for their writes instead of several). 0: claim at once."""
    outbox_max_backoff_seconds: float = 5.0
    """Longest wait between delivery attempts (backoff doubles from 0.2 s, with jitter, up to this)."""
    outbox_max_attempts: int = Field(default=8, ge=1)
    """Times RetrievalService may refuse one document before its job is parked (AdminService lists
    parked jobs and retries them). Unreachability never parks anything."""
    outbox_idle_poll_seconds: float = Field(default=1.0, gt=0)
    """How often an idle outbox worker looks for jobs nobody told it about: retries that came due, and
    on SQLite nothing else (its own writes wake it). On PostgreSQL other replicas' writes wake it too,
    through ``LISTEN``/``NOTIFY`` (``store/notices.py``), so this is a fallback for a lost notice."""
    outbox_lease_seconds: float = Field(default=30.0, gt=0)
    """A claimed job stays with its worker this long; then another replica's worker may take it over."""
    archival_vector_weight: float = 0.75
    archival_fts_weight: float = 1.0
    """Leg weights for archival search: RetrievalService's defaults, the one fusion chosen by
    leave-one-corpus-out over SciFact and LoCoMo (bench/results/fusion_corpus_out.md)."""
    rrf_k: float = 60.0
    """RRF k for archival search."""
    archival_candidate_depth: int = Field(default=0, ge=0, le=1000)
    """Candidates each leg of a hybrid archival search fetches (at least the limit); 0: RetrievalService's."""
    # Recall defaults chosen by leave-one-conversation-out over the LoCoMo conversations
    # (bench/locomo/recall.py, bench/LOCOMO.md, bench/results/locomo_recall.json): every held-out
    # conversation's fold chose the previous turn in the text leg only, a lighter vector leg and deep
    # legs; the setting best on all of them is this one. Held-out evidence recall@10 (any) 0.776
    # (per conversation 0.719-0.809) against 0.720 with no context.
    recall_vector_weight: float = 0.75
    recall_fts_weight: float = 1.0
    """Leg weights for recall search: the same as archival search's (RetrievalService's default blend
    fusion, chosen by leave-one-corpus-out: bench/results/fusion_corpus_out.md; under RRF,
    leave-one-conversation-out on LoCoMo chose 0.35 with k 30)."""
    recall_rrf_k: float = 30.0
    """RRF k for recall search (the hits' rrf_score; the ranking's only under STRATA_RETRIEVAL_FUSION=rrf)."""
    recall_candidate_depth: int = Field(default=100, ge=0, le=1000)
    """Candidates each leg of a hybrid recall search fetches (at least the limit); 0: RetrievalService's."""
    recall_context_turns: int = Field(default=1, ge=0, le=10)
    """Preceding user/assistant turns of the same conversation indexed with each message."""
    recall_context_legs: Literal["text", "vector", "both"] = "text"
    """Which legs of a recall search read those turns (after the message's own text). In the vector
    leg they made a reply embed like the turn it answers, so the two competed for the same queries."""
    recall_query_periods: bool = True
    """A recall query naming a day or month with its year ("… on 8 May, 2023?") and sent without a
    time range searches the messages said in that period (``strata_memory.operations.search``)."""

    # Security (docs/security.md). Off by default so `make run` stays one command.
    auth_enabled: bool = False
    """Require a tenant API key (``authorization: Bearer …``) on every MemoryService call."""
    admin_api_key: SecretStr | None = None
    """The key of AdminService (API keys); AdminService is served only when it is set. It must pass
    the key rule (``strata_serving.key_strength``: 24+ characters, no placeholder, not patterned)."""
    retrieval_api_key: SecretStr | None = None
    """The service key MemoryService presents to RetrievalService (its ``STRATA_RETRIEVAL_API_KEY``)."""
    tls_cert_file: Path | None = None
    """PEM certificate chain; with ``tls_key_file`` the port accepts TLS only."""
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    """PEM CA bundle; when set, every client must present a certificate it signed (mTLS)."""
    retrieval_tls_root_cert: Path | None = None
    """CA that signed RetrievalService's certificate; setting it (or a client cert) turns TLS on."""
    retrieval_tls_client_cert: Path | None = None
    """MemoryService's client certificate and key for mTLS to RetrievalService."""
    retrieval_tls_client_key: Path | None = None
    retrieval_tls_server_name: str | None = None
    """Expected name in RetrievalService's certificate when it differs from the address's host."""

    # Limits (docs/security.md lists every limit, including the fixed ones in the code).
    max_message_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    """Largest request the server accepts (``grpc.max_receive_message_length``): RESOURCE_EXHAUSTED."""
    retrieval_max_message_bytes: int = Field(default=DEFAULT_RETRIEVAL_MESSAGE_BYTES, ge=1024)
    """Largest message on the channel to RetrievalService, sent or received: set it to
    RetrievalService's ``STRATA_RETRIEVAL_MAX_MESSAGE_BYTES``. The outbox keeps each batch within
    ``strata_memory.limits.outbox_batch_bytes`` of it."""
    reindex_streams_per_tenant: int = Field(default=1, ge=0)
    """Reindex streams one tenant may run at once (an every-tenant Reindex counts as one tenant);
    beyond it Reindex fails at once with RESOURCE_EXHAUSTED (TENANT_CONCURRENCY_LIMIT). 0: no limit."""
    quotas: dict[str, int] = Field(default_factory=dict)
    """The server's default quotas, by name, over ``strata_memory.limits.QUOTA_DEFAULTS`` (JSON, e.g.
    ``STRATA_MEMORY_QUOTAS='{"agents": 500}'``); AdminService.UpdateTenantQuotas sets a tenant's own."""
    searches_per_tenant: int = Field(default=8, ge=0)
    """Searches (each embeds a query in RetrievalService) one tenant may have in flight; beyond it
    a call fails at once with RESOURCE_EXHAUSTED (reason TENANT_CONCURRENCY_LIMIT). 0: no limit."""
    admission_searches: tuple[int, int, int] = ADMISSION_POOLS["searches"]
    """SearchArchival and SearchMessages: (running at once in all, running per tenant, waiting per
    tenant). A call past its tenant's running share waits, even with capacity idle (one tenant alone:
    raise the share); waiting tenants take turns (round robin);
    past the waiting bound it fails at once (RESOURCE_EXHAUSTED, TENANT_CONCURRENCY_LIMIT). JSON in
    the environment: ``[2, 1, 8]``. Applies while ``admission`` is on."""
    admission_writes: tuple[int, int, int] = ADMISSION_POOLS["writes"]
    """The same for every method that writes (Create…, Update…, Delete…, Attach…, Detach…, appends,
    ExecuteTool, imports, Purge)."""
    admission_bulk: tuple[int, int, int] = ADMISSION_POOLS["bulk"]
    """The same for Reindex streams (held for the whole stream)."""
    admission_duty: float = Field(default=0.5, gt=0, le=1)
    """While other tenants are active (seen in the last second), the share of its time a tenant may
    keep a pool share busy: after a call that took ``d`` its share rests ``d * (1 - duty) / duty``
    (at most 1 s) before its next call in that pool starts (0.5: a rest as long as the call; 1: no
    rest). A tenant alone never rests (``strata_serving.fair_share.Pacing``)."""
    reindex_duty_cycle: float = Field(default=0.5, gt=0, le=1)
    """Share of its time a Reindex stream spends re-embedding: after each batch it pauses so other
    tenants' searches and writes get the CPU (0.5: a pause as long as the batch; 1: no pause)."""

    @field_validator("quotas")
    @classmethod
    def _known_quotas(cls, quotas: dict[str, int]) -> dict[str, int]:
        for name, value in quotas.items():
            if name not in QUOTA_DEFAULTS:
                raise ValueError(f"unknown quota {name!r}; known: {', '.join(sorted(QUOTA_DEFAULTS))}")
            if value < 0:
                raise ValueError(f"quota {name} must be 0 or more")
        return quotas

    @model_validator(mode="after")
    def _auth_needs_keys(self) -> MemorySettings:
        if self.admin_api_key is not None:
            check_key("STRATA_MEMORY_ADMIN_API_KEY", self.admin_api_key.get_secret_value())
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file go together")
        return self
