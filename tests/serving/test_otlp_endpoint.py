"""``STRATA_*_OTLP_ENDPOINT`` as operators write it (issue 31 item 5): ``host:port`` without a scheme
is plaintext gRPC (the exporter's own default was TLS, so every span was lost against a plaintext
collector), ``http://`` plaintext, ``https://`` TLS. A real OTLP/gRPC receiver on a free port takes
the spans."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from strata_serving.server_tracing import otlp_exporter


class Collector(trace_service_pb2_grpc.TraceServiceServicer):
    """Keeps the names of the spans it is sent."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.received = threading.Event()

    def Export(  # noqa: N802  (the OTLP service's name)
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                self.names += [span.name for span in scope.spans]
        self.received.set()
        return trace_service_pb2.ExportTraceServiceResponse()


@pytest.fixture
def collector() -> Iterator[tuple[Collector, int]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    receiver = Collector()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(receiver, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield receiver, port
    server.stop(0)


@pytest.mark.parametrize("form", ["127.0.0.1:{port}", "http://127.0.0.1:{port}"])
def test_a_plaintext_collector_gets_the_spans(collector: tuple[Collector, int], form: str) -> None:
    receiver, port = collector
    exporter = otlp_exporter(form.format(port=port))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("exported"):
        pass
    assert receiver.received.wait(timeout=10)
    assert receiver.names == ["exported"]
    exporter.shutdown()


def test_a_scheme_it_cannot_use_is_refused_at_start_up() -> None:
    with pytest.raises(ValueError, match=r"STRATA_\*_OTLP_ENDPOINT") as refused:
        otlp_exporter("ftp://collector:4317")
    assert str(refused.value) == (
        "STRATA_*_OTLP_ENDPOINT 'ftp://collector:4317': write host:port or http://host:port (plaintext) "
        "or https://host:port (TLS)"
    )
