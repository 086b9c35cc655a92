"""RetrievalService on a full disk: writes refused with RESOURCE_EXHAUSTED, reads served, no crash;
MemoryService's outbox keeps what was refused and indexes it once space is freed (issue 14, item 8).

Before the fix the process died with SIGBUS at the first write after the disk filled (its engines
write through memory maps into sparse files). So RetrievalService runs as a child process, in a
mount namespace of its own (``unshare --mount``) whose data folder is a small tmpfs mounted there:
nothing is mounted on the host, and the mount disappears with the process. The test reaches that
tmpfs through ``/proc/<pid>/root`` and fills it with a file, as another writer on the disk would.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import BinaryIO

import grpc
import pytest

from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as mpb
from strata.retrieval.v1 import retrieval_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_serving.status import error_info_from
from tests.memory_process import free_port, wait_serving
from tests.retrieval.service_fixtures import MEMORIES, TENANT, passage, search
from tests.security.faults import indexed, memory_server, wait_until

TMPFS_SIZE = "48m"
RESERVE_BYTES = 4 * 1024 * 1024
_MOUNT_THEN_EXEC = 'mount -t tmpfs -o size="$1" strata-disk-full "$2" && shift 2 && exec "$@"'


class RetrievalOnTmpfs:
    """``python -m strata_retrieval.main`` with its data folder on a private tmpfs."""

    def __init__(self, mount_point: Path, model_cache: Path) -> None:
        mount_point.mkdir(parents=True)
        self.mount_point = mount_point
        self.address = f"127.0.0.1:{free_port()}"
        env = {
            **os.environ,
            "STRATA_RETRIEVAL_ADDRESS": self.address,
            "STRATA_RETRIEVAL_DATA_DIR": str(mount_point / "data"),
            "STRATA_RETRIEVAL_MODEL_CACHE_DIR": str(model_cache),
            "STRATA_RETRIEVAL_MIN_FREE_DISK_BYTES": str(RESERVE_BYTES),
            "STRATA_RETRIEVAL_LOG_JSON": "false",
        }
        as_root = [] if os.geteuid() == 0 else ["--map-root-user"]  # a user namespace may mount tmpfs
        command = ["unshare", "--mount", *as_root, "sh", "-c", _MOUNT_THEN_EXEC, "sh", TMPFS_SIZE]
        self.process = subprocess.Popen(
            [*command, str(mount_point), sys.executable, "-m", "strata_retrieval.main"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    @property
    def disk(self) -> Path:
        """The tmpfs as the service sees it, reached from outside its mount namespace."""
        return Path(f"/proc/{self.process.pid}/root") / self.mount_point.relative_to("/")

    async def wait_serving(self) -> None:
        await wait_serving(self.address, 90.0)

    @contextlib.contextmanager
    def full(self) -> Iterator[None]:
        """Fill the tmpfs until the kernel refuses another byte; free it again on exit."""
        filler = self.disk / "filler"
        chunk = b"\xff" * (256 * 1024)
        for size in (len(chunk), 4096, 1):  # down to the last partial page
            with filler.open("ab", buffering=0) as out:
                while _wrote(out, chunk[:size]):
                    pass
        assert os.statvfs(self.disk).f_bavail == 0
        try:
            yield
        finally:
            if self.process.poll() is None:  # a crashed service took its mount namespace with it
                filler.unlink()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _wrote(out: BinaryIO, data: bytes) -> bool:
    """Append ``data``; False once the disk is full (ENOSPC), any other error raises."""
    try:
        out.write(data)
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        return False
    return True


@asynccontextmanager
async def retrieval_on_tmpfs(mount_point: Path, model_cache: Path) -> AsyncIterator[RetrievalOnTmpfs]:
    retrieval = RetrievalOnTmpfs(mount_point, model_cache)
    try:
        await retrieval.wait_serving()
        yield retrieval
    finally:
        retrieval.stop()


def assert_disk_full(refusal: grpc.aio.AioRpcError) -> None:
    assert refusal.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refusal.details()
    info = error_info_from(refusal.trailing_metadata())
    assert info is not None
    assert info.reason == "INDEX_DISK_FULL"
    assert "disk is full" in (refusal.details() or "")
    assert "Searches keep working" in (refusal.details() or "")


@pytest.mark.slow
async def test_a_full_disk_refuses_writes_keeps_serving_reads_and_takes_writes_once_freed(
    tmp_path: Path, model_cache: Path, embedder: OnnxSentenceEmbedder
) -> None:
    async with (
        retrieval_on_tmpfs(tmp_path / "disk", model_cache) as retrieval,
        grpc.aio.insecure_channel(retrieval.address) as channel,
    ):
        stub: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        await stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        late = [passage(f"late-{i}", f"a note written on a full disk, number {i}") for i in range(20)]
        with retrieval.full():
            for documents in (late, late[:1]):
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=documents))
                assert_disk_full(refused.value)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.DeleteDocuments(
                    pb.DeleteDocumentsRequest(ids=pb.DocumentIds(tenant_id=TENANT, ids=["p-tea"]))
                )
            assert_disk_full(refused.value)
            assert retrieval.process.poll() is None  # no crash
            for mode in (pb.SEARCH_MODE_HYBRID, pb.SEARCH_MODE_FTS, pb.SEARCH_MODE_VECTOR):
                hits = (await stub.Search(search("green tea every morning", mode))).hits
                assert "p-tea" in [hit.document.id for hit in hits]
            assert await indexed(retrieval.address, TENANT) == len(MEMORIES)  # nothing half-written
        await stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=late))
        assert await indexed(retrieval.address, TENANT) == len(MEMORIES) + len(late)
        hits = (await stub.Search(search("note written on a full disk number 7", pb.SEARCH_MODE_FTS))).hits
        assert hits[0].document.id == "late-7"
        assert retrieval.process.poll() is None


def _refused_attempts(database: Path) -> int:
    """Delivery attempts of MemoryService's index jobs that ended in a disk-full refusal."""
    with contextlib.closing(sqlite3.connect(database)) as conn:
        rows = conn.execute("SELECT attempts, last_error FROM index_jobs").fetchall()
    return sum(attempts for attempts, error in rows if "disk is full" in error)


@pytest.mark.slow
async def test_the_outbox_keeps_what_a_full_disk_refused_and_indexes_it_once_space_is_freed(
    tmp_path: Path, model_cache: Path, embedder: OnnxSentenceEmbedder
) -> None:
    database = tmp_path / "memory.sqlite3"
    async with (
        retrieval_on_tmpfs(tmp_path / "disk", model_cache) as retrieval,
        memory_server(database, retrieval.address) as memory,
        grpc.aio.insecure_channel(memory.address) as channel,
    ):
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await stub.CreateAgent(api.CreateAgentRequest(agent=mpb.Agent(name="disk")))
        before = [mpb.Passage(text=f"the harbour opens at {h} o'clock") for h in (6, 7)]
        await stub.CreatePassages(
            api.CreatePassagesRequest(agent_id=agent.id, passages=before, wait_searchable=True)
        )
        during = [mpb.Passage(text=f"the lighthouse keeper's dog is number {i}") for i in range(5)]
        with retrieval.full():
            await stub.CreatePassages(api.CreatePassagesRequest(agent_id=agent.id, passages=during))

            async def refused_twice() -> bool:
                return await asyncio.to_thread(_refused_attempts, database) >= 2

            assert await wait_until(refused_twice, within=60)
            assert retrieval.process.poll() is None
            found = await stub.SearchArchival(
                api.SearchArchivalRequest(agent_id=agent.id, query="harbour opens", top_k=2)
            )
            assert len(found.hits) == len(before)  # reads served while the disk is full

        async def caught_up() -> bool:
            return await indexed(retrieval.address, "default") == len(before) + len(during)

        assert await wait_until(caught_up, within=60)
        found = await stub.SearchArchival(
            api.SearchArchivalRequest(agent_id=agent.id, query="lighthouse keeper's dog number 3", top_k=1)
        )
        assert "number 3" in found.hits[0].passage.text
