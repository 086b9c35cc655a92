"""Serve the console with uvicorn (``strata console``)."""

from __future__ import annotations

import sys

import uvicorn

from strata.console.app import create_app
from strata.console.settings import ConsoleSettings


def serve(settings: ConsoleSettings) -> None:
    """Serve until interrupted (SIGINT/SIGTERM end it gracefully)."""
    sys.stderr.write(f"strata console: open http://{settings.host}:{settings.port}\n")
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")
