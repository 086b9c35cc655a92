"""Structured logging: one JSON object per line on stderr, with the current request id."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from strata_serving.interceptors import request_id_var

_EXTRA_FIELDS = ("rpc_method", "rpc_code", "elapsed_ms", "deadline_ms")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "request_id": request_id_var.get(),
        }
        for field in _EXTRA_FIELDS:
            if hasattr(record, field):
                entry[field] = getattr(record, field)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str = "INFO", *, json_lines: bool = True) -> None:
    """Route every logger to stderr, as JSON lines (or plain text for local reading)."""
    handler = logging.StreamHandler(sys.stderr)
    plain = logging.Formatter("%(levelname)s %(name)s %(message)s")
    handler.setFormatter(JsonFormatter() if json_lines else plain)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
