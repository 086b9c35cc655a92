"""Naming methods, finding their types, building requests, refusing non-loopback targets."""

from __future__ import annotations

import pytest

from strata.loadtest import LoadTestError, check_loopback, resolve_method
from strata.loadtest.methods import split_method_name
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2


@pytest.mark.parametrize(
    "name",
    [
        "strata.memory.v1.MemoryService/GetBlock",
        "/strata.memory.v1.MemoryService/GetBlock",
        "strata.memory.v1.MemoryService.GetBlock",
    ],
)
def test_every_spelling_names_the_same_method(name: str) -> None:
    assert split_method_name(name) == ("strata.memory.v1.MemoryService", "GetBlock")
    method = resolve_method(name)
    assert method.path == "/strata.memory.v1.MemoryService/GetBlock"
    assert method.request_type is api.GetBlockRequest
    assert method.response_type is pb.Block


def test_both_services_and_health_are_known_without_a_server() -> None:
    search = resolve_method("strata.retrieval.v1.RetrievalService/Search")
    assert search.request_type is retrieval_pb2.SearchRequest
    health = resolve_method("grpc.health.v1.Health/Check")
    assert health.request_type.DESCRIPTOR.full_name == "grpc.health.v1.HealthCheckRequest"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("GetBlock", "package.Service/Method"),
        ("strata.memory.v1.MemoryService/NoSuchMethod", "unknown method"),
        ("no.such.Service/Call", "unknown method"),
        ("strata.memory.v1.MemoryService/Reindex", "streaming"),
    ],
)
def test_unusable_methods_are_refused(name: str, reason: str) -> None:
    with pytest.raises(LoadTestError, match=reason):
        resolve_method(name)


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("strata.memory.v1.MemoryService/GetBlok", "strata.memory.v1.MemoryService/GetBlock"),
        ("strata.memory.v1.MemorySrvice/GetBlock", "strata.memory.v1.MemoryService/GetBlock"),
        ("strata.retrieval.v1.RetrievalService/search", "strata.retrieval.v1.RetrievalService/Search"),
        ("grpc.health.v1.Health/check", "grpc.health.v1.Health/Check"),
    ],
)
def test_a_mistyped_method_gets_a_did_you_mean(name: str, meant: str) -> None:
    with pytest.raises(LoadTestError, match=f"did you mean {meant}\\?"):
        resolve_method(name)


def test_request_json_is_parsed_into_the_request_type() -> None:
    method = resolve_method("strata.memory.v1.MemoryService/GetBlock")
    request = method.request_from_json('{"block": {"agent_id": "agent-1", "label": "human"}}')
    assert request == api.GetBlockRequest(block=pb.BlockRef(agent_id="agent-1", label="human"))
    assert method.request_from_json("") == api.GetBlockRequest()


@pytest.mark.parametrize("text", ['{"no_such_field": 1}', "{not json", '{"block": 3}'])
def test_bad_request_json_is_a_load_test_error(text: str) -> None:
    method = resolve_method("strata.memory.v1.MemoryService/GetBlock")
    with pytest.raises(LoadTestError, match="request JSON"):
        method.request_from_json(text)


@pytest.mark.parametrize(
    "target", ["127.0.0.1:50051", "localhost:50051", "[::1]:50051", "127.0.0.9:1", "unix:/tmp/strata.sock"]
)
def test_loopback_targets_are_accepted(target: str) -> None:
    assert check_loopback(target) == target


@pytest.mark.parametrize("target", ["10.0.0.1:50051", "8.8.8.8:443", "[2001:db8::1]:50051", "0.0.0.0:50051"])
def test_other_targets_are_refused(target: str) -> None:
    with pytest.raises(LoadTestError, match="loopback only"):
        check_loopback(target)


@pytest.mark.parametrize("target", ["127.0.0.1", "127.0.0.1:port", "no-such-host.invalid:1"])
def test_malformed_or_unresolvable_targets_are_refused(target: str) -> None:
    with pytest.raises(LoadTestError):
        check_loopback(target)
