"""docs/security.md's table of limits, checked row by row against running servers.

The rows are parsed from the document (not typed here), so the table cannot drift from the code: each
row's value is what the probe sends just under and just over, and its last column is the status (and
field) the over-the-limit request must get. A row without a probe, or a probe without a row, fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.limits import channel_options
from strata_memory.settings import MemorySettings
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.settings import RetrievalSettings
from strata_serving.status import bad_request_from
from tests.security.fuzz_targets import Fuzzed, running_targets

SECURITY_MD = Path(__file__).resolve().parents[2] / "docs" / "security.md"
MARKER = "<!-- limits-table:"
_ROW = re.compile(
    r"^\| `(?P<key>[a-z_.]+)` \| (?P<what>.+) \| (?P<value>[\d,]+(?: MiB)?) \| (?P<over>.+) \|$"
)
_OVER = re.compile(r"^(?:`(?P<status>[A-Z_]+)`|(?P<tool>tool error))(?:,.*?)?(?: \(`(?P<field>[^`]+)`\))?")


@dataclass(frozen=True)
class Row:
    key: str
    value: int
    status: str
    """A gRPC status name, or "TOOL_ERROR" for a failed tool result."""
    field: str | None


def documented_rows() -> list[Row]:
    text = SECURITY_MD.read_text(encoding="utf-8")
    assert MARKER in text, "docs/security.md lost its limits table marker"
    rows: list[Row] = []
    for line in text.split(MARKER, 1)[1].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        found = _ROW.match(line)
        if found is None:
            assert line.startswith(("| key", "|---")), f"unparsed row in the limits table: {line}"
            continue
        over = _OVER.match(found["over"])
        assert over is not None, line
        number, _, unit = found["value"].partition(" ")
        value = int(number.replace(",", "")) * (1024 * 1024 if unit == "MiB" else 1)
        status = "TOOL_ERROR" if over["tool"] else over["status"]
        rows.append(Row(found["key"], value, status, over["field"]))
    return rows


ROWS = documented_rows()
TENANT = (("x-strata-tenant", "limits-table"),)
ANY_SIZE = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
"""The probes' own channels send and receive anything: only the servers' limits are under test."""


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory, security_embedder: OnnxSentenceEmbedder
) -> Iterator[Fuzzed]:
    with running_targets(tmp_path_factory.mktemp("limits"), security_embedder) as targets:
        yield targets


class Calls:
    """Blocking stubs for one row's probe, and the two ways a call can end."""

    def __init__(self, servers: Fuzzed, channels: list[grpc.Channel]) -> None:
        memory = grpc.insecure_channel(servers.memory, options=ANY_SIZE)
        retrieval = grpc.insecure_channel(servers.retrieval, options=ANY_SIZE)
        channels += [memory, retrieval]
        self.memory = memory_service_pb2_grpc.MemoryServiceStub(memory)
        self.retrieval = retrieval_pb2_grpc.RetrievalServiceStub(retrieval)

    def agent(self, **fields: object) -> pb.Agent:
        return self.memory.CreateAgent(api.CreateAgentRequest(**fields), metadata=TENANT, timeout=30)  # type: ignore[arg-type]


def served(call: Callable[..., object], request: object) -> object:
    return call(request, metadata=TENANT, timeout=300)


def refused(call: Callable[..., object], request: object, row: Row) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        _finish(call(request, metadata=TENANT, timeout=300))
    error: grpc.Call = caught.value  # type: ignore[assignment]
    assert error.code().name == row.status, f"{row.key}: {error.code()} {error.details()}"
    if row.field is not None:
        bad_request = bad_request_from(error.trailing_metadata())
        assert bad_request is not None, f"{row.key}: no BadRequest detail"
        assert [v.field for v in bad_request.field_violations] == [row.field]


def _finish(result: object) -> None:
    """Drain a server stream: its status arrives at the end."""
    if isinstance(result, Iterator):
        list(result)


Probe = Callable[[Calls, Row], None]
PROBES: dict[str, Probe] = {}


def probe(key: str) -> Callable[[Probe], Probe]:
    def register(function: Probe) -> Probe:
        PROBES[key] = function
        return function

    return register


def _message(content: str) -> pb.Message:
    return pb.Message(role=pb.MESSAGE_ROLE_USER, content=content)


@probe("memory.request_bytes")
def _memory_request_bytes(calls: Calls, row: Row) -> None:
    agent = calls.agent(agent=pb.Agent(name="bytes"))
    headroom = 1024  # the request's other fields and framing
    under = api.AppendMessagesRequest(agent_id=agent.id, messages=[_message("x" * (row.value - headroom))])
    assert under.ByteSize() < row.value
    served(calls.memory.AppendMessages, under)
    over = api.AppendMessagesRequest(agent_id=agent.id, messages=[_message("x" * row.value)])
    refused(calls.memory.AppendMessages, over, row)


def _agent_file(padding: int = 0, nesting: int = 0) -> bytes:
    """A small Agent File of one agent and one block, padded to ``padding`` bytes or with its agent's
    metadata nested so that the deepest value sits at level ``nesting``."""
    block = {"id": "block-0", "label": "human", "value": "Name: Ada", "limit": 100}
    agent: dict[str, object] = {"id": "agent-0", "name": "limits", "block_ids": ["block-0"], "messages": []}
    document: dict[str, object] = {"agents": [agent], "blocks": [block], "metadata": {"pad": ""}}
    if nesting:
        value: object = "deep"
        for _ in range(nesting - 3):  # the document, its agents array and the agent hold it
            value = {"a": value}
        agent["metadata"] = value
    data = json.dumps(document).encode()
    if padding:
        document["metadata"] = {"pad": "p" * (padding - len(data))}
        data = json.dumps(document).encode()
    return data


@probe("memory.agent_file_bytes")
def _agent_file_bytes(calls: Calls, row: Row) -> None:
    at_limit = _agent_file(padding=row.value)
    assert len(at_limit) == row.value
    served(calls.memory.ImportAgentFile, api.ImportAgentFileRequest(agent_file=at_limit))
    over = api.ImportAgentFileRequest(agent_file=_agent_file(padding=row.value + 1))
    refused(calls.memory.ImportAgentFile, over, row)


@probe("memory.agent_file_depth")
def _agent_file_depth(calls: Calls, row: Row) -> None:
    served(
        calls.memory.ImportAgentFile, api.ImportAgentFileRequest(agent_file=_agent_file(nesting=row.value))
    )
    over = api.ImportAgentFileRequest(agent_file=_agent_file(nesting=row.value + 1))
    refused(calls.memory.ImportAgentFile, over, row)


@probe("memory.page_size")
def _page_size(calls: Calls, row: Row) -> None:
    agent = calls.agent(agent=pb.Agent(name="pages"))
    for count in (row.value, 1):
        batch = [_message(f"m{i}") for i in range(count)]
        served(calls.memory.AppendMessages, api.AppendMessagesRequest(agent_id=agent.id, messages=batch))
    listed = served(
        calls.memory.ListMessages, api.ListMessagesRequest(agent_id=agent.id, page_size=row.value + 1)
    )
    assert isinstance(listed, api.ListMessagesResponse)
    assert len(listed.messages) == row.value  # clamped: one more is on the next page
    assert listed.next_page_token


@probe("memory.messages_per_append")
def _messages_per_append(calls: Calls, row: Row) -> None:
    agent = calls.agent(agent=pb.Agent(name="append"))

    def request(count: int) -> api.AppendMessagesRequest:
        return api.AppendMessagesRequest(agent_id=agent.id, messages=[_message("hi")] * count)

    served(calls.memory.AppendMessages, request(row.value))
    refused(calls.memory.AppendMessages, request(row.value + 1), row)


def _passages(calls: Calls, row: Row, make: Callable[[int], list[pb.Passage]]) -> None:
    agent = calls.agent(agent=pb.Agent(name="passages"))
    served(
        calls.memory.CreatePassages, api.CreatePassagesRequest(agent_id=agent.id, passages=make(row.value))
    )
    over = api.CreatePassagesRequest(agent_id=agent.id, passages=make(row.value + 1))
    refused(calls.memory.CreatePassages, over, row)


@probe("memory.passages_per_call")
def _passages_per_call(calls: Calls, row: Row) -> None:
    _passages(calls, row, lambda n: [pb.Passage(text=f"p{i}") for i in range(n)])


@probe("memory.passage_chars")
def _passage_chars(calls: Calls, row: Row) -> None:
    _passages(calls, row, lambda n: [pb.Passage(text="w" * n)])


@probe("memory.passage_tags")
def _passage_tags(calls: Calls, row: Row) -> None:
    _passages(calls, row, lambda n: [pb.Passage(text="t", tags=[f"tag{i}" for i in range(n)])])


@probe("memory.passage_tag_chars")
def _passage_tag_chars(calls: Calls, row: Row) -> None:
    _passages(calls, row, lambda n: [pb.Passage(text="t", tags=["g" * n])])


def _archival_search(calls: Calls, row: Row, make: Callable[[str, int], api.SearchArchivalRequest]) -> None:
    agent = calls.agent(agent=pb.Agent(name="search"))
    served(
        calls.memory.CreatePassages,
        api.CreatePassagesRequest(agent_id=agent.id, passages=[pb.Passage(text="s")]),
    )
    found = served(calls.memory.SearchArchival, make(agent.id, row.value))
    assert isinstance(found, api.SearchArchivalResponse)
    refused(calls.memory.SearchArchival, make(agent.id, row.value + 1), row)


def _sized(make: Callable[[int], Any], size: int) -> Any:
    """``make(n)`` with the ``n`` that makes the request exactly ``size`` bytes."""
    n = size
    while make(n).ByteSize() > size:
        n -= make(n).ByteSize() - size
    assert make(n).ByteSize() == size
    return make(n)


def _refused_unparsed_over(call: Callable[..., object], make: Callable[[int], Any], row: Row) -> None:
    """At ``row.value`` bytes the request is parsed (and refused for what it holds, never for its
    size); one byte more and it is refused before it is parsed."""
    with pytest.raises(grpc.RpcError) as parsed:
        served(call, _sized(make, row.value))
    assert parsed.value.code() is not grpc.StatusCode.RESOURCE_EXHAUSTED
    refused(call, _sized(make, row.value + 1), row)


@probe("memory.search_request_bytes")
def _search_request_bytes(calls: Calls, row: Row) -> None:
    agent = calls.agent(agent=pb.Agent(name="search-bytes"))
    widest = api.SearchArchivalRequest(
        agent_id=agent.id, query="\U0001f600" * 10_000, tags=["\U0001f600" * 100] * 64
    )
    assert widest.ByteSize() < row.value
    served(calls.memory.SearchArchival, widest)
    _refused_unparsed_over(
        calls.memory.SearchArchival,
        lambda n: api.SearchArchivalRequest(agent_id=agent.id, query="q", tags=["t" * n]),
        row,
    )
    refused(
        calls.memory.SearchMessages,
        _sized(lambda n: api.SearchMessagesRequest(agent_id=agent.id, query="q" * n), row.value + 1),
        row,
    )


@probe("memory.read_request_bytes")
def _read_request_bytes(calls: Calls, row: Row) -> None:
    agent = calls.agent(agent=pb.Agent(name="read-bytes"))

    def listed(n: int) -> api.ListBlocksRequest:
        return api.ListBlocksRequest(agent_id=agent.id, page_token="p" * n)

    _refused_unparsed_over(calls.memory.ListBlocks, listed, row)


@probe("memory.filter_tags")
def _filter_tags(calls: Calls, row: Row) -> None:
    _archival_search(
        calls,
        row,
        lambda a, n: api.SearchArchivalRequest(agent_id=a, query="q", tags=[f"t{i}" for i in range(n)]),
    )


@probe("memory.filter_tag_chars")
def _filter_tag_chars(calls: Calls, row: Row) -> None:
    _archival_search(
        calls, row, lambda a, n: api.SearchArchivalRequest(agent_id=a, query="q", tags=["t" * n])
    )


@probe("memory.query_chars")
def _memory_query_chars(calls: Calls, row: Row) -> None:
    """Just under is served end to end: RetrievalService accepts every query MemoryService does."""
    _archival_search(calls, row, lambda a, n: api.SearchArchivalRequest(agent_id=a, query="q" * n))


@probe("memory.search_results")
def _search_results(calls: Calls, row: Row) -> None:
    _archival_search(calls, row, lambda a, n: api.SearchArchivalRequest(agent_id=a, query="q", top_k=n))


@probe("memory.tool_filter_tags")
def _tool_filter_tags(calls: Calls, row: Row) -> None:
    agent = calls.agent(agent=pb.Agent(name="tool"))

    def run(count: int) -> api.ExecuteToolResponse:
        arguments = json.dumps({"query": "q", "tags": [f"t{i}" for i in range(count)]})
        request = api.ExecuteToolRequest(
            agent_id=agent.id, tool_name="archival_memory_search", arguments=arguments
        )
        result = served(calls.memory.ExecuteTool, request)
        assert isinstance(result, api.ExecuteToolResponse)
        return result

    assert run(row.value).ok
    over = run(row.value + 1)
    assert row.status == "TOOL_ERROR"
    assert not over.ok
    assert f"'{row.field}'" in over.text


@probe("memory.label_chars")
def _label_chars(calls: Calls, row: Row) -> None:
    agent = calls.agent(agent=pb.Agent(name="labels"))

    def request(count: int) -> api.CreateBlockRequest:
        return api.CreateBlockRequest(agent_id=agent.id, block=pb.Block(label="l" * count, value="v"))

    served(calls.memory.CreateBlock, request(row.value))
    refused(calls.memory.CreateBlock, request(row.value + 1), row)


@probe("memory.reindex_batch")
def _reindex_batch(calls: Calls, row: Row) -> None:
    agent = calls.agent(agent=pb.Agent(name="reindex"))
    progress = served(calls.memory.Reindex, api.ReindexRequest(agent_id=agent.id, batch_size=row.value))
    assert list(progress)[-1].done  # type: ignore[call-overload]
    refused(calls.memory.Reindex, api.ReindexRequest(agent_id=agent.id, batch_size=row.value + 1), row)


@probe("memory.retrieval_channel_bytes")
def _retrieval_channel_bytes(calls: Calls, row: Row) -> None:
    """Both ends of the internal channel default to the documented value, and the channel is built
    from that one setting both ways (a search answer over 4 MiB is answered end to end in
    tests/security/test_response_sizes.py)."""
    assert MemorySettings.model_fields["retrieval_max_message_bytes"].default == row.value
    assert RetrievalSettings.model_fields["max_message_bytes"].default == row.value
    assert dict(channel_options(row.value)) == {
        "grpc.max_send_message_length": row.value,
        "grpc.max_receive_message_length": row.value,
    }
    assert row.status == "RESOURCE_EXHAUSTED"


@probe("retrieval.request_bytes")
def _retrieval_request_bytes(calls: Calls, row: Row) -> None:
    """Just under is read by the service (which then judges the query: INVALID_ARGUMENT, its
    own limit); just over is refused by the transport before it is read."""
    flt = rpb.DocumentFilter(tenant_id="limits")
    with pytest.raises(grpc.RpcError) as read:
        served(calls.retrieval.Search, rpb.SearchRequest(query="q" * (row.value - 1024), filter=flt, top_k=1))
    assert read.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    refused(calls.retrieval.Search, rpb.SearchRequest(query="q" * row.value, filter=flt, top_k=1), row)


def _document(doc_id: str = "d", text: str = "t", tags: list[str] | None = None) -> rpb.Document:
    return rpb.Document(
        id=doc_id,
        text=text,
        kind=rpb.DOCUMENT_KIND_PASSAGE,
        scope=rpb.Scope(tenant_id="limits", archive_id="arc"),
        tags=tags or [],
    )


def _upserts(calls: Calls, row: Row, make: Callable[[int], list[rpb.Document]]) -> None:
    served(calls.retrieval.UpsertDocuments, rpb.UpsertDocumentsRequest(documents=make(row.value)))
    refused(calls.retrieval.UpsertDocuments, rpb.UpsertDocumentsRequest(documents=make(row.value + 1)), row)


@probe("retrieval.batch_documents")
def _batch_documents(calls: Calls, row: Row) -> None:
    _upserts(calls, row, lambda n: [_document(f"b{i}") for i in range(n)])


@probe("retrieval.text_chars")
def _text_chars(calls: Calls, row: Row) -> None:
    _upserts(calls, row, lambda n: [_document(text="w" * n)])


@probe("retrieval.id_chars")
def _id_chars(calls: Calls, row: Row) -> None:
    _upserts(calls, row, lambda n: [_document(doc_id="i" * n)])


@probe("retrieval.document_tags")
def _document_tags(calls: Calls, row: Row) -> None:
    _upserts(calls, row, lambda n: [_document(tags=[f"t{i}" for i in range(n)])])


def _searches(calls: Calls, row: Row, make: Callable[[int], rpb.SearchRequest]) -> None:
    served(calls.retrieval.Search, make(row.value))
    refused(calls.retrieval.Search, make(row.value + 1), row)


def _search(query: str = "q", top_k: int = 5, **filter_fields: object) -> rpb.SearchRequest:
    flt = rpb.DocumentFilter(tenant_id="limits", **filter_fields)  # type: ignore[arg-type]
    return rpb.SearchRequest(query=query, mode=rpb.SEARCH_MODE_HYBRID, top_k=top_k, filter=flt)


@probe("retrieval.tag_chars")
def _retrieval_tag_chars(calls: Calls, row: Row) -> None:
    _searches(calls, row, lambda n: _search(tags=["t" * n]))


@probe("retrieval.filter_tags")
def _retrieval_filter_tags(calls: Calls, row: Row) -> None:
    _searches(calls, row, lambda n: _search(tags=[f"t{i}" for i in range(n)]))


@probe("retrieval.filter_values")
def _filter_values(calls: Calls, row: Row) -> None:
    _searches(calls, row, lambda n: _search(archive_ids=[f"a{i}" for i in range(n)]))


@probe("retrieval.query_chars")
def _retrieval_query_chars(calls: Calls, row: Row) -> None:
    _searches(calls, row, lambda n: _search(query="q" * n))


@probe("retrieval.top_k")
def _top_k(calls: Calls, row: Row) -> None:
    _searches(calls, row, lambda n: _search(top_k=n))


@probe("retrieval.candidate_depth")
def _candidate_depth(calls: Calls, row: Row) -> None:
    def request(depth: int) -> rpb.SearchRequest:
        made = _search()
        made.vector_depth = depth
        return made

    _searches(calls, row, request)


@probe("retrieval.delete_ids")
def _delete_ids(calls: Calls, row: Row) -> None:
    def request(count: int) -> rpb.DeleteDocumentsRequest:
        ids = rpb.DocumentIds(tenant_id="limits", ids=[f"x{i}" for i in range(count)])
        return rpb.DeleteDocumentsRequest(ids=ids)

    served(calls.retrieval.DeleteDocuments, request(row.value))
    refused(calls.retrieval.DeleteDocuments, request(row.value + 1), row)


def test_every_row_has_a_probe_and_every_probe_a_row() -> None:
    assert len(ROWS) >= 20
    assert sorted(row.key for row in ROWS) == sorted(PROBES)


@pytest.mark.parametrize("row", ROWS, ids=[row.key for row in ROWS])
def test_the_documented_limit_holds_on_a_running_server(servers: Fuzzed, row: Row) -> None:
    channels: list[grpc.Channel] = []
    try:
        PROBES[row.key](Calls(servers, channels), row)
    finally:
        for channel in channels:
            channel.close()
