"""Rebuild the server engine's collection whole, behind its alias: ``python -m strata_retrieval.rebuild``.

Reads the same ``STRATA_RETRIEVAL_*`` settings as the service (``VECTOR_BACKEND=server``). Builds the
next generation from the serving one's documents (BM25 ``avg_len`` measured again unless configured;
dense vectors copied, or re-embedded when the configured model differs), swaps the alias onto it and
drops the old generation. Replicas serving the collection keep answering from the old generation
until the swap. Writes they take during the build reach only the old one, so run MemoryService's
every-tenant Reindex afterwards (it converges in place), or run this while ingestion is paused.
One rebuild at a time per collection: beside another (this command's, or a replica's at start-up) it
exits with the reason, having changed nothing.
"""

from __future__ import annotations

import sys

from strata_retrieval.errors import RebuildInProgress
from strata_retrieval.main import load_embedder, open_engine
from strata_retrieval.settings import RetrievalSettings, VectorBackend


def main() -> None:
    settings = RetrievalSettings()
    if settings.vector_backend is not VectorBackend.SERVER:
        sys.exit("STRATA_RETRIEVAL_VECTOR_BACKEND must be 'server': only its collection has generations")
    engine = open_engine(
        settings.model_copy(update={"rebuild_on_model_change": True}), load_embedder(settings)
    )
    try:
        sys.stdout.write(f"{settings.qdrant_collection} now served by {engine.rebuild()}\n")
    except RebuildInProgress as refusal:
        sys.exit(f"not rebuilt: {refusal}")
    finally:
        engine.close()


if __name__ == "__main__":
    main()
