"""What one memory edit costs as an ``on_edit`` agent's conversations grow (issue 14 item 5).

A real MemoryService (in this process, SQLite in a temporary folder, no RetrievalService) holds one
agent with a block of ``--block-chars`` characters and 1, 100 and 1,000 conversations; each edit is an
``UpdateBlock`` of that block through gRPC, which recompiles the agent's prompts in its transaction.
Reported per conversation count: the median and mean wall time of ``--edits`` edits, and the SQL
statements one edit sends about prompts and conversations.

    .venv/bin/python -m bench.perf.edit_cost            # writes bench/results/edit_cost.json and prints it
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.field_mask_pb2 import FieldMask
from sqlalchemy import event
from sqlalchemy.engine import Engine

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings

RESULTS = Path(__file__).parents[1] / "results" / "edit_cost.json"
_PROMPT_TABLES = ("system_prompts", "prompt_snapshots", "conversations")


async def measure(conversations: int, *, block_chars: int, edits: int, folder: Path) -> dict[str, Any]:
    settings = MemorySettings(
        address="127.0.0.1:0",
        database_url=f"sqlite:///{folder}/edit-cost-{conversations}.sqlite3",
        retrieval_address="127.0.0.1:9",  # unreachable: edits never wait on indexing
    )
    server = await start_memory_server(settings)
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            agent = await stub.CreateAgent(
                api.CreateAgentRequest(
                    agent=pb.Agent(name="bench"),
                    blocks=[pb.Block(label="notes", value="", limit=block_chars + 10)],
                )
            )
            for i in range(conversations - 1):  # "default" is the first
                await stub.CreateConversation(
                    api.CreateConversationRequest(agent_id=agent.id, conversation_id=f"c{i}")
                )
            await _edit(stub, agent.id, "x" * block_chars)  # the big value, before timing
            times, statements = [], 0
            for n in range(edits):
                value = f"{n:09d}" + "y" * (block_chars - 9)
                seen: list[str] = []
                listener = _recorder(seen)
                event.listen(Engine, "before_cursor_execute", listener)
                started = time.perf_counter()
                await _edit(stub, agent.id, value)
                times.append(time.perf_counter() - started)
                event.remove(Engine, "before_cursor_execute", listener)
                statements = len(seen)
            prompt = await stub.GetSystemPrompt(
                api.GetSystemPromptRequest(agent_id=agent.id, conversation_id=f"c{conversations - 2}")
                if conversations > 1
                else api.GetSystemPromptRequest(agent_id=agent.id)
            )
            if prompt.stale or f"{edits - 1:09d}" not in prompt.text:
                raise SystemExit("a conversation's prompt was left stale by the edits")
    finally:
        await server.stop(0)
    return {
        "conversations": conversations,
        "edits": edits,
        "median_ms": round(statistics.median(times) * 1000, 1),
        "mean_ms": round(statistics.mean(times) * 1000, 1),
        "prompt_statements_per_edit": statements,
    }


async def _edit(stub: Any, agent_id: str, value: str) -> None:
    await stub.UpdateBlock(
        api.UpdateBlockRequest(
            ref=pb.BlockRef(agent_id=agent_id, label="notes"),
            block=pb.Block(value=value),
            update_mask=FieldMask(paths=["value"]),
        )
    )


def _recorder(seen: list[str]) -> Any:
    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if any(table in statement for table in _PROMPT_TABLES):
            seen.append(statement)

    return record


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--conversations", type=int, nargs="+", default=[1, 100, 1000])
    parser.add_argument("--block-chars", type=int, default=400_000)
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="strata-edit-cost-") as folder:
        for count in args.conversations:
            row = await measure(count, block_chars=args.block_chars, edits=args.edits, folder=Path(folder))
            print(json.dumps(row), flush=True)
            rows.append(row)
    report = {
        "block_chars": args.block_chars,
        "store": "sqlite",
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),  # this host is shared: read times with it
        "results": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    asyncio.run(main())
