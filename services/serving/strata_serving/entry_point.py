"""The body of both services' ``main()``: settings from the environment, logging, tracing, serve.

A service's ``main()`` is one call, ``run_service("strata-memory", MemorySettings, serve)``: the
settings class reads the service's ``STRATA_<SERVICE>_*`` variables (a bad value stops the process
with pydantic's message before anything starts), logging and tracing are configured from them, and
``serve(settings)`` runs on a new event loop until the server stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from strata_serving.logs import configure_logging
from strata_serving.server_tracing import configure_tracing
from strata_serving.settings import ServingSettings

S = TypeVar("S", bound=ServingSettings)


def run_service(
    service_name: str, settings_class: Callable[[], S], serve: Callable[[S], Coroutine[Any, Any, None]]
) -> None:
    """Read ``settings_class()``, configure logging and tracing as it says, run ``serve`` to the end."""
    settings = settings_class()
    configure_logging(settings.log_level, json_lines=settings.log_json)
    configure_tracing(
        service_name,
        settings.tracing_exporter,
        otlp_endpoint=settings.otlp_endpoint,
        sample_ratio=settings.trace_sample_ratio,
    )
    asyncio.run(serve(settings))
