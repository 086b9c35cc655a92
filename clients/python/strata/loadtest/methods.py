"""Finding a method's request and response types, building requests, and refusing remote targets.

A method is named ``package.Service/Method`` (``/package.Service/Method`` and ghz's
``package.Service.Method`` are accepted too). Its types come from the generated modules this package
ships (both Strata services, and ``grpc.health.v1`` when grpcio-health-checking is installed); any
other method is looked up through the server's reflection service.
"""

from __future__ import annotations

import difflib
import importlib
import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message

_KNOWN_SERVICES = (
    "strata.memory.v1.MemoryService",
    "strata.retrieval.v1.RetrievalService",
    "grpc.health.v1.Health",
)
_GENERATED_MODULES = (
    "strata.memory.v1.memory_service_pb2",
    "strata.retrieval.v1.retrieval_pb2",
    "grpc_health.v1.health_pb2",
)


class LoadTestError(Exception):
    """A load test that cannot start: bad method, request, target or limits."""


@dataclass(frozen=True)
class Method:
    """One unary RPC: its wire path and message classes."""

    path: str
    request_type: type[Message]
    response_type: type[Message]

    def request_from_json(self, text: str) -> Message:
        """The request message parsed from protobuf JSON (unknown fields are an error)."""
        request = self.request_type()
        try:
            json_format.Parse(text or "{}", request)
        except json_format.ParseError as error:
            raise LoadTestError(f"request JSON for {self.path}: {error}") from None
        return request

    def serializer(self) -> Callable[[Message], bytes]:
        return lambda message: message.SerializeToString()

    def deserializer(self) -> Callable[[bytes], Message]:
        return self.response_type.FromString


def split_method_name(name: str) -> tuple[str, str]:
    """``(service full name, method name)`` from any of the accepted spellings."""
    cleaned = name.strip().lstrip("/")
    service, slash, method = cleaned.rpartition("/")
    if not slash:
        service, _, method = cleaned.rpartition(".")
    if not service or not method:
        raise LoadTestError(f"name the method as package.Service/Method, got {name!r}")
    return service, method


def _load_generated_modules() -> None:
    for module in _GENERATED_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:  # an optional package (grpcio-health-checking) is absent
            continue


def _from_pool(pool: descriptor_pool.DescriptorPool, service: str, method: str) -> MethodDescriptor | None:
    try:
        return pool.FindServiceByName(service).FindMethodByName(method)
    except KeyError:
        return None


def _did_you_mean(service: str, method: str) -> str:
    """``; did you mean pkg.Service/Method?`` naming the closest method of the services the CLI
    knows without a server (Strata's and gRPC health), case aside, or ``""`` when none is close."""
    known: dict[str, str] = {}
    for name in _KNOWN_SERVICES:
        try:
            found = descriptor_pool.Default().FindServiceByName(name)
        except KeyError:  # grpcio-health-checking absent
            continue
        known |= {f"{name}/{m.name}".lower(): f"{name}/{m.name}" for m in found.methods}
    close = difflib.get_close_matches(f"{service}/{method}".lower(), list(known), n=1, cutoff=0.8)
    return f"; did you mean {known[close[0]]}?" if close else ""


def _from_reflection(channel: grpc.Channel, target: str, service: str) -> descriptor_pool.DescriptorPool:
    try:
        from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
            ProtoReflectionDescriptorDatabase,
        )
    except ImportError:
        raise LoadTestError(f"{service} is not a known service and grpcio-reflection is absent") from None
    try:
        pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
        pool.FindServiceByName(service)
    except (KeyError, grpc.RpcError) as error:
        raise LoadTestError(f"{target} does not describe {service} through reflection: {error}") from None
    finally:
        channel.close()
    return pool


def resolve_method(
    name: str, target: str | None = None, channel: Callable[[], grpc.Channel] | None = None
) -> Method:
    """The method ``name``: from the generated modules, else through ``target``'s reflection (over
    ``channel()`` when given, a plaintext channel otherwise)."""
    service, method = split_method_name(name)
    _load_generated_modules()
    found = _from_pool(descriptor_pool.Default(), service, method)
    if found is None and target is not None:
        opened = channel() if channel is not None else grpc.insecure_channel(target)
        try:
            found = _from_pool(_from_reflection(opened, target, service), service, method)
        except LoadTestError as unknown:
            raise LoadTestError(f"{unknown}{_did_you_mean(service, method)}") from None
    if found is None:
        raise LoadTestError(f"unknown method {service}/{method}{_did_you_mean(service, method)}")
    if found.client_streaming or found.server_streaming:
        raise LoadTestError(f"{service}/{method} is a streaming method; only unary calls are load-tested")
    return Method(
        path=f"/{service}/{method}",
        request_type=message_factory.GetMessageClass(found.input_type),
        response_type=message_factory.GetMessageClass(found.output_type),
    )


def host_and_port(target: str) -> tuple[str, int]:
    address = target.removeprefix("dns:///").removeprefix("ipv4:").removeprefix("ipv6:")
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, sep, port = address.rpartition(":")
        if not sep:
            port = ""
    if not port.isdigit():
        raise LoadTestError(f"target must be HOST:PORT, got {target!r}")
    return host, int(port)


def _host_of(target: str) -> str:
    return host_and_port(target)[0]


def check_loopback(target: str) -> str:
    """Return ``target`` if every address it resolves to is a loopback address; refuse it otherwise.

    A load test floods its target, so it may only aim at this machine. Unix sockets are local too.
    """
    if target.startswith("unix:"):
        return target
    host = _host_of(target)
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as error:
        raise LoadTestError(f"cannot resolve {host!r}: {error.strerror}") from None
    addresses = {str(info[4][0]).split("%", 1)[0] for info in infos}
    remote = sorted(a for a in addresses if not ipaddress.ip_address(a).is_loopback)
    if not addresses or remote:
        raise LoadTestError(f"refusing {target}: load tests target loopback only (it resolves to {remote})")
    return target


def describe(message: Message) -> dict[str, Any]:
    """A message as a JSON-ready dict (for reports and error messages)."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True)
