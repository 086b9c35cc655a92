"""Group commit (issue 32 item 6): writes waiting while an index commits go in its next commit
together, and each caller still returns only once its own write is committed (durable and searchable).

The mechanism alone (:class:`GroupCommit`), then through a real RetrievalService (real embedder, Edge
shard with its journal, Tantivy): concurrent upserts committed as one group are each searchable when
their call returns; a failure of a group's shared commit (the vector journal's append, injected)
fails every caller of that group and acknowledges none; a tenant's failing text commit (injected)
fails that tenant's callers only, not another tenant's in the same group; an encoder failing on one
call's text (injected) fails that call only, not the others embedded in the same run.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.embedding.protocol import Embedder, Vectors
from strata_retrieval.group_commit import GroupCommit
from strata_retrieval.main import RetrievalApp
from strata_retrieval.model import Document
from strata_retrieval.settings import RetrievalSettings
from strata_retrieval.text_tenants import TenantTextIndexes
from strata_retrieval.vectors.journal import WriteJournal

WAIT_SECONDS = 60.0
CALLS = 6  # the first, held at its text commit, and five that queue behind it


def test_writes_waiting_during_a_commit_form_one_group() -> None:
    release = threading.Event()
    groups: list[list[int]] = []

    def apply(writes: Sequence[int]) -> None:
        groups.append(list(writes))
        if len(groups) == 1:
            release.wait(WAIT_SECONDS)

    commits: GroupCommit[int] = GroupCommit(apply, name="test-commit")
    first = commits.submit(0)
    _until(lambda: groups == [[0]])
    rest = [commits.submit(i) for i in range(1, 5)]
    assert commits.counts().waiting == 4
    assert not any(done.done() for done in [first, *rest])  # nobody returns before its commit
    release.set()
    for done in [first, *rest]:
        assert done.result(WAIT_SECONDS) is None
    commits.close()
    assert groups == [[0], [1, 2, 3, 4]]
    assert (commits.counts().groups, commits.counts().writes) == (2, 5)


def test_a_failed_group_fails_each_of_its_writes_and_the_next_group_is_committed() -> None:
    release = threading.Event()
    applied: list[list[str]] = []

    def apply(writes: Sequence[str]) -> None:
        if "bad" in writes:
            raise OSError("the commit failed")
        applied.append(list(writes))
        if len(applied) == 1:
            release.wait(WAIT_SECONDS)

    commits: GroupCommit[str] = GroupCommit(apply, name="test-commit")
    first = commits.submit("first")
    _until(lambda: applied == [["first"]])
    failing = [commits.submit(write) for write in ("a", "bad", "b")]
    release.set()
    assert first.result(WAIT_SECONDS) is None
    for done in failing:
        assert isinstance(done.exception(WAIT_SECONDS), OSError)
    assert commits.submit("after").result(WAIT_SECONDS) is None
    commits.close()
    assert applied == [["first"], ["after"]]


def test_a_group_may_fail_some_of_its_writes_only() -> None:
    commits: GroupCommit[str] = GroupCommit(
        lambda writes: {i: ValueError(w) for i, w in enumerate(writes) if w.startswith("b")},
        name="test-commit",
        linger_seconds=30.0,  # the group closes by size, not by the timer
        max_group=3,
    )
    done = [commits.submit(write) for write in ("a1", "b1", "a2")]
    assert done[0].result(WAIT_SECONDS) is None
    assert isinstance(done[1].exception(WAIT_SECONDS), ValueError)
    assert done[2].result(WAIT_SECONDS) is None
    commits.close()
    assert commits.counts().groups == 1


class HeldTextCommits:
    """The text index's first commit held until ``open`` (a slow disk), so the calls behind it queue;
    a commit holding a document of a tenant in ``failing`` raises (the injected fault)."""

    def __init__(self, real: Callable[[TenantTextIndexes, Sequence[Document]], None]) -> None:
        self.real = real
        self.held = threading.Event()
        self.opened = threading.Event()
        self.calls = 0
        self.failing: set[str] = set()

    def __call__(self, index: TenantTextIndexes, documents: Sequence[Document]) -> None:
        self.calls += 1
        if self.calls == 1:
            self.held.set()
            self.opened.wait(WAIT_SECONDS)
        if any(document.scope.tenant_id in self.failing for document in documents):
            raise OSError("injected: the text index's commit failed")
        self.real(index, documents)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldTextCommits:
    commits = HeldTextCommits(TenantTextIndexes.upsert)

    def upsert(index: TenantTextIndexes, documents: Sequence[Document]) -> None:  # binds as a method
        commits(index, documents)

    monkeypatch.setattr(TenantTextIndexes, "upsert", upsert)
    return commits


class HeldEncoder:
    """The real embedder, its first batch held until ``opened`` (so the calls behind it wait to be
    embedded together), failing on any text holding ``poison`` (the injected fault)."""

    def __init__(self, real: Embedder) -> None:
        self.real = real
        self.name, self.dimension = real.name, real.dimension
        self.held, self.opened = threading.Event(), threading.Event()
        self.batches = 0

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.batches += 1
        if self.batches == 1:
            self.held.set()
            self.opened.wait(WAIT_SECONDS)
        if any("poison" in text for text in texts):
            raise ValueError("injected: the encoder failed on this text")
        return self.real.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.real.embed_query(text)


@asynccontextmanager
async def service(tmp_path: Path, embedder: Embedder) -> AsyncIterator[tuple[RetrievalApp, Any]]:
    """A real RetrievalService with enough workers for every call of a test to be in the engine at once."""
    config = RetrievalSettings(
        address="127.0.0.1:0", data_dir=tmp_path, workers=CALLS + 2, grace_seconds=0.5, log_json=False
    )
    app = RetrievalApp(config, embedder=embedder)
    await app.start()
    try:
        async with grpc.aio.insecure_channel(app.address) as channel:
            yield app, pb_grpc.RetrievalServiceStub(channel)
    finally:
        await app.stop()


def document(i: int, tenant: str, *, poison: bool = False) -> pb.Document:
    return pb.Document(
        id=f"doc-{i}",
        text=f"note {i} mentions the word marker{i} and a garden" + (" poison" if poison else ""),
        kind=pb.DOCUMENT_KIND_PASSAGE,
        scope=pb.Scope(tenant_id=tenant, archive_id="archive"),
    )


async def upsert_then_read(
    stub: Any, i: int, tenant: str, *, poison: bool = False
) -> tuple[bool, list[str], list[str]]:
    """Upsert one document; at once after the call returns, whether a full-text search finds it and
    which legs hold it. (False, [], []) read the same way when the call failed."""
    request = pb.UpsertDocumentsRequest(documents=[document(i, tenant, poison=poison)])
    try:
        await stub.UpsertDocuments(request, timeout=90)
    except grpc.aio.AioRpcError:
        acknowledged = False
    else:
        acknowledged = True
    found = await stub.Search(
        pb.SearchRequest(
            query=f"marker{i}", mode=pb.SEARCH_MODE_FTS, top_k=5, filter=pb.DocumentFilter(tenant_id=tenant)
        )
    )
    legs = await stub.FindDocuments(
        pb.FindDocumentsRequest(ids=pb.DocumentIds(tenant_id=tenant, ids=[f"doc-{i}"]))
    )
    assert not acknowledged or [hit.document.id for hit in found.hits] == [f"doc-{i}"]
    return acknowledged, list(legs.vector_ids), list(legs.text_ids)


async def queued_behind_a_held_commit(
    app: RetrievalApp, stub: Any, held: HeldTextCommits, tenants: Sequence[str]
) -> list[tuple[bool, list[str], list[str]]]:
    """Call 0 is held at its text commit; calls 1.. (one per tenant in ``tenants[1:]``) queue behind it
    in both indexes; then the commit goes on. Each call's outcome as :func:`upsert_then_read` reads it."""
    assert app.engine is not None
    engine = app.engine
    calls = [asyncio.create_task(upsert_then_read(stub, 0, tenants[0]))]
    await asyncio.to_thread(held.held.wait, WAIT_SECONDS)
    calls += [asyncio.create_task(upsert_then_read(stub, i, t)) for i, t in enumerate(tenants) if i]
    queued = len(tenants) - 1
    await asyncio.to_thread(
        _until,
        lambda: (
            (engine.commit_counts()["text"].waiting, engine.commit_counts()["vector"].waiting)
            == (queued, queued)
        ),
    )
    assert not any(call.done() for call in calls)  # nobody has returned before its commit
    held.opened.set()
    return await asyncio.gather(*calls)


async def test_concurrent_upserts_committed_together_are_each_searchable_when_their_call_returns(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, held: HeldTextCommits
) -> None:
    async with service(tmp_path, embedder) as (app, stub):
        assert app.engine is not None
        outcomes = await queued_behind_a_held_commit(app, stub, held, ["t"] * CALLS)
        for i, (acknowledged, vector_ids, text_ids) in enumerate(outcomes):
            assert acknowledged
            assert vector_ids == text_ids == [f"doc-{i}"]
        counts = app.engine.commit_counts()
        assert (counts["text"].groups, counts["text"].writes) == (2, CALLS)  # five writes, one commit
        assert (counts["vector"].groups, counts["vector"].writes) == (2, CALLS)  # and one journal fsync
        assert held.calls == 2


async def test_a_failed_shared_commit_fails_every_caller_of_its_group(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, held: HeldTextCommits, monkeypatch: pytest.MonkeyPatch
) -> None:
    appends = 0
    real_append = WriteJournal.append

    def failing_second_append(journal: WriteJournal, record: dict[str, Any]) -> int:
        nonlocal appends
        appends += 1
        if appends == 2:  # the second group's one append: the fault every caller of it shares
            raise OSError("injected: the vector journal's fsync failed")
        return real_append(journal, record)

    monkeypatch.setattr(WriteJournal, "append", failing_second_append)
    async with service(tmp_path, embedder) as (app, stub):
        outcomes = await queued_behind_a_held_commit(app, stub, held, ["t"] * CALLS)
        assert outcomes[0] == (True, ["doc-0"], ["doc-0"])
        for acknowledged, vector_ids, _ in outcomes[1:]:
            assert not acknowledged  # nothing of the group was acknowledged
            assert vector_ids == []
        retried = await upsert_then_read(stub, 3, "t")  # the service goes on; a retry converges
        assert retried == (True, ["doc-3"], ["doc-3"])


async def test_a_tenants_failing_commit_fails_no_other_tenants_write_in_its_group(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, held: HeldTextCommits
) -> None:
    held.failing.add("tenant-b")
    tenants = ["tenant-a", "tenant-a", "tenant-b", "tenant-a", "tenant-b", "tenant-a"]
    async with service(tmp_path, embedder) as (app, stub):
        outcomes = await queued_behind_a_held_commit(app, stub, held, tenants)
        for i, (tenant, (acknowledged, vector_ids, text_ids)) in enumerate(
            zip(tenants, outcomes, strict=True)
        ):
            if tenant == "tenant-b":
                assert (acknowledged, vector_ids, text_ids) == (False, [], [])
            else:
                assert (acknowledged, vector_ids, text_ids) == (True, [f"doc-{i}"], [f"doc-{i}"])


async def test_an_encoder_failing_on_one_calls_text_fails_that_call_only(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    encoder = HeldEncoder(embedder)
    async with service(tmp_path, encoder) as (app, stub):
        assert app.engine is not None
        engine = app.engine
        calls = [asyncio.create_task(upsert_then_read(stub, 0, "t"))]
        await asyncio.to_thread(encoder.held.wait, WAIT_SECONDS)
        calls += [asyncio.create_task(upsert_then_read(stub, i, "t", poison=i == 2)) for i in range(1, 5)]
        await asyncio.to_thread(_until, lambda: engine.commit_counts()["embedding"].waiting == 4)
        encoder.opened.set()
        outcomes = await asyncio.gather(*calls)
        for i, (acknowledged, vector_ids, _) in enumerate(outcomes):
            assert (acknowledged, vector_ids) == ((False, []) if i == 2 else (True, [f"doc-{i}"]))
        counts = engine.commit_counts()["embedding"]
        assert (counts.groups, counts.writes) == (2, 5)  # calls 1-4 went to the encoder together
        assert encoder.batches == 2 + 4  # the failed run, then each of its calls alone


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not hold in time")
        time.sleep(0.005)
