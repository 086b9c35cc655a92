"""Log lines carry the request and trace ids and a call's fields; JSON off a terminal, a console form
on one; the embedder's third-party chatter is dropped by the handler the services install."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest

from strata_serving.logs import ConsoleFormatter, JsonFormatter, QuietThirdParty, configure_logging
from strata_serving.server import GrpcServer

SERVICE = "strata.test.Logs"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
work_log = logging.getLogger("strata.test.work")


async def _work(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    work_log.warning("doing the work")
    return request


def _register(server: grpc.aio.Server) -> None:
    methods = {"Work": grpc.unary_unary_rpc_method_handler(_work)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, methods),))


@pytest.fixture
async def server() -> AsyncIterator[GrpcServer]:
    srv = GrpcServer("127.0.0.1:0", service_names=[SERVICE], register=_register)
    await srv.start()
    yield srv
    await srv.stop(0)


@pytest.fixture
def captured() -> Iterator[tuple[io.StringIO, logging.Handler]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    work_log.addHandler(handler)
    yield stream, handler
    work_log.removeHandler(handler)


@pytest.mark.parametrize("formatter", [JsonFormatter(), ConsoleFormatter()], ids=["json", "console"])
async def test_a_line_logged_inside_a_call_names_its_request_and_trace(
    server: GrpcServer, captured: tuple[io.StringIO, logging.Handler], formatter: logging.Formatter
) -> None:
    stream, handler = captured
    handler.setFormatter(formatter)
    metadata = (("x-request-id", "req-42"), ("traceparent", f"00-{TRACE_ID}-b7ad6b7169203331-01"))
    async with grpc.aio.insecure_channel(server.address) as channel:
        await channel.unary_unary(f"/{SERVICE}/Work", None, None)(b"x", metadata=metadata)
    line = stream.getvalue().strip()
    if isinstance(formatter, JsonFormatter):
        entry = json.loads(line)
        assert (entry["request_id"], entry["trace_id"], entry["msg"]) == (
            "req-42",
            TRACE_ID,
            "doing the work",
        )
    else:
        assert line.endswith(f"doing the work  [request=req-42 trace={TRACE_ID}]")


def test_onnxruntime_chatter_is_dropped_but_its_errors_are_kept() -> None:
    def record(pathname: str, level: int) -> logging.LogRecord:
        return logging.LogRecord("root", level, pathname, 1, "msg", None, None)

    quiet = QuietThirdParty()
    noisy = "/venv/lib/python3.11/site-packages/onnxruntime/quantization/quantize.py"
    assert not quiet.filter(record(noisy, logging.WARNING))
    assert quiet.filter(record(noisy, logging.ERROR))
    assert quiet.filter(record("/app/strata_retrieval/main.py", logging.INFO))


def test_a_json_line_carries_the_calls_fields_as_logged() -> None:
    record = logging.LogRecord("strata.rpc", logging.INFO, "rpc.py", 1, "call", None, None)
    record.rpc_method, record.rpc_code, record.elapsed_ms = "/strata.x/Get", "OK", 1.5
    entry = json.loads(JsonFormatter().format(record))
    assert (entry["rpc_method"], entry["rpc_code"], entry["elapsed_ms"]) == ("/strata.x/Get", "OK", 1.5)
    assert "deadline_ms" not in entry  # only the fields a line has


def test_the_installed_handler_drops_onnxruntime_chatter(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    level = root.level
    try:
        configure_logging("INFO", json_lines=True)
        noisy = "/venv/lib/python3.11/site-packages/onnxruntime/quantization/quantize.py"
        for pathname, message in ((noisy, "quantising"), ("/app/strata_retrieval/main.py", "started")):
            root.handle(logging.LogRecord("root", logging.WARNING, pathname, 1, message, None, None))
    finally:
        root.setLevel(level)
    assert [json.loads(line)["msg"] for line in stream.getvalue().splitlines()] == ["started"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "expected"), [(_Terminal(), ConsoleFormatter), (io.StringIO(), JsonFormatter)]
)
def test_the_format_follows_where_stderr_goes(
    monkeypatch: pytest.MonkeyPatch, stream: io.StringIO, expected: type[logging.Formatter]
) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr("sys.stderr", stream)
    level = root.level
    try:
        configure_logging("INFO")
        assert isinstance(root.handlers[0].formatter, expected)
    finally:
        root.setLevel(level)
