"""docs/api.md and docs/errors.md are what scripts/proto_docs.py makes of today's protos."""

from __future__ import annotations

from scripts import proto_docs
from scripts.proto_descriptors import load


def test_generated_docs_match_the_protos() -> None:
    assert proto_docs.main(["--check"]) == 0, "docs/api.md or docs/errors.md is stale: run `make docs`"


def test_api_doc_carries_the_contracts_written_in_comments() -> None:
    text = proto_docs.api_markdown(load())
    assert "| `arguments` | `string` | JSON-encoded arguments" in text
    assert (
        "| `Reindex` | `strata.memory.v1.ReindexRequest` | stream `strata.memory.v1.ReindexProgress` |"
        in text
    )


def test_errors_doc_lists_each_reason_with_its_status() -> None:
    text = proto_docs.errors_markdown(load())
    assert "| `ETAG_MISMATCH` | `ABORTED` | resource, expected_etag, actual_etag. |" in text
    assert "| `EMBEDDING_MODEL_MISMATCH` | `FAILED_PRECONDITION` |" in text
