"""Requests cut by bytes, and refusals isolated to the documents that cause them."""

from __future__ import annotations

import grpc
import pytest

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.delivery import byte_batches, isolate


def document(i: int, chars: int) -> rpb.Document:
    return rpb.Document(id=f"passage-{i}", text="x" * chars, scope=rpb.Scope(tenant_id="t"))


def test_batches_stay_within_the_byte_budget_and_keep_the_order() -> None:
    documents = [document(i, 3_000) for i in range(10)]
    batches, refused = byte_batches(documents, 10_000, 512)
    assert refused == []
    assert [d.id for batch in batches for d in batch] == [d.id for d in documents]
    assert all(sum(d.ByteSize() + 10 for d in batch) <= 10_000 for batch in batches)
    assert [len(batch) for batch in batches] == [3, 3, 3, 1]


def test_a_document_larger_than_any_request_is_refused_alone_and_finally() -> None:
    documents = [document(0, 100), document(1, 20_000), document(2, 100)]
    batches, refused = byte_batches(documents, 10_000, 512)
    assert [[d.id for d in batch] for batch in batches] == [["passage-0", "passage-2"]]
    assert [(r.document_id, r.final) for r in refused] == [("passage-1", True)]
    assert "10000" in refused[0].reason


def test_batches_also_hold_at_most_the_document_count() -> None:
    batches, _ = byte_batches([document(i, 1) for i in range(5)], 10_000, 2)
    assert [len(batch) for batch in batches] == [2, 2, 1]


class Refusal(grpc.aio.AioRpcError):
    def __init__(self) -> None:
        super().__init__(
            grpc.StatusCode.INVALID_ARGUMENT, grpc.aio.Metadata(), grpc.aio.Metadata(), "bad item", None
        )


async def test_a_refused_request_is_split_until_each_refused_item_is_alone() -> None:
    calls: list[list[int]] = []

    async def send(items: list[int]) -> None:
        calls.append(items)
        if 3 in items or 6 in items:
            raise Refusal()

    refused = await isolate(list(range(8)), send)
    assert [item for item, _ in refused] == [3, 6]
    assert all(reason == "INVALID_ARGUMENT: bad item" for _, reason in refused)
    accepted = [i for call in calls for i in call if not (3 in call or 6 in call)]
    assert sorted(accepted) == [0, 1, 2, 4, 5, 7]
    assert len(calls) <= 2 * 8 - 1


async def test_transport_failures_are_not_refusals() -> None:
    async def send(items: list[int]) -> None:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError):
        await isolate([1, 2], send)
