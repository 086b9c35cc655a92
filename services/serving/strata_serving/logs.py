"""Logs a person and a collector can read: JSON lines for machines, a short console form on a
terminal, the request id and trace id on every line, and third-party noise kept out.

``json_lines=None`` chooses by where stderr goes: a terminal (``make run``) gets the console form,
anything else (a container, a file, a pipe) JSON. Either way one record is one line: control
characters in a message (CR, LF, ESC, NUL, DEL, C1) are written escaped (``\\n``, ``\\x1b``), so text
that reached a message from a caller can neither forge a line nor drive a terminal.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from strata_serving.propagation import request_id_var
from strata_serving.tracing import current_trace_id

_EXTRA_FIELDS = ("rpc_method", "rpc_code", "elapsed_ms", "deadline_ms")
_NOISY_PACKAGES = ("/onnxruntime/", "/onnx/")
"""Libraries that log through the root logger (onnxruntime's quantiser prints dozens of lines on a
first start); their lines below ERROR are dropped."""


_CONTROL = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))} | {
    0x0A: "\\n",
    0x0D: "\\r",
    0x09: "\\t",
}


_JSON_CONTROL = {code: f"\\u{code:04x}" for code in range(0x7F, 0xA0)}
"""What ``json.dumps`` leaves raw (it escapes C0 itself), as JSON escapes."""


def escape_controls(text: str) -> str:
    """``text`` with every C0, DEL and C1 control character written as an escape."""
    return text.translate(_CONTROL)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "request_id": request_id_var.get(),
        }
        trace_id = current_trace_id()
        if trace_id is not None:
            entry["trace_id"] = trace_id
        for field in _EXTRA_FIELDS:
            if hasattr(record, field):
                entry[field] = getattr(record, field)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False).translate(_JSON_CONTROL)


class ConsoleFormatter(logging.Formatter):
    """``12:01:02.345 INFO  strata.rpc  message  [request=… trace=…]`` (ids only inside a call)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created).strftime("%H:%M:%S.%f")[:-3]
        line = f"{stamp} {record.levelname:<5} {record.name:<16} {escape_controls(record.getMessage())}"
        ids = []
        request_id = request_id_var.get()
        if request_id != "-" and f"request_id={request_id}" not in line:
            ids.append(f"request={request_id}")
        trace_id = current_trace_id()
        if trace_id is not None:
            ids.append(f"trace={trace_id}")
        if ids:
            line += f"  [{' '.join(ids)}]"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class QuietThirdParty(logging.Filter):
    """Drops routine lines that libraries log through the root logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        noisy = any(package in record.pathname for package in _NOISY_PACKAGES)
        return not noisy or record.levelno >= logging.ERROR


def configure_logging(level: str = "INFO", *, json_lines: bool | None = None) -> None:
    """Route every logger to stderr: JSON lines, or the console form (None: console on a terminal)."""
    if json_lines is None:
        json_lines = not sys.stderr.isatty()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else ConsoleFormatter())
    handler.addFilter(QuietThirdParty())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
