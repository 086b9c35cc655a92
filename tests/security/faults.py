"""Crash and outage scenarios, each measured as one row of the fault matrix.

Each scenario starts real services (in-process, or as processes it can ``kill -9``), injects one
fault, recovers, and counts writes attempted, acknowledged and present afterwards. The tests in
``test_fault_matrix.py`` assert on the rows; ``scripts/fault_matrix.py`` prints them as a table.
Store faults are injected through SQLite itself (``PRAGMA query_only`` / ``max_page_count``),
because the tests run as root, for whom a read-only folder is still writable.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import field_mask_pb2
from sqlalchemy import event
from sqlalchemy.engine import Connection

from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from tests.memory_process import MemoryProcess, free_port, wait_serving
from tests.security.integrity import store_problems


@dataclass
class Row:
    """One fault: what was attempted, acknowledged and found afterwards, and what else was seen."""

    fault: str
    attempted: int = 0
    acknowledged: int = 0
    present: int = 0
    notes: str = ""
    refusals: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def refused(self, code: grpc.StatusCode) -> None:
        self.refusals[code.name] = self.refusals.get(code.name, 0) + 1


def code_of(error: BaseException) -> grpc.StatusCode:
    return error.code() if isinstance(error, grpc.aio.AioRpcError) else grpc.StatusCode.UNKNOWN


async def wait_until(predicate: Callable[[], Any], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await predicate():
            return True
        await asyncio.sleep(0.25)
    return False


async def all_messages(stub: MemoryStub, agent_id: str) -> list[str]:
    contents, token = [], ""
    while True:
        page = await stub.ListMessages(
            api.ListMessagesRequest(agent_id=agent_id, page_size=1000, page_token=token), timeout=30
        )
        contents += [m.content for m in page.messages]
        if not (token := page.next_page_token):
            return contents


async def block_lines(stub: MemoryStub, agent_id: str, label: str) -> list[str]:
    block = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent_id, label=label)))
    return [line for line in block.value.split("\n") if line]


# kill -9 of MemoryService under write load ---------------------------------------------------------


async def memory_kill_9_under_write_load(root: Path, *, writers: int = 8, run_seconds: float = 2.0) -> Row:
    """Writers append messages and block lines; the process is killed mid-load, then restarted."""
    row = Row("kill -9 MemoryService during writes")
    database = root / "kill9.sqlite3"
    first = MemoryProcess(f"sqlite:///{database}")
    attempted: set[str] = set()
    acknowledged: set[str] = set()
    try:
        await first.wait_serving()
        async with grpc.aio.insecure_channel(first.address) as channel:
            stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="load")))

            async def writer(k: int) -> None:
                for i in range(10_000):
                    content = f"w{k}-{i}"
                    attempted.add(content)
                    try:
                        if i % 2:
                            message = pb.Message(role=pb.MESSAGE_ROLE_USER, content=content)
                            await stub.AppendMessages(
                                api.AppendMessagesRequest(agent_id=agent.id, messages=[message]), timeout=5
                            )
                        else:
                            arguments = json.dumps({"label": "human", "content": content})
                            run = await stub.ExecuteTool(
                                api.ExecuteToolRequest(
                                    agent_id=agent.id, tool_name="core_memory_append", arguments=arguments
                                ),
                                timeout=5,
                            )
                            if not run.ok:
                                return
                    except grpc.aio.AioRpcError:
                        return
                    acknowledged.add(content)

            tasks = [asyncio.create_task(writer(k)) for k in range(writers)]
            await asyncio.sleep(run_seconds)
            first.kill()
            await asyncio.gather(*tasks)
    finally:
        if first.process.poll() is None:
            first.kill()
    second = MemoryProcess(f"sqlite:///{database}")
    try:
        await second.wait_serving()
        async with grpc.aio.insecure_channel(second.address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            found = set(await all_messages(stub, agent.id)) | set(await block_lines(stub, agent.id, "human"))
    finally:
        second.kill()
    found.discard("")
    row.attempted, row.acknowledged = len(attempted), len(acknowledged)
    row.present = len(found & attempted)
    if lost := acknowledged - found:
        row.problems.append(f"{len(lost)} acknowledged writes lost, e.g. {sorted(lost)[:3]}")
    if torn := found - attempted - {"Human"}:  # the default human block's first line
        row.problems.append(f"{len(torn)} values that were never written (torn?): {sorted(torn)[:3]}")
    with sqlite3.connect(database) as conn:
        row.problems += store_problems(conn)
    row.notes = f"{writers} writers, killed after {run_seconds:.0f} s"
    return row


# kill -9 of RetrievalService during indexing ------------------------------------------------------


class RetrievalProcess:
    """RetrievalService as a child process on a fixed port, so it can be killed and restarted."""

    def __init__(self, data_dir: Path, model_cache: Path, port: int) -> None:
        self.address = f"127.0.0.1:{port}"
        env = {
            **os.environ,
            "STRATA_RETRIEVAL_ADDRESS": self.address,
            "STRATA_RETRIEVAL_DATA_DIR": str(data_dir),
            "STRATA_RETRIEVAL_MODEL_CACHE_DIR": str(model_cache),
            "STRATA_RETRIEVAL_LOG_JSON": "false",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "strata_retrieval.main"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    async def wait_serving(self, within: float = 90.0) -> None:
        await wait_serving(self.address, within)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


async def indexed(address: str, tenant: str) -> int:
    options = [("grpc.use_local_subchannel_pool", 1)]
    async with grpc.aio.insecure_channel(address, options=options) as channel:
        stub: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        stats = await stub.Stats(rpb.StatsRequest(filter=rpb.DocumentFilter(tenant_id=tenant)), timeout=10)
        return int(stats.document_count)


@asynccontextmanager
async def memory_server(
    database: Path, retrieval_address: str, **settings: Any
) -> AsyncIterator[MemoryServer]:
    server = await start_memory_server(
        MemorySettings(
            address="127.0.0.1:0",
            database_url=f"sqlite:///{database}",
            retrieval_address=retrieval_address,
            outbox_max_backoff_seconds=0.5,
            retrieval_timeout_seconds=5.0,
            log_json=False,
            **settings,
        )
    )
    try:
        yield server
    finally:
        await server.stop(0)


async def retrieval_kill_9_during_indexing(root: Path, model_cache: Path, *, batches: int = 10) -> Row:
    """Passages are written while RetrievalService is killed and restarted; the outbox must catch up."""
    row = Row("kill -9 RetrievalService during indexing")
    port = free_port()
    data_dir = root / "retrieval-kill9"
    retrieval = RetrievalProcess(data_dir, model_cache, port)
    try:
        await retrieval.wait_serving()
        async with (
            memory_server(root / "rk9.sqlite3", retrieval.address) as memory,
            grpc.aio.insecure_channel(memory.address) as channel,
        ):
            stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="indexing")))
            for b in range(batches):
                if b == batches // 3:
                    retrieval.kill()
                if b == 2 * batches // 3:
                    retrieval = RetrievalProcess(data_dir, model_cache, port)
                passages = [pb.Passage(text=f"batch {b} fact {i} about the harbour") for i in range(20)]
                row.attempted += len(passages)
                await stub.CreatePassages(api.CreatePassagesRequest(agent_id=agent.id, passages=passages))
                row.acknowledged += len(passages)
            await retrieval.wait_serving()

            async def caught_up() -> bool:
                return await indexed(retrieval.address, "default") >= row.acknowledged

            started = time.monotonic()
            if not await wait_until(caught_up, within=120):
                row.problems.append("the outbox did not catch up within 120 s")
            row.present = await indexed(retrieval.address, "default")
            search = await stub.SearchArchival(
                api.SearchArchivalRequest(agent_id=agent.id, query="batch 9 fact 3 harbour", top_k=3)
            )
            if not search.hits:
                row.problems.append("search found nothing after recovery")
        if row.present != row.acknowledged:
            row.problems.append(
                f"indexed {row.present} documents for {row.acknowledged} passages (duplicates?)"
            )
        row.notes = f"caught up {time.monotonic() - started:.1f} s after restart; no duplicates"
    finally:
        if retrieval.process.poll() is None:
            retrieval.kill()
    return row


# RetrievalService down ------------------------------------------------------------------------------


async def retrieval_down(root: Path, *, writes: int = 20) -> Row:
    """Nothing listens at RetrievalService's address: writes succeed, searches fail fast."""
    row = Row("RetrievalService down")
    async with (
        memory_server(root / "down.sqlite3", f"127.0.0.1:{free_port()}") as memory,
        grpc.aio.insecure_channel(memory.address) as channel,
    ):
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="down")))
        for i in range(writes):
            row.attempted += 1
            message = pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"while down {i}")
            await stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id, messages=[message]))
            row.acknowledged += 1
        row.present = len(await all_messages(stub, agent.id))
        started = time.monotonic()
        try:
            await stub.SearchMessages(api.SearchMessagesRequest(agent_id=agent.id, query="down"), timeout=30)
            row.problems.append("search succeeded with RetrievalService down")
        except grpc.aio.AioRpcError as error:
            row.refused(error.code())
            elapsed = time.monotonic() - started
            if error.code() != grpc.StatusCode.UNAVAILABLE or "RetrievalService" not in (
                error.details() or ""
            ):
                row.problems.append(f"search answered {error.code().name}: {error.details()}")
            if elapsed > 12:
                row.problems.append(f"search took {elapsed:.1f} s to fail")
            row.notes = f"search: UNAVAILABLE in {elapsed * 1000:.0f} ms, message names RetrievalService"
    return row


# The store refuses writes (read-only folder, full disk) --------------------------------------------


def _inject(engine: Any, pragma: str) -> Callable[[Connection], None]:
    def on_begin(connection: Connection) -> None:
        connection.exec_driver_sql(pragma)

    event.listen(engine, "begin", on_begin)
    return on_begin


async def store_refuses_writes(root: Path, kind: str) -> Row:
    """``kind`` "read-only" or "disk full": every write refused with a clear status, none half-made."""
    row = Row(f"data folder {kind}")
    database = root / f"{kind.replace(' ', '-')}.sqlite3"
    async with memory_server(database, f"127.0.0.1:{free_port()}") as memory:
        writer = memory.database._writer  # fault injection into the store's own engine
        async with grpc.aio.insecure_channel(memory.address) as channel:
            stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="disk")))
            before = await block_lines(stub, agent.id, "human")
            if kind == "read-only":
                fault = _inject(writer, "PRAGMA query_only = 1")
            else:
                (pages,) = sqlite3.connect(database).execute("PRAGMA page_count").fetchone()
                fault = _inject(writer, f"PRAGMA max_page_count = {pages}")
            big = "x" * 200_000  # needs new pages: a full disk cannot hold it
            for i in range(10):
                row.attempted += 1
                try:
                    message = pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"{i} {big}")
                    await stub.AppendMessages(
                        api.AppendMessagesRequest(agent_id=agent.id, messages=[message])
                    )
                    arguments = json.dumps({"label": "human", "content": f"fact {i} {big[:1000]}"})
                    await stub.ExecuteTool(
                        api.ExecuteToolRequest(
                            agent_id=agent.id, tool_name="core_memory_append", arguments=arguments
                        )
                    )
                    row.acknowledged += 1
                except grpc.aio.AioRpcError as error:
                    row.refused(error.code())
                    if "store" not in (error.details() or ""):
                        row.problems.append(f"unclear refusal: {error.code().name} {error.details()}")
            after_fault = await block_lines(stub, agent.id, "human")  # reads keep working
            event.remove(writer, "begin", fault)
            writer.dispose()  # the fault is repaired: fresh connections without the pragma
            message = pb.Message(role=pb.MESSAGE_ROLE_USER, content="after the fault")
            await stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id, messages=[message]))
            row.present = sum(1 for m in await all_messages(stub, agent.id) if m.endswith(big))
            if after_fault != before:
                row.problems.append("the block changed while every write was refused")
    with sqlite3.connect(database) as conn:
        row.problems += store_problems(conn)
    if row.present != row.acknowledged:
        row.problems.append(f"{row.present} writes present for {row.acknowledged} acknowledged")
    codes = ", ".join(f"{n} {c}" for c, n in row.refusals.items())
    row.notes = f"refused: {codes or 'none'}; reads served; writes resume once fixed"
    return row


# 64 concurrent writers on one block ---------------------------------------------------------------


async def concurrent_writers(root: Path, *, writers: int = 64, etags: bool) -> Row:
    """``writers`` tasks add one line each to the same block, blindly (a tool append) or by etag."""
    row = Row(f"{writers} writers on one block, {'with' if etags else 'without'} etags")
    async with (
        memory_server(root / f"writers-{etags}.sqlite3", f"127.0.0.1:{free_port()}") as memory,
        grpc.aio.insecure_channel(memory.address) as channel,
    ):
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="race")))
        ref = pb.BlockRef(agent_id=agent.id, label="human")

        async def blind(k: int) -> bool:
            arguments = json.dumps({"label": "human", "content": f"writer {k}"})
            run = await stub.ExecuteTool(
                api.ExecuteToolRequest(agent_id=agent.id, tool_name="core_memory_append", arguments=arguments)
            )
            return run.ok

        async def conditional(k: int) -> bool:
            for _ in range(500):
                block = await stub.GetBlock(api.GetBlockRequest(block=ref))
                try:
                    await stub.UpdateBlock(
                        api.UpdateBlockRequest(
                            ref=ref,
                            block=pb.Block(value=f"{block.value}\nwriter {k}"),
                            update_mask=field_mask_pb2.FieldMask(paths=["value"]),
                            etag=block.etag,
                        )
                    )
                except grpc.aio.AioRpcError as error:
                    row.refused(error.code())
                    if error.code() != grpc.StatusCode.ABORTED:
                        return False
                else:
                    return True
            return False

        write = conditional if etags else blind
        row.attempted = writers
        results = await asyncio.gather(*(write(k) for k in range(writers)), return_exceptions=True)
        row.acknowledged = sum(1 for result in results if result is True)
        lines = await block_lines(stub, agent.id, "human")
        row.present = len({line for line in lines if line.startswith("writer ")})
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            row.problems.append(f"{len(failures)} writers failed: {failures[0]!r}")
        if set(row.refusals) - {"ABORTED"}:
            row.problems.append(f"refusals other than ABORTED: {row.refusals}")
        written = [line for line in lines if line.startswith("writer ")]
        if row.present != row.acknowledged or len(written) != row.acknowledged:
            row.problems.append(
                f"{row.present} lines present for {row.acknowledged} acknowledged (lost update)"
            )
    retries = row.refusals.get("ABORTED", 0)
    row.notes = f"{retries} ABORTED, each retried after a re-read" if etags else "no refusals needed"
    return row


def table(rows: Sequence[Row]) -> str:
    """The matrix as a Markdown table."""
    lines = [
        "| fault | attempted | acknowledged | present after recovery | result | notes |",
        "|---|---:|---:|---:|---|---|",
    ]
    for row in rows:
        verdict = "ok" if not row.problems else "FAIL: " + "; ".join(row.problems)
        figures = f"{row.attempted} | {row.acknowledged} | {row.present}"
        lines.append(f"| {row.fault} | {figures} | {verdict} | {row.notes} |")
    return "\n".join(lines)
