"""Request factories the benchmarks hand to ``strata.loadtest`` (``bench.perf.requests:<name>``).

Each is a :data:`strata.loadtest.FactoryMaker`: called once per client process with the method and
JSON-ready params, it returns the function that makes each call's request.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from strata.loadtest import Method, RequestFactory, RequestSlot
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb

APPENDS_PER_AGENT = 250  # ~40 characters each: well inside a 20,000-character block
CORPUS_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def core_memory_append(method: Method, params: Mapping[str, Any]) -> RequestFactory:
    """Each worker appends to its own agents' ``human`` block, moving on every 250 appends."""
    agents: list[str] = list(params["agent_ids"])
    workers = int(params["workers"])

    def make(slot: RequestSlot) -> api.ExecuteToolRequest:
        index = (slot.worker % workers + workers * (slot.sequence // APPENDS_PER_AGENT)) % len(agents)
        arguments = {"label": "human", "content": f"Fact {slot.worker}.{slot.sequence}: prefers green tea."}
        return api.ExecuteToolRequest(
            agent_id=agents[index], tool_name="core_memory_append", arguments=json.dumps(arguments)
        )

    return make


def memory_replace(method: Method, params: Mapping[str, Any]) -> RequestFactory:
    """Each worker owns one agent and moves a counter ``[n=S]`` -> ``[n=S+1]`` (unique, so it applies)."""
    agents: list[str] = list(params["agent_ids"])

    def make(slot: RequestSlot) -> api.ExecuteToolRequest:
        old, new = f"[n={slot.sequence}]", f"[n={slot.sequence + 1}]"
        arguments = {"label": "human", "old_string": old, "new_string": new}
        return api.ExecuteToolRequest(
            agent_id=agents[slot.worker], tool_name="memory_replace", arguments=json.dumps(arguments)
        )

    return make


def search(method: Method, params: Mapping[str, Any]) -> RequestFactory:
    """Search in one mode, cycling through the queries (each worker from its own starting point)."""
    queries: list[str] = list(params["queries"])
    base = rpb.SearchRequest(
        mode=rpb.SearchMode.Value(params["mode"]),
        filter=rpb.DocumentFilter(tenant_id=params["tenant_id"], agent_ids=[params["agent_id"]]),
        top_k=int(params.get("top_k", 10)),
    )

    def make(slot: RequestSlot) -> rpb.SearchRequest:
        request = rpb.SearchRequest()
        request.CopyFrom(base)
        request.query = queries[(slot.worker * 37 + slot.sequence) % len(queries)]
        return request

    return make


def corpus_document(text: str, index: int, params: Mapping[str, Any]) -> rpb.Document:
    created = Timestamp()
    created.FromDatetime(CORPUS_EPOCH + timedelta(seconds=index))
    scope = rpb.Scope(tenant_id=params["tenant_id"], agent_id=params["agent_id"], archive_id="archive-bench")
    return rpb.Document(
        id=f"doc-{index}", text=text, kind=rpb.DOCUMENT_KIND_PASSAGE, scope=scope, created_at=created
    )


def upsert_batches(method: Method, params: Mapping[str, Any]) -> RequestFactory:
    """Batch ``issued`` of lines ``[start, end)`` of the corpus file (one document a line)."""
    texts = Path(params["corpus_file"]).read_text(encoding="utf-8").splitlines()
    batch, start, end = int(params["batch"]), int(params["start"]), int(params["end"])

    def make(slot: RequestSlot) -> rpb.UpsertDocumentsRequest:
        first = start + slot.issued * batch
        last = min(first + batch, end)
        return rpb.UpsertDocumentsRequest(
            documents=[corpus_document(texts[i], i, params) for i in range(first, last)]
        )

    return make


def append_messages(method: Method, params: Mapping[str, Any]) -> RequestFactory:
    """One two-message append to the lane's agent per call. ``request_id``: ``none`` (no id), ``new``
    (a new id each call, as the clients send) or ``repeat`` (one id every call: each call after the
    first is a retry the server answers from its record)."""
    agent_id = str(params["agent_id"])
    mode = str(params["request_id"])
    repeated = str(uuid.uuid4())

    def make(slot: RequestSlot) -> api.AppendMessagesRequest:
        request_id = {"none": "", "new": str(uuid.uuid4()), "repeat": repeated}[mode]
        texts = ("I moved to Lisbon last spring.", "Noted: you live in Lisbon.")
        if mode != "repeat":
            texts = (f"{texts[0]} ({slot.worker}.{slot.sequence})", texts[1])
        roles = (pb.MESSAGE_ROLE_USER, pb.MESSAGE_ROLE_ASSISTANT)
        messages = [pb.Message(role=role, content=text) for role, text in zip(roles, texts, strict=True)]
        return api.AppendMessagesRequest(agent_id=agent_id, messages=messages, request_id=request_id)

    return make
