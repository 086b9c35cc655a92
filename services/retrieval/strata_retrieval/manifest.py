"""The index manifest: which embedding model built the indexes in a data directory.

Vectors from two models are not comparable, so an index is pinned to the model (name and dimension)
that built it. Opening it with another model is refused until the index is rebuilt: delete the data
directory (or start once with ``STRATA_RETRIEVAL_REBUILD_ON_MODEL_CHANGE=true``) and re-upsert, which
MemoryService's reindex does from its store.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from strata_retrieval.errors import EmbeddingModelMismatch

MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True)
class IndexManifest:
    embedding_model: str
    embedding_dimension: int


def read_manifest(data_dir: Path) -> IndexManifest | None:
    path = data_dir / MANIFEST_NAME
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    return IndexManifest(
        embedding_model=str(raw["embedding_model"]), embedding_dimension=int(raw["embedding_dimension"])
    )


def write_manifest(data_dir: Path, manifest: IndexManifest) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = data_dir / f"{MANIFEST_NAME}.tmp"
    tmp.write_text(json.dumps(asdict(manifest), indent=2) + "\n")
    tmp.replace(data_dir / MANIFEST_NAME)


def check_manifest(data_dir: Path, expected: IndexManifest) -> None:
    """Record ``expected`` for a new data directory; refuse one built with another model."""
    found = read_manifest(data_dir)
    if found is None:
        write_manifest(data_dir, expected)
        return
    if found != expected:
        raise EmbeddingModelMismatch(
            f"the index in {data_dir} was built with embedding model {found.embedding_model!r} "
            f"({found.embedding_dimension}-d) but the service is configured with "
            f"{expected.embedding_model!r} "
            f"({expected.embedding_dimension}-d); rebuild the index (delete it, or start once with "
            "STRATA_RETRIEVAL_REBUILD_ON_MODEL_CHANGE=true, then reindex)",
            metadata={
                "index_model": found.embedding_model,
                "index_dimension": found.embedding_dimension,
                "configured_model": expected.embedding_model,
                "configured_dimension": expected.embedding_dimension,
            },
        )
